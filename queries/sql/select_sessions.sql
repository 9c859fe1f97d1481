-- select_sessions: the traces of the chosen sessions (`tv_traces`: trace_id, sid). A session is every
-- trace with the same session id (a trace without one is its own session); it is chosen by its first
-- span's start and by the sample rule (`{condition}`, on `s`), and then all its traces are read.
-- `{only}`: further conditions on `s.sid` (the sessions of some traces, or of some runs' attempts).
WITH t AS (
    -- run_id: the attempts view's (the greatest of the trace's spans), so that a run is chosen without it
    SELECT trace_id, coalesce(max(session_id), trace_id) AS sid, min(start_time) AS start_time, max(run_id) AS run_id
    FROM spans GROUP BY trace_id
),
s AS (
    SELECT sid, min(start_time) AS session_start FROM t GROUP BY sid
)
SELECT t.trace_id, t.sid FROM t JOIN s USING (sid)
WHERE {condition}{only}
