-- spans: every span in the lake, once. OTLP clients retry, so the same (trace_id, span_id) can
-- arrive twice, in two files; keep one copy, preferring an ended one, then the latest end, then the
-- newest file. The choice depends only on the copies, never on the order the files arrived in.
--
-- Duplicates are rare, so only they are ranked: every other span streams through untouched, with its
-- wide columns, and a filter on spans (kind = 'tool', a time range ...) still reaches the Parquet scan.
CREATE OR REPLACE VIEW spans AS
WITH duplicated AS (
    SELECT trace_id, span_id
    FROM raw_spans
    GROUP BY trace_id, span_id
    HAVING count(*) > 1
)
SELECT r.*
FROM raw_spans AS r
WHERE NOT EXISTS (SELECT 1 FROM duplicated AS d WHERE d.trace_id = r.trace_id AND d.span_id = r.span_id)
UNION ALL
SELECT * EXCLUDE (dedup_rank)
FROM (
    SELECT
        r.*,
        row_number() OVER (
            PARTITION BY r.trace_id, r.span_id
            ORDER BY (r.end_time IS NULL), r.end_time DESC, r.source_file DESC
        ) AS dedup_rank
    FROM raw_spans AS r
    WHERE EXISTS (SELECT 1 FROM duplicated AS d WHERE d.trace_id = r.trace_id AND d.span_id = r.span_id)
) AS ranked
WHERE dedup_rank = 1;
