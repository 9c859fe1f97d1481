-- trajectories: one row per trace; its tool calls in order, with counts and tokens.
CREATE OR REPLACE VIEW trajectories AS
SELECT
    a.trace_id,
    a.session_id,
    a.run_id,
    a.task_id,
    a.attempt,
    a.variant,
    t.tools,
    coalesce(t.tool_call_count, 0) AS tool_call_count,
    coalesce(t.tool_error_count, 0) AS tool_error_count,
    coalesce(m.model_call_count, 0) AS model_call_count,
    coalesce(m.input_tokens, 0) AS input_tokens,
    coalesce(m.output_tokens, 0) AS output_tokens,
    a.start_time,
    a.end_time,
    date_diff('millisecond', a.start_time, a.end_time) AS duration_ms
FROM attempts AS a
LEFT JOIN (
    SELECT
        trace_id,
        array_agg(tool_name ORDER BY call_index) AS tools,
        count(*) AS tool_call_count,
        count(error_type) AS tool_error_count
    FROM tool_calls
    GROUP BY trace_id
) AS t ON t.trace_id = a.trace_id
LEFT JOIN (
    SELECT trace_id, count(*) AS model_call_count, sum(input_tokens) AS input_tokens,
           sum(output_tokens) AS output_tokens
    FROM model_calls
    GROUP BY trace_id
) AS m ON m.trace_id = a.trace_id;
