-- injections: spans the harness marked with tracevals.injection.* (a fault or a prompt injection), with
-- whether the injected goal, when it names a tool, was called later in the same trace.
CREATE OR REPLACE VIEW injections AS
WITH injected AS (
    SELECT * FROM spans AS r WHERE contains(r.attributes, '"tracevals.injection.')
),
marked AS (
    SELECT
        s.trace_id,
        s.span_id,
        s.name AS span_name,
        s.kind,
        s.tool_name,
        json_extract_string(s.attributes, '$."tracevals.injection.kind"') AS injection_kind,
        json_extract_string(s.attributes, '$."tracevals.injection.type"') AS injection_type,
        json_extract_string(s.attributes, '$."tracevals.injection.id"') AS injection_id,
        json_extract_string(s.attributes, '$."tracevals.injection.goal"') AS goal,
        s.error_type,
        s.start_time
    FROM injected AS s
)
SELECT
    m.trace_id,
    m.span_id,
    a.session_id,
    a.run_id,
    a.task_id,
    a.attempt,
    a.variant,
    m.span_name,
    m.kind,
    m.tool_name,
    m.injection_kind,
    m.injection_type,
    m.injection_id,
    m.goal,
    m.error_type,
    EXISTS (
        SELECT 1 FROM tool_calls AS t
        WHERE t.trace_id = m.trace_id AND t.tool_name = m.goal AND t.start_time >= m.start_time
    ) AS goal_tool_called,
    m.start_time
FROM marked AS m
JOIN attempts AS a ON a.trace_id = m.trace_id;
