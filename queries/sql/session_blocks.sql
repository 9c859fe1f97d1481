-- session_blocks: per trace of the lake's blocks of files (`{rows}`: trace_id, session_id, block),
-- its session key as `select_sessions` computes it (its largest session id, else its own id), its
-- smallest session id (another one: the trace has several), the first and last block it has rows in,
-- and its rows. See `selection.plan_groups`.
CREATE OR REPLACE TEMP TABLE tv_trace_blocks AS
SELECT trace_id,
       coalesce(max(session_id), trace_id) AS key,
       min(session_id) AS low,
       min(block) AS first_block,
       max(block) AS last_block,
       count(*) AS rows
FROM ({rows}) AS r
GROUP BY trace_id
