-- retries: chains of retried tool calls, by the one retry rule of tracevals.model.retries (the
-- evaluators count retries by the same rule; tests/test_retries_one_rule.py proves the two agree).
--
-- A retry is an executed tool call that repeats the executed tool call right before it in the trace (the
-- same operation: the tool name and the digest of its arguments' canonical JSON, the idempotency key
-- cut out, which every writer records (`tool_args_hash`: tracevals.model.calls.args_digest, the identity
-- tracevals.model.calls.operation_key_of gives the evaluators); `?` without arguments or digest) after
-- that call failed (it has an error type). Consecutive retries form one chain, named after its first call (chain_span_id);
-- chain_length counts the first call and its retries. One row per retry, with the error that caused it (the failed call's), the wait
-- between the failed call's end and the retry's start, and the wait the failure asked for.
--   backoff_respected  wait_ms >= retry_after_ms (NULL when the failure asked for no wait)
CREATE OR REPLACE VIEW retries AS
WITH calls AS (
    SELECT
        s.*,
        coalesce(s.name, '') || '(' || CASE
            WHEN s.args_hash IS NOT NULL THEN '#' || s.args_hash
            -- rows of older lakes (normalizer < 6) that have arguments but no digest: their text, the
            -- idempotency key cut out (as such rows were compared before; not canonical)
            WHEN s.args IS NOT NULL THEN regexp_replace(
                regexp_replace(
                    s.args,
                    '"(?:idempotency_key|idempotencyKey|Idempotency-Key)"\s*:\s*(?:"(?:[^"\\]|\\.)*"|null|-?[0-9][0-9.eE+-]*)\s*,?\s*',
                    '', 'g'
                ),
                ',\s*}', '}', 'g'
            )
            ELSE '?'
        END || ')' AS op_key,
        s.error_type IS NOT NULL AS failed
    FROM steps AS s
    WHERE s.step_kind = 'tool' AND NOT s.is_gap
),
linked AS (
    SELECT
        c.*,
        coalesce(lag(c.failed) OVER in_trace AND lag(c.op_key) OVER in_trace = c.op_key, FALSE) AS is_retry,
        lag(c.span_id) OVER in_trace AS previous_span_id,
        lag(c.end_time) OVER in_trace AS previous_end_time,
        lag(c.error_type) OVER in_trace AS previous_error_type,
        lag(c.http_status_code) OVER in_trace AS previous_http_status_code,
        lag(c.retry_after_ms) OVER in_trace AS previous_retry_after_ms
    FROM calls AS c
    WINDOW in_trace AS (PARTITION BY c.trace_id ORDER BY c.step_index)
),
chained AS (
    SELECT
        l.*,
        sum(CASE WHEN l.is_retry THEN 0 ELSE 1 END) OVER (
            PARTITION BY l.trace_id ORDER BY l.step_index ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        ) AS chain_number
    FROM linked AS l
),
chains AS (
    SELECT
        c.*,
        first_value(c.span_id) OVER chain AS chain_span_id,
        row_number() OVER chain - 1 AS retry_number,
        count(*) OVER (PARTITION BY c.trace_id, c.chain_number) AS chain_length
    FROM chained AS c
    WINDOW chain AS (PARTITION BY c.trace_id, c.chain_number ORDER BY c.step_index)
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
