-- spans: every span in the lake, once. OTLP clients retry, so the same (trace_id, span_id) can
-- arrive twice; keep one copy, preferring an ended one, then the latest end, then the newest file.
CREATE OR REPLACE VIEW spans AS
SELECT * EXCLUDE (dedup_rank)
FROM (
    SELECT
        r.*,
        row_number() OVER (
            PARTITION BY r.trace_id, r.span_id
            ORDER BY (r.end_time IS NULL), r.end_time DESC, r.source_file DESC
        ) AS dedup_rank
    FROM raw_spans AS r
) AS ranked
WHERE dedup_rank = 1;
