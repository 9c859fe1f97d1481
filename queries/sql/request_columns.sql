-- The columns of a tool-call request row, as requested_tool_calls and tool_call_gaps both give them (an
-- include in their select lists; `r`: a request of `req`, `a`: its trace's row of `attempts`).
r.trace_id,
    a.session_id,
    a.run_id,
    a.task_id,
    a.attempt,
    a.variant,
    r.request_index,
    r.model_span_id,
    r.model_start_time,
    r.model_end_time,
    r.source,
    r.tool_call_id,
    r.tool_name,
    r.tool_args
