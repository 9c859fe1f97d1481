-- The last model call of each trace (an include of trace_facts and batch_traces; `turns` orders a turn's calls the
-- same way): the last to start, then the greatest span id, over the including query's `last_call_scope` (model_calls'
-- trace_id, span_id, start_time, end_time, is_error of the traces it asks about). Its own end time and failure (NULL:
-- not ended), and whether any call of the trace is still open.
SELECT trace_id, arg_max(span_id, (start_time, span_id)) AS span_id,
       arg_max_null(end_time, (start_time, span_id)) AS end_time,
       arg_max_null(is_error, (start_time, span_id)) AS is_error,
       bool_or(end_time IS NULL) AS any_open
FROM last_call_scope
GROUP BY trace_id
