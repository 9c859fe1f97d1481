-- model_calls: one row per logical model call, its nested spans collapsed (see call_spans). Tokens are
-- counted once: the outermost span's usage when it reports one, else the nested provider span's.
-- Provider and model come from the innermost span that names them (the provider's own span knows
-- best); timing, status and ids from the outermost. Cost: an explicit cost attribute when the span has
-- one (but 0 for tokens used), else tokens x the price in `model_prices` (USD per million tokens; 0 for a
-- model without one).
-- A model span that records neither usage nor messages, followed under the same parent by a call that does,
-- is that call's preparation, not a call of its own (LlamaIndex's `_prepare_chat_with_tools` before each
-- `astream_chat`): it is left out.
CREATE OR REPLACE VIEW model_calls AS
WITH single AS (
    -- most calls are one span: no aggregation needed
    SELECT trace_id, span_id, 1 AS span_count, parent_span_id, name AS span_name, provider, model, agent_name,
           input_tokens, output_tokens, reported_cost_usd, error_type, status_code,
           status_code = 'error' AS any_error_status, start_time, end_time, duration_ms, has_content
    FROM call_spans
    WHERE kind = 'llm' AND call_depth = 0 AND nested_span_count = 0
),
nested AS (
    SELECT
        trace_id,
        call_span_id AS span_id,
        count(*) AS span_count,
        max(parent_span_id) FILTER (WHERE call_depth = 0) AS parent_span_id,
        max(name) FILTER (WHERE call_depth = 0) AS span_name,
        max_by(provider, call_depth) FILTER (WHERE provider IS NOT NULL) AS provider,
        max_by(model, call_depth) FILTER (WHERE model IS NOT NULL) AS model,
        min_by(agent_name, call_depth) FILTER (WHERE agent_name IS NOT NULL) AS agent_name,
        coalesce(max(input_tokens) FILTER (WHERE call_depth = 0), max(input_tokens)) AS input_tokens,
        coalesce(max(output_tokens) FILTER (WHERE call_depth = 0), max(output_tokens)) AS output_tokens,
        coalesce(max(reported_cost_usd) FILTER (WHERE call_depth = 0), max(reported_cost_usd)) AS reported_cost_usd,
        coalesce(max(error_type) FILTER (WHERE call_depth = 0), max(error_type)) AS error_type,
        max(status_code) FILTER (WHERE call_depth = 0) AS status_code,
        max(status_code = 'error') AS any_error_status,
        max(start_time) FILTER (WHERE call_depth = 0) AS start_time,
        max(end_time) FILTER (WHERE call_depth = 0) AS end_time,
        max(duration_ms) FILTER (WHERE call_depth = 0) AS duration_ms,
        bool_or(has_content) AS has_content
    FROM call_spans
    WHERE kind = 'llm' AND EXISTS (
        SELECT 1 FROM call_spans AS root
        WHERE root.nested_span_count > 0 AND root.kind = 'llm'
          AND root.trace_id = call_spans.trace_id AND root.span_id = call_spans.call_span_id
    )
    GROUP BY trace_id, call_span_id
),
every_call AS (
    SELECT *, input_tokens IS NOT NULL OR output_tokens IS NOT NULL OR has_content AS records
    FROM (SELECT * FROM single UNION ALL SELECT * FROM nested) AS u
),
calls AS (
    SELECT c.* EXCLUDE (has_content, records)
    FROM every_call AS c
    WHERE c.records OR NOT EXISTS (
        SELECT 1 FROM every_call AS o
        WHERE o.trace_id = c.trace_id AND o.records AND o.parent_span_id IS NOT DISTINCT FROM c.parent_span_id
          AND (o.start_time, o.span_id) > (c.start_time, c.span_id)
    )
)
SELECT
    c.trace_id,
    c.span_id,
    c.parent_span_id,
    a.session_id,
    a.run_id,
    a.task_id,
    a.attempt,
    a.variant,
    c.span_name,
    c.provider,
    c.model,
    c.agent_name,
    c.input_tokens,
    c.output_tokens,
    coalesce(
        -- a reported cost of 0 for a call that used tokens is no figure: an instrumentation without the model's
        -- price reports 0 (OpenLIT, when its price list is out of reach or lacks the model)
        CASE WHEN c.reported_cost_usd <> 0 OR coalesce(c.input_tokens, 0) + coalesce(c.output_tokens, 0) = 0
             THEN c.reported_cost_usd END,
        (coalesce(c.input_tokens, 0) * coalesce(p.input_usd_per_mtok, 0)
            + coalesce(c.output_tokens, 0) * coalesce(p.output_usd_per_mtok, 0)) / 1e6
    ) AS cost_usd,
    c.error_type,
    c.status_code,
    (c.error_type IS NOT NULL OR c.any_error_status) AS is_error,
    c.span_count,
    c.start_time,
    c.end_time,
    c.duration_ms
FROM calls AS c
JOIN attempts AS a ON a.trace_id = c.trace_id
LEFT JOIN model_prices AS p ON p.model = c.model;
