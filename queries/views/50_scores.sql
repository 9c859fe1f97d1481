-- scores: evaluator verdicts. Re-scoring appends rows; the newest row per (trace, evaluator) wins.
CREATE OR REPLACE VIEW scores AS
SELECT * EXCLUDE (score_rank)
FROM (
    SELECT
        r.*,
        row_number() OVER (
            PARTITION BY r.trace_id, r.evaluator
            ORDER BY r.scored_at DESC, r.source_file DESC
        ) AS score_rank
    FROM raw_scores AS r
) AS ranked
WHERE score_rank = 1;
