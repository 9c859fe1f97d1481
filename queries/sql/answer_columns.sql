-- Whether a tool-call request was answered, and what the answer said (an include of requested_tool_calls and
-- tool_call_gaps). `w`: the request's row of the including view's `answers` (the conversation's tool message,
-- when content was captured), `k`: of its `answered_ids` (the ids a later model request said it carried results
-- for: tracevals.tool_results.ids, recorded whatever the capture setting); both joined by trace and call id. `p`:
-- its row of `by_place` (a tool message that names no call, answering by its place: `answers_by_place`), joined by
-- trace and request index.
(w.tool_call_id IS NOT NULL OR k.tool_call_id IS NOT NULL OR p.request_index IS NOT NULL) AS answered,
    coalesce(w.tool_response, p.tool_response) AS answer
