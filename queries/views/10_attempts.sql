-- attempts: one row per trace with what the harness and the session context recorded about it.
-- Harness attributes sit on the attempt's root span; the session id on every span beneath.
CREATE OR REPLACE VIEW attempts AS
SELECT
    trace_id,
    max(run_id) AS run_id,
    max(task_id) AS task_id,
    max(attempt) AS attempt,
    max(variant) AS variant,
    max(session_id) AS session_id,
    min(start_time) AS start_time,
    max(end_time) AS end_time,
    count(*) AS span_count
FROM spans
GROUP BY trace_id;
