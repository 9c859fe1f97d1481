-- requested_tool_calls: every tool call a model response asked for (a tool_call part of its output,
-- else tracevals.tool_calls.ids / .names when the messages were not captured), matched to the tool call
-- that executed it. A request is matched by its tool call id when an executed call in the same trace
-- carries that id; otherwise the n-th unmatched request for a tool is matched to the n-th unmatched
-- execution of that tool, in order (frameworks such as ADK give the request and the execution different
-- ids). A request that nothing executed is a gap (is_gap). `answered`: a tool message of the conversation
-- answers the request (by its id): the call ran, whether or not a span recorded it (a loop that traces only its
-- model calls); `answer`: what that message said.
-- request_index orders requests in their trace: model call start, then message and part order.
-- A CTE named more than once is MATERIALIZED: computed once (left unmarked, DuckDB may write a simple one
-- out at each name, and the views it reads with it), and counted once by `materialize.scans`.
CREATE OR REPLACE VIEW requested_tool_calls AS
WITH model AS MATERIALIZED (
    SELECT trace_id, span_id, call_span_id, start_time, end_time, requested_tool_call_ids, requested_tool_names
    FROM span_facts
    WHERE kind = 'llm'
),
/*@ include(request_parts) @*/,
answer_parts AS (
    SELECT * FROM parts WHERE direction = 'input' AND part_type = 'tool_call_response' AND tool_call_id IS NOT NULL
),
answers AS (/*@ include(tool_answer_rows) @*/),
answered_ids AS (
    SELECT DISTINCT trace_id, unnest(answered_tool_call_ids) AS tool_call_id
    FROM span_facts
    WHERE kind = 'llm' AND len(answered_tool_call_ids) > 0
),
/*@ include(request_rows) @*/,
/*@ include(answers_by_place) @*/,
exe AS MATERIALIZED (
    SELECT trace_id, span_id, tool_call_id, tool_name, start_time FROM tool_calls
),
/*@ include(request_matching) @*/,
by_order AS (
    SELECT r.trace_id, r.request_index, e.span_id
    FROM req_rest AS r
    JOIN exe_rest AS e ON e.trace_id = r.trace_id AND e.tool_name = r.tool_name AND e.name_ordinal = r.name_ordinal
)
SELECT
    /*@ include(request_columns) @*/,
    coalesce(b.span_id, o.span_id) AS executed_span_id,
    CASE WHEN b.span_id IS NOT NULL THEN 'id' WHEN o.span_id IS NOT NULL THEN 'order' END AS matched_by,
    (b.span_id IS NULL AND o.span_id IS NULL) AS is_gap,
    /*@ include(answer_columns) @*/
FROM req AS r
JOIN attempts AS a ON a.trace_id = r.trace_id
LEFT JOIN answers AS w ON w.trace_id = r.trace_id AND w.tool_call_id = r.tool_call_id
LEFT JOIN answered_ids AS k ON k.trace_id = r.trace_id AND k.tool_call_id = r.tool_call_id
LEFT JOIN by_place AS p ON p.trace_id = r.trace_id AND p.request_index = r.request_index
LEFT JOIN by_id AS b ON b.trace_id = r.trace_id AND b.request_index = r.request_index
LEFT JOIN by_order AS o ON o.trace_id = r.trace_id AND o.request_index = r.request_index;
