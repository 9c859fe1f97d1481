-- trajectories: one row per trace; its steps in order (model calls, tool calls, gaps) with tool names,
-- arguments, results and status, plus counts and tokens.
--   tools          executed tool names in call order (gaps are not executed: see steps / gap_count)
--   steps          list of {start_time, span_id, kind, name, args, result, status, error_type, is_gap},
--                  in step order (the position in the list is the steps view's step_index)
--   root_ended     the trace's root span is present and ended
--   status         error (the root failed) | ok | open (root missing or not ended)
-- A trace of session-end markers only (`tracevals.end_session()` after the session, in a trace of its
-- own) is no trajectory: the session's `sessions` row carries its marker.
-- Nor is a framework's set-up (attempts.is_setup: a `create_agent` trace, no model or tool call, no agent run).
CREATE OR REPLACE VIEW trajectories AS
WITH per_trace AS (
    -- Ordered by the steps view's rule (start time, then span id) without its step_index: list_sort of
    -- structs that begin with those two fields sorts each trace's few steps, where an ordered aggregate
    -- or numbering all steps first would sort millions of rows. A gap (no span) sorts after a step that
    -- started at the same instant.
    SELECT
        trace_id,
        list_sort(list(
            struct_pack(
                start_time := start_time, span_id := span_id, kind := step_kind, name := name, args := args,
                result := result, status := status, error_type := error_type, is_gap := is_gap
            )
        )) AS steps,
        count(*) FILTER (WHERE step_kind = 'tool' AND NOT is_gap) AS tool_call_count,
        count(*) FILTER (WHERE step_kind = 'tool' AND is_error) AS tool_error_count,
        count(*) FILTER (WHERE is_gap) AS gap_count,
        count(*) FILTER (WHERE step_kind = 'llm') AS model_call_count,
        CAST(sum(input_tokens) AS BIGINT) AS input_tokens,
        CAST(sum(output_tokens) AS BIGINT) AS output_tokens,
        CAST(sum(CAST(cost_usd AS DECIMAL(38, 15))) AS DOUBLE) AS cost_usd  -- exact: the same in any order
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
    list_transform(list_filter(coalesce(t.steps, []), lambda s: s.kind = 'tool' AND NOT s.is_gap), lambda s: s.name)
        AS tools,
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
    a.status,
    a.root_error_type AS error_type,
    a.start_time,
    a.end_time,
    date_diff('microsecond', a.start_time, a.end_time) / 1000.0 AS duration_ms
FROM attempts AS a
LEFT JOIN per_trace AS t ON t.trace_id = a.trace_id
WHERE NOT a.is_end_marker AND NOT a.is_setup;
