-- step_reliability: per (run, variant, task, expected step), as computed when the run was scored
-- (`tracevals.stats.steps`, one rule for the report and this view): attempts that reached the step
-- with every earlier step right, called its tool, with the expected arguments, and succeeded; the
-- rate succeeded / reached; how many attempts first left the expected path there; and the task's
-- product of step rates beside its end-to-end pass rate. A run scored again replaces its rows.
--   which step fails most:  select * from step_reliability order by reached - succeeded desc limit 10
CREATE OR REPLACE VIEW step_reliability AS
SELECT * EXCLUDE (computed_rank, source_file), reached - succeeded AS lost
FROM (
    SELECT
        r.*,
        rank() OVER (PARTITION BY r.run_id ORDER BY r.computed_at DESC) AS computed_rank
    FROM raw_step_reliability AS r
) AS ranked
WHERE computed_rank = 1;
