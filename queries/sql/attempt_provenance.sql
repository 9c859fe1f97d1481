-- attempt_provenance: what a report (`scoring.lake_data`) reads of each attempt it shows besides its
-- trajectory: its `attempts` row's trace, variant, run and times, then its `environments` row (commit, lock
-- hash, what it ran in; NULL for an attempt of no harness run), the identity columns aside. `{traces}`:
-- which attempts (TRUE: all). A closed hour's rows are derived with its frames (`queries.derived`); a report
-- reads them there and through the views for the other attempts, the same rows either way.
SELECT a.trace_id AS attempt_trace_id, a.variant AS attempt_variant, a.run_id AS attempt_run_id,
       a.start_time AS attempt_start_time, a.end_time AS attempt_end_time,
       e.* EXCLUDE (run_id, task_id, attempt, variant, model_calls, settings)
FROM attempts AS a
LEFT JOIN environments AS e ON e.trace_id = a.trace_id
WHERE {traces}
