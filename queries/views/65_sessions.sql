-- sessions: one row per session (every trace with the same conversation / session id), its turns in
-- order (start time, then trace id), with duration, tokens, cost and how it ended.
--   finished        an explicit end marker (a span of kind session_end, tracevals.session.end) in any
--                   turn or in a trace of its own; without one, the last turn's root span ended
--   finished_by     end_marker | root_ended | NULL
--   terminal_state  open (not finished) | error (the last turn failed, or the session's end marker says it failed,
--                   `attempts.end_error`: that turn's own, else one in a trace of its own, as session_completeness
--                   reads it) | handoff (the last turn handed over to a human) | completed
CREATE OR REPLACE VIEW sessions AS
WITH end_markers AS (
    -- traces of session-end markers only (`tracevals.end_session()` after the session): not turns, but
    -- the session's end, and whether they say it failed (`attempts.end_error`)
    SELECT session_id, bool_or(end_error) AS end_error
    FROM attempts WHERE is_end_marker AND session_id IS NOT NULL
    GROUP BY session_id
),
per_session AS (
    SELECT
        session_id,
        count(*) AS turn_count,
        list(trace_id ORDER BY start_time, trace_id) AS turns,
        min(start_time) AS start_time,
        max(end_time) AS end_time,
        CAST(sum(model_call_count) AS BIGINT) AS model_call_count,
        CAST(sum(tool_call_count) AS BIGINT) AS tool_call_count,
        CAST(sum(tool_error_count) AS BIGINT) AS tool_error_count,
        CAST(sum(gap_count) AS BIGINT) AS gap_count,
        CAST(sum(handoff_count) AS BIGINT) AS handoff_count,
        CAST(sum(input_tokens) AS BIGINT) AS input_tokens,
        CAST(sum(output_tokens) AS BIGINT) AS output_tokens,
        CAST(sum(CAST(cost_usd AS DECIMAL(38, 15))) AS DOUBLE) AS cost_usd,  -- exact: the same in any order
        bool_or(has_session_end) AS has_own_end_marker,
        max_by(trace_id, (start_time, trace_id)) AS last_trace_id,
        max_by(root_ended, (start_time, trace_id)) AS last_root_ended,
        max_by(status, (start_time, trace_id)) AS last_status,
        max_by(handoff_count, (start_time, trace_id)) AS last_handoff_count,
        max(run_id) AS run_id,
        max(task_id) AS task_id,
        max(variant) AS variant
    FROM trajectories
    WHERE session_id IS NOT NULL
    GROUP BY session_id
),
ended AS (
    SELECT p.*,
           p.has_own_end_marker OR m.session_id IS NOT NULL AS has_end_marker,
           -- the last turn's end marker, else the session's own trace of one: as trace_facts reads the end
           coalesce(a.end_error, m.end_error) AS end_error
    FROM per_session AS p
    LEFT JOIN attempts AS a ON a.trace_id = p.last_trace_id
    LEFT JOIN end_markers AS m ON m.session_id = p.session_id
)
SELECT
    session_id,
    run_id,
    task_id,
    variant,
    turn_count,
    turns,
    start_time,
    end_time,
    date_diff('microsecond', start_time, end_time) / 1000.0 AS duration_ms,
    model_call_count,
    tool_call_count,
    tool_error_count,
    gap_count,
    handoff_count,
    input_tokens,
    output_tokens,
    cost_usd,
    (has_end_marker OR last_root_ended) AS finished,
    CASE WHEN has_end_marker THEN 'end_marker' WHEN last_root_ended THEN 'root_ended' END AS finished_by,
    CASE
        WHEN NOT (has_end_marker OR last_root_ended) THEN 'open'
        WHEN last_status = 'error' OR end_error THEN 'error'
        WHEN last_handoff_count > 0 THEN 'handoff'
        ELSE 'completed'
    END AS terminal_state
FROM ended;
