-- external_evaluations: verdicts other tools recorded in the GenAI conventions' `gen_ai.evaluation.result`
-- event, to put beside tracevals' own scores. One row per result, from a log record (its event name in
-- OTLP's field, or an `event.name` / `otel.event.name` attribute: see `logs`) or a span event on the span it
-- judges. The result is parented to the span it evaluates (trace_id, span_id; a log record without a span
-- id judges its whole trace).
--   name          gen_ai.evaluation.name
--   score_value   gen_ai.evaluation.score.value (a number)
--   score_label   gen_ai.evaluation.score.label
--   explanation   gen_ai.evaluation.explanation
--   evaluator     the recording service (resource service.name), for a log record
--   source        log | span_event
CREATE OR REPLACE VIEW external_evaluations AS
WITH found AS (
    SELECT trace_id, span_id, attributes, time, service_name AS evaluator, 'log' AS source
    FROM logs
    WHERE event_name = 'gen_ai.evaluation.result'
    UNION ALL
    SELECT s.trace_id, s.span_id, CAST(json_extract(e.event, '$.attributes') AS VARCHAR),
           make_timestamp_ns(TRY_CAST(json_extract_string(e.event, '$.time_unix_nano') AS BIGINT)), NULL, 'span_event'
    FROM spans AS s, UNNEST(CAST(json_extract(s.events, '$[*]') AS JSON[])) AS e(event)
    WHERE s.events LIKE '%gen_ai.evaluation.result%'
      AND json_extract_string(e.event, '$.name') = 'gen_ai.evaluation.result'
)
SELECT
    f.trace_id,
    f.span_id,
    a.session_id,
    a.run_id,
    a.task_id,
    a.attempt,
    a.variant,
    json_extract_string(f.attributes, '$."gen_ai.evaluation.name"') AS name,
    TRY_CAST(json_extract_string(f.attributes, '$."gen_ai.evaluation.score.value"') AS DOUBLE) AS score_value,
    json_extract_string(f.attributes, '$."gen_ai.evaluation.score.label"') AS score_label,
    json_extract_string(f.attributes, '$."gen_ai.evaluation.explanation"') AS explanation,
    f.evaluator,
    f.source,
    f.time
FROM found AS f
LEFT JOIN attempts AS a ON a.trace_id = f.trace_id;
