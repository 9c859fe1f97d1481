-- batch_calls: the executed tool calls and gaps (requested, never executed) of the batch's traces
-- (`tv_batch`), in the steps view's order columns (numbered per trace in Python: a window over every
-- step in SQL sorts all of a lake's steps, where Python sorts only the tool calls read), with the
-- `tracevals.injection.*` marks and the attempt's logical clock (`tracevals.clock.*`) no view extracts,
-- read from the raw rows that carry one (filtered first, their OTLP-retry duplicates collapsed as `spans`
-- does). `op_key` is the operation key of the calls whose digest was recorded (`model.batch.OP_KEY_SQL`),
-- `tv_args_key` whether their arguments may hold an idempotency key (`KEY_IN_ARGS_SQL`): Python parses
-- only the calls these leave open (`model.batch.with_op_keys`). `asked_by`: the model call (its span id) whose
-- response asked for the call (`requested_tool_calls`' matching: by tool call id, else the n-th request for a
-- tool to its n-th execution; a gap's own request), so that the calls one response asked for together
-- (parallel tool calls) share it.
WITH asking AS (
    SELECT trace_id, executed_span_id, min(model_span_id) AS model_span_id
    FROM requested_tool_calls
    WHERE executed_span_id IS NOT NULL AND trace_id IN (SELECT trace_id FROM tv_batch)
    GROUP BY trace_id, executed_span_id
),
marked AS (
    SELECT * EXCLUDE (tv_rank) FROM (
        SELECT trace_id, span_id, start_time, attributes,
               row_number() OVER (PARTITION BY trace_id, span_id ORDER BY (end_time IS NULL), end_time DESC) AS tv_rank
        FROM raw_spans WHERE attributes LIKE '%"tracevals.injection.%' OR attributes LIKE '%"tracevals.clock.%'
    ) WHERE tv_rank = 1
),
marks AS (
    SELECT trace_id, span_id,
           json_extract(attributes, ['$."tracevals.injection.kind"', '$."tracevals.injection.type"',
                                     '$."tracevals.injection.id"', '$."tracevals.injection.goal"',
                                     '$."tracevals.clock.start_ms"', '$."tracevals.clock.end_ms"']) AS j
    FROM marked
)
SELECT c.trace_id, c.start_time AS tv_at, coalesce(c.span_id, c.requested_by_span_id) AS tv_by,
       c.request_index AS tv_nth,
       c.name, c.args, c.result, c.error_type,
       epoch_ns(c.start_time) / 1000000.0 AS start_ms, epoch_ns(c.end_time) / 1000000.0 AS end_ms,
       c.span_id, c.tool_call_id AS call_id, c.effect, CAST(c.retry_after_ms AS DOUBLE) AS retry_after_ms,
       c.idempotency_key, c.is_gap AS gap, CAST(c.http_status_code AS BIGINT) AS status_code,
       f.retryable, c.args_hash, {op_key} AS op_key, {key_in_args} AS tv_args_key,
       CASE WHEN json_type(m.j[1]) = 'VARCHAR' THEN m.j[1] ->> '$' ELSE CAST(m.j[1] AS VARCHAR) END AS injection_kind,
       CASE WHEN json_type(m.j[2]) = 'VARCHAR' THEN m.j[2] ->> '$' ELSE CAST(m.j[2] AS VARCHAR) END AS injection_type,
       CASE WHEN json_type(m.j[3]) = 'VARCHAR' THEN m.j[3] ->> '$' ELSE CAST(m.j[3] AS VARCHAR) END AS injection_id,
       CASE WHEN json_type(m.j[4]) = 'VARCHAR' THEN m.j[4] ->> '$' ELSE CAST(m.j[4] AS VARCHAR) END AS injection_goal,
       TRY_CAST(m.j[5] AS DOUBLE) AS clock_start_ms, TRY_CAST(m.j[6] AS DOUBLE) AS clock_end_ms,
       coalesce(c.requested_by_span_id, q.model_span_id) AS asked_by
FROM steps AS c
LEFT JOIN span_facts AS f ON f.trace_id = c.trace_id AND f.span_id = c.span_id
LEFT JOIN marks AS m ON m.trace_id = c.trace_id AND m.span_id = c.span_id
LEFT JOIN asking AS q ON q.trace_id = c.trace_id AND q.executed_span_id = c.span_id
WHERE c.step_kind = 'tool' AND c.trace_id IN (SELECT trace_id FROM tv_batch)
