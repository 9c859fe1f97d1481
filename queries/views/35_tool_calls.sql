-- tool_calls: one row per executed tool call, in order within its trace (call_index: start time, then
-- span id, a stable tie-break). Nested spans of one call (framework -> MCP client -> server) are one
-- call (see call_spans): ids, name, timing and status come from the outermost span; arguments, result
-- and error from the outermost span that has them.
-- A call a model asked for that no span executed is not here: see tool_call_gaps and steps.
CREATE OR REPLACE VIEW tool_calls AS
WITH single AS (
    -- most calls are one span: no aggregation needed
    SELECT trace_id, span_id, 1 AS span_count, parent_span_id, tool_name AS outer_tool_name,
           tool_name AS any_tool_name, tool_call_id, agent_name, tool_args, tool_result, tool_effect, tool_args_hash,
           error_type, status_code, status_code = 'error' AS any_error_status, retry_after_ms, retryable,
           idempotency_key, http_status_code, start_time, end_time, duration_ms
    FROM call_spans
    WHERE kind = 'tool' AND call_depth = 0 AND nested_span_count = 0
),
nested AS (
    SELECT
        trace_id,
        call_span_id AS span_id,
        count(*) AS span_count,
        max(parent_span_id) FILTER (WHERE call_depth = 0) AS parent_span_id,
        max(tool_name) FILTER (WHERE call_depth = 0) AS outer_tool_name,
        min_by(tool_name, call_depth) FILTER (WHERE tool_name IS NOT NULL) AS any_tool_name,
        min_by(tool_call_id, call_depth) FILTER (WHERE tool_call_id IS NOT NULL) AS tool_call_id,
        min_by(agent_name, call_depth) FILTER (WHERE agent_name IS NOT NULL) AS agent_name,
        min_by(tool_args, call_depth) FILTER (WHERE tool_args IS NOT NULL) AS tool_args,
        min_by(tool_result, call_depth) FILTER (WHERE tool_result IS NOT NULL) AS tool_result,
        min_by(tool_effect, call_depth) FILTER (WHERE tool_effect IS NOT NULL) AS tool_effect,
        min_by(tool_args_hash, call_depth) FILTER (WHERE tool_args_hash IS NOT NULL) AS tool_args_hash,
        min_by(error_type, call_depth) FILTER (WHERE error_type IS NOT NULL) AS error_type,
        max(status_code) FILTER (WHERE call_depth = 0) AS status_code,
        max(status_code = 'error') AS any_error_status,
        max(retry_after_ms) AS retry_after_ms,
        max(retryable) AS retryable,
        min_by(idempotency_key, call_depth) FILTER (WHERE idempotency_key IS NOT NULL) AS idempotency_key,
        max(http_status_code) AS http_status_code,
        max(start_time) FILTER (WHERE call_depth = 0) AS start_time,
        max(end_time) FILTER (WHERE call_depth = 0) AS end_time,
        max(duration_ms) FILTER (WHERE call_depth = 0) AS duration_ms
    FROM call_spans
    WHERE kind = 'tool' AND EXISTS (
        SELECT 1 FROM call_spans AS root
        WHERE root.nested_span_count > 0 AND root.kind = 'tool'
          AND root.trace_id = call_spans.trace_id AND root.span_id = call_spans.call_span_id
    )
    GROUP BY trace_id, call_span_id
),
calls AS (
    SELECT * FROM single
    UNION ALL
    SELECT * FROM nested
)
SELECT
    c.trace_id,
    c.span_id,
    c.parent_span_id,
    a.session_id,
    a.run_id,
    a.task_id,
    a.attempt,
    a.variant,
    row_number() OVER (PARTITION BY c.trace_id ORDER BY c.start_time, c.span_id) AS call_index,
    coalesce(c.outer_tool_name, c.any_tool_name) AS tool_name,
    c.tool_call_id,
    c.agent_name,
    c.tool_args,
    c.tool_result,
    c.tool_effect,
    c.tool_args_hash,
    c.error_type,
    c.status_code,
    (c.error_type IS NOT NULL OR c.any_error_status) AS is_error,
    c.http_status_code,
    c.retry_after_ms,
    c.retryable,
    c.idempotency_key,
    c.span_count,
    c.start_time,
    c.end_time,
    c.duration_ms
FROM calls AS c
JOIN attempts AS a ON a.trace_id = c.trace_id;
