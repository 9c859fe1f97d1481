-- steps: model calls and tool calls of each trace in one ordered list.
CREATE OR REPLACE VIEW steps AS
SELECT
    u.*,
    row_number() OVER (PARTITION BY u.trace_id ORDER BY u.start_time, u.span_id) AS step_index
FROM (
    SELECT trace_id, span_id, session_id, run_id, task_id, attempt, variant,
           'llm' AS step_kind, model AS name, error_type, start_time, end_time, duration_ms,
           input_tokens, output_tokens
    FROM model_calls
    UNION ALL
    SELECT trace_id, span_id, session_id, run_id, task_id, attempt, variant,
           'tool' AS step_kind, tool_name AS name, error_type, start_time, end_time, duration_ms,
           NULL AS input_tokens, NULL AS output_tokens
    FROM tool_calls
) AS u;
