-- logs: OTLP log records (e.g. GenAI content in event_only mode), each once. A client retry can
-- deliver a record twice; identical records (same span, time, event and attributes) count once.
CREATE OR REPLACE VIEW logs AS
SELECT * EXCLUDE (dedup_rank)
FROM (
    SELECT
        r.*,
        row_number() OVER (
            PARTITION BY r.trace_id, r.span_id, r.time, r.event_name, r.attributes, r.body
            ORDER BY r.source_file DESC
        ) AS dedup_rank
    FROM raw_logs AS r
) AS ranked
WHERE dedup_rank = 1;
