-- runs: one row per harness attempt (a trace whose root carries tracevals.run.id), with the attempt's
-- output and error as the harness recorded them, and its outcome:
--   error       the attempt raised (its root has an error)
--   handoff     the agent handed the task to a human
--   unfinished  the root span never ended
--   answered    it ended with an answer
-- passed: every evaluator that scored the attempt passed it (NULL while it is unscored).
CREATE OR REPLACE VIEW runs AS
SELECT
    s.trace_id,
    a.session_id,
    s.run_id,
    s.task_id,
    s.attempt,
    s.variant,
    s.commit_hash,
    s.lock_hash,
    s.attempt_output AS output,
    s.attempt_error AS error,
    s.error_type,
    s.status_code,
    CASE
        WHEN s.error_type IS NOT NULL OR s.status_code = 'error'
            OR s.attempt_error IS NOT NULL THEN 'error'
        WHEN a.handoff_count > 0 THEN 'handoff'
        WHEN s.end_time IS NULL THEN 'unfinished'
        ELSE 'answered'
    END AS outcome,
    v.passed,
    coalesce(v.score_count, 0) AS score_count,
    s.start_time,
    s.end_time,
    s.duration_ms
FROM span_facts AS s
JOIN attempts AS a ON a.trace_id = s.trace_id
LEFT JOIN (
    SELECT trace_id, bool_and(passed) AS passed, count(*) AS score_count
    FROM scores
    GROUP BY trace_id
) AS v ON v.trace_id = s.trace_id
WHERE s.parent_span_id IS NULL AND s.run_id IS NOT NULL;
