-- model_calls: one row per model (LLM) call, with its tokens.
CREATE OR REPLACE VIEW model_calls AS
SELECT
    s.trace_id,
    s.span_id,
    s.parent_span_id,
    a.session_id,
    a.run_id,
    a.task_id,
    a.attempt,
    a.variant,
    s.provider,
    s.model,
    s.input_tokens,
    s.output_tokens,
    s.error_type,
    s.status_code,
    s.start_time,
    s.end_time,
    s.duration_ms
FROM spans AS s
JOIN attempts AS a ON a.trace_id = s.trace_id
WHERE s.kind = 'llm';
