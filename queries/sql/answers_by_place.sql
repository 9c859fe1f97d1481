-- Tool messages that name no call they answer (an include of requested_tool_calls and tool_call_gaps, over `parts`,
-- `model` and `listed`, the requests): an instrumentation that kept neither an answer's id nor, in the history, the
-- calls of the assistant message before it (OpenInference's Haystack records a tool message as its role alone). A
-- model call's history repeats the conversation so far, the answers after the calls they answer: its last run of
-- such messages (consecutive ones) answers the requests of the latest model call of its trace that made requests and
-- ended before it started, the k-th message the k-th request, in the order asked, when the run comes after every
-- tool message of that call's own history. An earlier run was the last of an earlier call's history. One row per
-- request answered: `by_place` (trace_id, request_index, tool_response).
by_place AS (
    WITH anonymous AS (
        SELECT trace_id, call_span_id, message_index, part_index, tool_response,
               message_index - row_number() OVER (
                   PARTITION BY trace_id, call_span_id ORDER BY message_index, part_index
               ) AS run
        FROM parts
        WHERE direction = 'input' AND part_type = 'tool_call_response' AND tool_call_id IS NULL
    ),
    last_run AS (
        SELECT trace_id, call_span_id, tool_response,
               row_number() OVER (PARTITION BY trace_id, call_span_id ORDER BY message_index, part_index) AS nth,
               min(message_index) OVER (PARTITION BY trace_id, call_span_id) AS first_at
        FROM (SELECT *, max(run) OVER (PARTITION BY trace_id, call_span_id) AS last FROM anonymous) AS runs
        WHERE run = last
    ),
    seen AS (
        -- how far each model call's own history held tool messages: a run no later than that answered an earlier
        -- call (a previous turn's, repeated), not this one's requests (a call made again with the same history)
        SELECT trace_id, call_span_id, max(message_index) AS last_seen
        FROM parts
        WHERE direction = 'input' AND trace_id IN (SELECT trace_id FROM anonymous)
        GROUP BY trace_id, call_span_id
    ),
    asking AS (
        SELECT DISTINCT trace_id, model_span_id, model_end_time FROM listed
        WHERE trace_id IN (SELECT trace_id FROM anonymous)
    ),
    asker AS (
        -- each answering call, when it started, and the call it answers
        SELECT h.trace_id, h.call_span_id, c.start_time,
               max_by(q.model_span_id, (q.model_end_time, q.model_span_id)) AS asked_by
        FROM (SELECT DISTINCT trace_id, call_span_id FROM anonymous) AS h
        JOIN model AS c ON c.trace_id = h.trace_id AND c.span_id = h.call_span_id
        JOIN asking AS q ON q.trace_id = h.trace_id AND q.model_end_time <= c.start_time
        GROUP BY h.trace_id, h.call_span_id, c.start_time
    ),
    asked AS (
        SELECT trace_id, model_span_id, request_index,
               row_number() OVER (PARTITION BY trace_id, model_span_id ORDER BY message_order, part_order) AS nth
        FROM listed
        WHERE trace_id IN (SELECT trace_id FROM anonymous)
    )
    -- the first history that answers a request speaks for it (every later one repeats it)
    SELECT q.trace_id, q.request_index, min_by(l.tool_response, a.start_time) AS tool_response
    FROM asker AS a
    JOIN last_run AS l ON l.trace_id = a.trace_id AND l.call_span_id = a.call_span_id
    JOIN asked AS q ON q.trace_id = a.trace_id AND q.model_span_id = a.asked_by AND q.nth = l.nth
    LEFT JOIN seen AS s ON s.trace_id = a.trace_id AND s.call_span_id = a.asked_by
    WHERE l.first_at > coalesce(s.last_seen, -1)
    GROUP BY q.trace_id, q.request_index
)
