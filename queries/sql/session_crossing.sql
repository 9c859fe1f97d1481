-- session_crossing: the sessions whose traces have rows in more than one block of files, and the
-- crossing group (`bucket`) each is read in: in the order of their first and last blocks, cut about
-- every {max_rows} rows, never inside a session. A session is its traces' key, joined through
-- `tv_joined` (keys that de-duplication could make one session). See `selection.plan_groups`.
CREATE OR REPLACE TEMP TABLE tv_crossing_units AS
WITH keyed AS (
    SELECT t.trace_id, coalesce(j.root, t.key) AS unit, t.first_block, t.last_block, t.rows
    FROM tv_trace_blocks AS t LEFT JOIN tv_joined AS j ON j.node = t.key
),
units AS (
    SELECT unit, min(first_block) AS first_block, max(last_block) AS last_block, sum(rows) AS rows
    FROM keyed GROUP BY unit
    HAVING min(first_block) < max(last_block)
)
SELECT unit, first_block, last_block, rows,
       CAST((sum(rows) OVER (ORDER BY first_block, last_block, unit ROWS UNBOUNDED PRECEDING) - rows)
            // {max_rows} AS INTEGER) AS bucket
FROM units;
CREATE OR REPLACE TEMP TABLE tv_crossing AS
SELECT t.trace_id, u.bucket
FROM tv_trace_blocks AS t
LEFT JOIN tv_joined AS j ON j.node = t.key
JOIN tv_crossing_units AS u ON u.unit = coalesce(j.root, t.key);
