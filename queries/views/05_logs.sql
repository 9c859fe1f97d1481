-- logs: OTLP log records (e.g. GenAI content in event_only mode), each once. A client retry can
-- deliver a record twice; identical records (same span, time, event and attributes) count once.
-- event_name: the record's OTLP event name, else its `event.name` or `otel.event.name` attribute (where
-- older SDKs and some bridges put it).
CREATE OR REPLACE VIEW logs AS
SELECT * EXCLUDE (dedup_rank)
FROM (
    SELECT
        r.* REPLACE (
            CASE WHEN coalesce(r.event_name, '') <> '' THEN r.event_name
                 WHEN r.attributes LIKE '%event.name"%' THEN coalesce(
                     json_extract_string(r.attributes, '$."event.name"'),
                     json_extract_string(r.attributes, '$."otel.event.name"')
                 )
            END AS event_name
        ),
        row_number() OVER (
            PARTITION BY r.trace_id, r.span_id, r.time, r.event_name, r.attributes, r.body
            ORDER BY r.source_file DESC
        ) AS dedup_rank
    FROM raw_logs AS r
) AS ranked
WHERE dedup_rank = 1;
