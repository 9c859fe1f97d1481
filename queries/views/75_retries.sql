-- retries: chains of repeated calls. A call repeats the one before it when it is the next call of the
-- same step kind, name and arguments (the argument hash when content was not captured) in the same
-- trace; it is a retry when that earlier call failed. Consecutive retries form a chain, named after
-- its first call (chain_span_id). One row per retry, with the error that caused it (the failed call's),
-- the wait between the failed call's end and the retry's start, and the wait the failure asked for.
--   backoff_respected  wait_ms >= retry_after_ms (NULL when the failure asked for no wait)
CREATE OR REPLACE VIEW retries AS
WITH calls AS (
    SELECT
        s.*,
        coalesce(s.args_hash, s.args, '') AS args_key
    FROM steps AS s
    WHERE NOT s.is_gap
),
linked AS (
    SELECT
        c.*,
        lag(c.is_error) OVER same_call AS previous_failed,
        lag(c.span_id) OVER same_call AS previous_span_id,
        lag(c.end_time) OVER same_call AS previous_end_time,
        lag(c.error_type) OVER same_call AS previous_error_type,
        lag(c.http_status_code) OVER same_call AS previous_http_status_code,
        lag(c.retry_after_ms) OVER same_call AS previous_retry_after_ms
    FROM calls AS c
    WINDOW same_call AS (PARTITION BY c.trace_id, c.step_kind, c.name, c.args_key ORDER BY c.step_index)
),
chained AS (
    SELECT
        l.*,
        sum(CASE WHEN coalesce(l.previous_failed, FALSE) THEN 0 ELSE 1 END) OVER (
            PARTITION BY l.trace_id, l.step_kind, l.name, l.args_key ORDER BY l.step_index
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        ) AS chain_number
    FROM linked AS l
),
chains AS (
    SELECT
        c.*,
        first_value(c.span_id) OVER chain AS chain_span_id,
        row_number() OVER chain - 1 AS retry_number,
        count(*) OVER (PARTITION BY c.trace_id, c.step_kind, c.name, c.args_key, c.chain_number) AS chain_length
    FROM chained AS c
    WINDOW chain AS (PARTITION BY c.trace_id, c.step_kind, c.name, c.args_key, c.chain_number ORDER BY c.step_index)
)
SELECT
    trace_id,
    session_id,
    run_id,
    task_id,
    attempt,
    variant,
    step_kind,
    name,
    chain_span_id,
    chain_length,
    retry_number,
    span_id,
    previous_span_id,
    previous_error_type AS error_type,
    previous_http_status_code AS http_status_code,
    previous_retry_after_ms AS retry_after_ms,
    date_diff('microsecond', previous_end_time, start_time) / 1000.0 AS wait_ms,
    date_diff('microsecond', previous_end_time, start_time) / 1000.0 >= previous_retry_after_ms AS backoff_respected,
    is_error AS retry_failed,
    idempotency_key,
    start_time
FROM chains
WHERE retry_number > 0;
