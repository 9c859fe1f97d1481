-- runs: one row per harness attempt (a trace whose root carries tracevals.run.id), with the
-- attempt's output and error as the harness recorded them.
CREATE OR REPLACE VIEW runs AS
SELECT
    s.trace_id,
    a.session_id,
    s.run_id,
    s.task_id,
    s.attempt,
    s.variant,
    json_extract_string(s.attributes, '$."tracevals.commit"') AS commit_hash,
    json_extract_string(s.attributes, '$."tracevals.lock_hash"') AS lock_hash,
    json_extract_string(s.attributes, '$."tracevals.attempt.output"') AS output,
    json_extract_string(s.attributes, '$."tracevals.attempt.error"') AS error,
    s.error_type,
    s.status_code,
    s.start_time,
    s.end_time,
    s.duration_ms
FROM spans AS s
JOIN attempts AS a ON a.trace_id = s.trace_id
WHERE s.parent_span_id IS NULL AND s.run_id IS NOT NULL;
