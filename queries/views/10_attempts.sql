-- attempts: one row per trace (a harness attempt, or one turn of a session), with what its spans say
-- about it as a whole. Harness attributes sit on the attempt's root span; the session id on many spans.
--
-- session_id is the root span's, else that of the earliest span that has one (start time, then span
-- id): a nested workflow inside the trace (an agent called as a tool) can carry a conversation id of
-- its own, and the turn still belongs to the outer session.
-- min_by(value, key) picks the value at the smallest key; keys are (not root, start, span id) tuples so
-- that ties break the same way on every run.
CREATE OR REPLACE VIEW attempts AS
SELECT
    trace_id,
    max(run_id) AS run_id,
    max(task_id) AS task_id,
    max(attempt) AS attempt,
    max(variant) AS variant,
    min_by(session_id, (parent_span_id IS NOT NULL, start_time, span_id))
        FILTER (WHERE session_id IS NOT NULL) AS session_id,
    min(start_time) AS start_time,
    max(end_time) AS end_time,
    count(*) AS span_count,
    min_by(span_id, (start_time, span_id)) FILTER (WHERE parent_span_id IS NULL) AS root_span_id,
    min_by(name, (start_time, span_id)) FILTER (WHERE parent_span_id IS NULL) AS root_name,
    min_by(end_time, (start_time, span_id)) FILTER (WHERE parent_span_id IS NULL) AS root_end_time,
    min_by(status_code, (start_time, span_id)) FILTER (WHERE parent_span_id IS NULL) AS root_status_code,
    min_by(error_type, (start_time, span_id)) FILTER (WHERE parent_span_id IS NULL) AS root_error_type,
    -- how the attempt ended, by its root: error (the root failed) | open (root missing or not ended) | ok
    CASE
        WHEN root_error_type IS NOT NULL OR root_status_code = 'error' THEN 'error'
        WHEN root_span_id IS NULL OR root_end_time IS NULL THEN 'open'
        ELSE 'ok'
    END AS status,
    count(*) FILTER (WHERE kind = 'session_end') > 0 AS has_session_end,
    -- what a session-end marker in the trace says of the session (`tracevals.session.status`: finished, error ...;
    -- the greatest, where the trace holds several)
    max(session_status) FILTER (WHERE kind = 'session_end') AS end_status,
    -- whether such a marker says the session failed: its span's status is ERROR (what `end_session()` gives every
    -- status but "finished": "error", "abandoned" ...), or its status is "error"; NULL without a marker. The one
    -- definition: `trace_facts` (session_completeness's terminal state) and `sessions` read it here
    bool_or(status_code = 'error' OR session_status = 'error') FILTER (WHERE kind = 'session_end') AS end_error,
    -- only session-end markers: `end_session()` called after the session, in a trace of its own
    count(*) FILTER (WHERE kind <> 'session_end') = 0 AS is_end_marker,
    -- a framework's set-up, no run of an agent: no model or tool call, no hand-off, no agent invoked (an agent
    -- span that only creates one, `create_agent`, is none), no harness run, no session and no failure, in a trace
    -- that is not a marker's (LangGraph's and AutoGen's `create_agent <agent>` traces, an MCP client's
    -- `server/discover`): no attempt, and no trace of a turn joins it by a link. A trace of a session (a crash
    -- before the first model call) or one that failed is an attempt, whatever ran.
    count(*) FILTER (WHERE kind IN ('llm', 'tool', 'handoff')
                        OR (kind = 'agent' AND coalesce(operation, '') <> 'create_agent')) = 0
        AND max(run_id) IS NULL AND max(session_id) IS NULL
        AND count(*) FILTER (WHERE status_code = 'error' OR error_type IS NOT NULL) = 0
        AND NOT is_end_marker AS is_setup,
    count(*) FILTER (WHERE kind = 'handoff') AS handoff_count,
    count(*) FILTER (WHERE end_time IS NULL) AS open_span_count,
    min(service_name) AS service_name
FROM span_facts
GROUP BY trace_id;
