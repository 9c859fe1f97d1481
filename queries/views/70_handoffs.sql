-- handoffs: every structured hand-over to a human (tracevals.handoff(...)), with what was done, what
-- is pending and the candidates the agent would not choose between (JSON arrays).
CREATE OR REPLACE VIEW handoffs AS
WITH marked AS (
    SELECT * FROM spans AS r WHERE r.kind = 'handoff'
)
SELECT
    s.trace_id,
    s.span_id,
    a.session_id,
    a.run_id,
    a.task_id,
    a.attempt,
    a.variant,
    json_extract_string(s.attributes, '$."tracevals.handoff.reason"') AS reason,
    json_extract(s.attributes, '$."tracevals.handoff.completed"') AS completed,
    json_extract(s.attributes, '$."tracevals.handoff.pending"') AS pending,
    json_extract(s.attributes, '$."tracevals.handoff.candidates"') AS candidates,
    s.start_time
FROM marked AS s
JOIN attempts AS a ON a.trace_id = s.trace_id;
