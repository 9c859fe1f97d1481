-- How requests are matched to executed calls (an include of requested_tool_calls and tool_call_gaps), over
-- `req` and the including view's `exe` (the executed calls): by tool call id (`by_id`), then the n-th
-- unmatched request for a tool to its n-th unmatched execution (`req_rest`, `exe_rest`: their ordinals).
by_id AS (
    SELECT r.trace_id, r.request_index, min(e.span_id) AS span_id
    FROM req AS r
    JOIN exe AS e ON e.trace_id = r.trace_id AND e.tool_call_id = r.tool_call_id
    GROUP BY r.trace_id, r.request_index
),
req_rest AS (
    SELECT r.*,
           row_number() OVER (PARTITION BY r.trace_id, r.tool_name ORDER BY r.request_index) AS name_ordinal
    FROM req AS r
    WHERE NOT EXISTS (SELECT 1 FROM by_id AS b WHERE b.trace_id = r.trace_id AND b.request_index = r.request_index)
),
exe_rest AS (
    SELECT e.trace_id, e.span_id, e.tool_name,
           row_number() OVER (PARTITION BY e.trace_id, e.tool_name ORDER BY e.start_time, e.span_id) AS name_ordinal
    FROM exe AS e
    WHERE NOT EXISTS (SELECT 1 FROM by_id AS b WHERE b.trace_id = e.trace_id AND b.span_id = e.span_id)
)
