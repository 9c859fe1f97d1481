-- trajectories: one row per trace; its steps in order (model calls, tool calls, gaps) with tool names,
-- arguments, results and status, plus counts and tokens.
--   tools          executed tool names in call order (gaps are not executed: see steps / gap_count)
--   steps          list of {step_index, kind, name, args, result, status, error_type, is_gap, span_id}
--   root_ended     the trace's root span is present and ended
--   status         error (the root failed) | ok | open (root missing or not ended)
CREATE OR REPLACE VIEW trajectories AS
WITH per_trace AS (
    SELECT
        trace_id,
        list(
            struct_pack(
                step_index := step_index, kind := step_kind, name := name, args := args, result := result,
                status := status, error_type := error_type, is_gap := is_gap, span_id := span_id
            )
            ORDER BY step_index
        ) AS steps,
        list(name ORDER BY step_index) FILTER (WHERE step_kind = 'tool' AND NOT is_gap) AS tools,
        count(*) FILTER (WHERE step_kind = 'tool' AND NOT is_gap) AS tool_call_count,
        count(*) FILTER (WHERE step_kind = 'tool' AND is_error) AS tool_error_count,
        count(*) FILTER (WHERE is_gap) AS gap_count,
        count(*) FILTER (WHERE step_kind = 'llm') AS model_call_count,
        sum(input_tokens) AS input_tokens,
        sum(output_tokens) AS output_tokens,
        sum(cost_usd) AS cost_usd
    FROM steps
    GROUP BY trace_id
)
SELECT
    a.trace_id,
    a.session_id,
    a.run_id,
    a.task_id,
    a.attempt,
    a.variant,
    t.tools,
    coalesce(t.steps, []) AS steps,
    coalesce(t.tool_call_count, 0) AS tool_call_count,
    coalesce(t.tool_error_count, 0) AS tool_error_count,
    coalesce(t.gap_count, 0) AS gap_count,
    coalesce(t.model_call_count, 0) AS model_call_count,
    coalesce(t.input_tokens, 0) AS input_tokens,
    coalesce(t.output_tokens, 0) AS output_tokens,
    coalesce(t.cost_usd, 0) AS cost_usd,
    a.handoff_count,
    a.has_session_end,
    (a.root_span_id IS NOT NULL AND a.root_end_time IS NOT NULL) AS root_ended,
    CASE
        WHEN a.root_error_type IS NOT NULL OR a.root_status_code = 'error' THEN 'error'
        WHEN a.root_span_id IS NULL OR a.root_end_time IS NULL THEN 'open'
        ELSE 'ok'
    END AS status,
    a.root_error_type AS error_type,
    a.start_time,
    a.end_time,
    date_diff('millisecond', a.start_time, a.end_time) AS duration_ms
FROM attempts AS a
LEFT JOIN per_trace AS t ON t.trace_id = a.trace_id;
