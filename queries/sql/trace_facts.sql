-- trace_facts: the span-level facts of each trace that is a turn (see queries/completeness.py), over the traces
-- `{scope}` keeps (a WHERE on span_facts, or nothing).
WITH s AS (
    SELECT trace_id, span_id, parent_span_id, span_kind, kind, start_time, end_time, status_code,
           error_type, tool_name, session_id, session_status, run_id, attempt_output, attempt_error
    FROM span_facts {scope}
),
ids AS (SELECT DISTINCT trace_id, span_id FROM s),
marked AS (
    SELECT s.*, p.span_id IS NULL AND s.parent_span_id IS NOT NULL AS parent_missing
    FROM s LEFT JOIN ids AS p ON p.trace_id = s.trace_id AND p.span_id = s.parent_span_id
),
roots AS (
    SELECT *, parent_span_id IS NULL OR (parent_missing AND span_kind IN ('server', 'consumer')) AS is_root
    FROM marked
),
calls AS (
    SELECT trace_id, span_id, start_time, end_time, is_error FROM model_calls
    WHERE trace_id IN (SELECT trace_id FROM s)
),
last_call_scope AS (SELECT * FROM calls),
-- the last model call to start (as turns and the loader order them: a call that holds a sub-agent's ends last)
last_call AS (/*@ include(last_calls) @*/),
agent_text_facts AS (SELECT trace_id, kind FROM s),
agent_texts AS (/*@ include(agent_texts) @*/),  -- a trace with no model call: what its agent spans say (as turns)
tool_ended_calls AS (SELECT trace_id, span_id, end_time FROM last_call),  -- the root's own facts checked below
tool_ended_requests AS (SELECT * FROM requested_tool_calls WHERE trace_id IN (SELECT trace_id FROM s)),
tool_ended_tools AS (
    SELECT trace_id, span_id, parent_span_id, start_time, tool_result AS result, is_error
    FROM tool_calls WHERE trace_id IN (SELECT trace_id FROM s)
),
tool_ended AS (/*@ include(tool_ended) @*/),  -- a trace that ended on its tools' results (as turns)
first_call AS (SELECT trace_id, arg_min(span_id, (start_time, span_id)) AS span_id FROM calls GROUP BY trace_id),
user_messages AS (
    SELECT p.trace_id, p.message_index, string_agg(p.content, chr(10) ORDER BY p.part_index) AS text
    FROM message_parts AS p JOIN first_call AS f ON f.trace_id = p.trace_id AND f.span_id = p.call_span_id
    WHERE p.direction = 'input' AND p.role = 'user' AND p.part_type = 'text'
    GROUP BY p.trace_id, p.message_index
),
inputs AS (
    SELECT trace_id, arg_max(text, message_index) AS input, count(*) AS user_turns
    FROM user_messages GROUP BY trace_id
),
per_trace AS (
    SELECT trace_id,
           count(*) AS span_count,
           bool_or(is_root) AS root_present,
           bool_or(is_root AND end_time IS NOT NULL) AS root_ended,
           count(*) FILTER (WHERE parent_missing AND NOT is_root) AS orphan_spans,
           count(*) FILTER (WHERE end_time IS NULL) AS open_spans,
           bool_or(is_root AND (status_code = 'error' OR error_type IS NOT NULL)) AS root_error,
           bool_or(kind = 'handoff' OR (kind = 'tool' AND tool_name = 'handoff_to_human'
                   AND coalesce(status_code, '') <> 'error')) AS handed_off,
           min(start_time) AS start_time,
           arg_min(span_id, start_time) FILTER (WHERE is_root) AS root_span_id,
           coalesce(max(session_id), trace_id) AS sid,
           max(session_id) IS NOT NULL AS identified
    FROM roots GROUP BY trace_id
),
-- the trace's session-end markers, as `attempts` reads them (the `sessions` view reads them there too): whether it
-- has one, whether it has nothing else, and what they say (whether the session failed: `attempts.end_error`)
with_status AS (
    SELECT p.*, coalesce(a.has_session_end, false) AS end_marker, coalesce(a.is_end_marker, false) AS marker_only,
           a.end_status, a.end_error
    FROM per_trace AS p LEFT JOIN attempts AS a USING (trace_id)
),
-- A trace made only of session-end markers (`tracevals.end_session()` called after the session's
-- `with` block, in a trace of its own) is not a turn: its marker and status belong to the session's
-- last turn. The turns are the other traces.
turns AS (
    SELECT p.*,
           row_number() OVER (PARTITION BY p.sid ORDER BY p.start_time DESC, p.trace_id DESC) = 1 AS last_turn
    FROM with_status AS p WHERE NOT p.marker_only
),
markers AS (
    SELECT sid, true AS marker, max(end_status) AS marker_status, bool_or(end_error) AS marker_error
    FROM with_status WHERE marker_only GROUP BY sid
),
per_turn AS (
    SELECT t.* REPLACE (
               t.end_marker OR (t.last_turn AND coalesce(m.marker, false)) AS end_marker,
               coalesce(t.end_status, CASE WHEN t.last_turn THEN m.marker_status END) AS end_status,
               coalesce(t.end_error, CASE WHEN t.last_turn THEN m.marker_error END) AS end_error
           )
    FROM turns AS t LEFT JOIN markers AS m USING (sid)
)
SELECT p.trace_id, p.span_count, p.root_present, p.root_ended, p.orphan_spans, p.open_spans,
       CAST(0 AS BIGINT) AS dangling_calls, p.end_marker, p.end_status,
       CASE
         WHEN p.root_error OR p.end_error OR r.error IS NOT NULL THEN 'error'
         WHEN p.handed_off THEN 'handoff'
         WHEN r.output IS NOT NULL THEN 'answer'
         WHEN x.output_text IS NOT NULL THEN 'answer'  -- no model call: what its agent spans say it answered
         -- the last model call ended the run: by itself (it asked for no tool and none ran after it), or on its
         -- tools' results in a root that ended
         WHEN e.call_span_id IS NOT NULL AND NOT l.any_open AND NOT coalesce(l.is_error, false)
              AND (e.tools = 0 OR p.root_ended) THEN 'answer'
       END AS terminal,
       CAST(row_number() OVER (PARTITION BY p.sid ORDER BY p.start_time, p.trace_id) AS BIGINT) AS turn,
       count(*) OVER (PARTITION BY p.sid) AS session_traces,
       -- what the conversation's history says the session had: only a session with an id has turns elsewhere (a
       -- trace with none is a session of its own, whatever history its model input repeats)
       CAST(CASE WHEN p.identified THEN nullif(max(coalesce(i.user_turns, 0)) OVER (PARTITION BY p.sid), 0) END
            AS BIGINT) AS turns_expected,
       i.input, p.root_span_id
FROM per_turn AS p
LEFT JOIN last_call AS l USING (trace_id)
LEFT JOIN tool_ended AS e ON e.trace_id = l.trace_id AND e.call_span_id = l.span_id
LEFT JOIN inputs AS i USING (trace_id)
LEFT JOIN agent_texts AS x USING (trace_id)
-- what the harness recorded on the trace's root: one row per trace however many spans have no parent (a
-- trace of N parentless spans is one trace, not N), from the earliest root that recorded it
LEFT JOIN (
    SELECT trace_id,
           min_by(attempt_output, (start_time, span_id)) FILTER (WHERE attempt_output IS NOT NULL) AS output,
           min_by(attempt_error, (start_time, span_id)) FILTER (WHERE attempt_error IS NOT NULL) AS error
    FROM s WHERE parent_span_id IS NULL GROUP BY trace_id
) AS r USING (trace_id)
