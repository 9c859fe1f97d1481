-- tool_calls: one row per executed tool call, in order within its trace.
-- A tool span directly beneath another tool span (framework -> MCP client -> server) is the same
-- call seen twice: only the outermost one counts. Order: start time, then span id (a stable tie-break).
CREATE OR REPLACE VIEW tool_calls AS
SELECT
    s.trace_id,
    s.span_id,
    a.session_id,
    a.run_id,
    a.task_id,
    a.attempt,
    a.variant,
    row_number() OVER (PARTITION BY s.trace_id ORDER BY s.start_time, s.span_id) AS call_index,
    s.tool_name,
    s.tool_call_id,
    s.tool_args,
    s.tool_result,
    s.tool_effect,
    s.tool_args_hash,
    s.error_type,
    s.status_code,
    CAST(json_extract(s.attributes, '$."tracevals.retry_after_ms"') AS DOUBLE) AS retry_after_ms,
    json_extract_string(s.attributes, '$."tracevals.idempotency_key"') AS idempotency_key,
    s.start_time,
    s.end_time,
    s.duration_ms
FROM spans AS s
JOIN attempts AS a ON a.trace_id = s.trace_id
LEFT JOIN spans AS p ON p.trace_id = s.trace_id AND p.span_id = s.parent_span_id AND p.kind = 'tool'
WHERE s.kind = 'tool' AND p.span_id IS NULL;
