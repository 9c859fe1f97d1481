-- span_facts: every span once (from `spans`), without the wide JSON columns, with what the call views
-- need from them as typed columns, and the call each model / tool span belongs to.
-- The views that rebuild calls, steps and trajectories read this instead of `spans`: at millions of
-- spans, reading and parsing attributes again in every view dominates everything else. A batch job can
-- snapshot it once (open_lake(..., materialize=True)).
--
-- From the attributes (read only for spans that can carry them):
--   http_status_code, retry_after_ms (tracevals.retry_after_ms), retryable, retry_attempt,
--   idempotency_key, replay; requested_tool_call_ids / requested_tool_names (tracevals.tool_calls.*:
--   what a model response asked for); reported_cost_usd (gen_ai.usage.cost, llm.cost.total);
--   entity_name (traceloop.entity.name); on a root span: commit_hash, lock_hash, attempt_output,
--   attempt_error (harness); session_status (tracevals.session.status, on a session end);
--   has_content: a model span that may hold message content (see message_sources).
--
-- Nesting: one logical call is often several nested spans, a framework's `call_llm` around the
-- provider's `generate_content`, or framework -> MCP client -> MCP server for one tool call. A model
-- or tool span belongs to the call of its farthest ancestor of the same kind, walking up through spans
-- with no GenAI meaning (kind other / chain: HTTP, CHAIN ...) and stopping at any other GenAI span (an
-- agent called as a tool runs calls of its own). The walk looks three spans up, which covers
-- framework -> client -> (HTTP) -> server; a deeper chain is reported as separate calls.
--   call_span_id  the outermost span of the call (NULL for spans that are not model or tool calls)
--   call_depth    0 for that span, 1 for a span nested in it, ...
--   nested_span_count  on the outermost span: how many spans its call nests (0: the call is one span)
CREATE OR REPLACE VIEW span_facts AS
WITH facts AS (
    SELECT
        r.* EXCLUDE (
            attributes, events, links, resource_attributes, source_file, status_message, scope_name, scope_version,
            normalizer_version, x
        ),
        -- json_extract_string takes all paths in one parse; scalars then only need a cast from text
        TRY_CAST(x[1] AS BIGINT) AS http_status_code,
        TRY_CAST(x[2] AS DOUBLE) AS retry_after_ms,
        TRY_CAST(x[3] AS BOOLEAN) AS retryable,
        TRY_CAST(x[4] AS BIGINT) AS retry_attempt,
        x[5] AS idempotency_key,
        x[6] AS replay,
        CAST(CAST(x[7] AS JSON) AS VARCHAR[]) AS requested_tool_call_ids,
        CAST(CAST(x[8] AS JSON) AS VARCHAR[]) AS requested_tool_names,
        coalesce(TRY_CAST(x[9] AS DOUBLE), TRY_CAST(x[10] AS DOUBLE)) AS reported_cost_usd,
        x[11] AS entity_name,
        x[12] AS commit_hash,
        x[13] AS lock_hash,
        x[14] AS attempt_output,
        x[15] AS attempt_error,
        x[16] AS session_status,
        (r.kind = 'llm' AND (
            -- a cheap superset of the keys message_sources reads (a false hit only costs that view a look)
            r.events <> '[]'
            OR contains(r.attributes, 'messages')
            OR contains(r.attributes, 'gen_ai.prompt')
            OR contains(r.attributes, 'gen_ai.completion')
            OR contains(r.attributes, 'llm_request')
        )) AS has_content
    FROM (
        SELECT
            s.*,
            CASE WHEN s.kind IN ('llm', 'tool', 'agent', 'session_end') OR s.parent_span_id IS NULL THEN
                json_extract_string(s.attributes, [
                    '$."http.response.status_code"', '$."tracevals.retry_after_ms"', '$."tracevals.retryable"',
                    '$."tracevals.retry.attempt"', '$."tracevals.idempotency_key"', '$."tracevals.replay"',
                    '$."tracevals.tool_calls.ids"', '$."tracevals.tool_calls.names"', '$."gen_ai.usage.cost"',
                    '$."llm.cost.total"', '$."traceloop.entity.name"', '$."tracevals.commit"',
                    '$."tracevals.lock_hash"', '$."tracevals.attempt.output"', '$."tracevals.attempt.error"',
                    '$."tracevals.session.status"'
                ])
            END AS x
        FROM spans AS s
    ) AS r
),
hops AS (
    -- the spans a walk can pass (calls, and spans with no GenAI meaning), narrow. Read from the files
    -- without deduplication: copies of a span have the same parent and kind, so they only repeat rows of
    -- `walked`, which keeps each span once.
    SELECT trace_id, span_id, parent_span_id, kind FROM raw_spans WHERE kind IN ('llm', 'tool', 'other', 'chain')
),
nested AS (
    -- the (few) calls whose parent continues the walk; every other call is its own outermost span
    SELECT c.trace_id, c.span_id, c.kind, p1.span_id AS p1_id, p1.kind AS p1_kind, p1.parent_span_id AS p1_parent
    FROM hops AS c
    JOIN hops AS p1 ON p1.trace_id = c.trace_id AND p1.span_id = c.parent_span_id
    WHERE c.kind IN ('llm', 'tool') AND p1.kind IN (c.kind, 'other', 'chain')
),
walked AS (
    SELECT DISTINCT
        n.trace_id,
        n.span_id,
        CASE
            WHEN p3.kind = n.kind THEN p3.span_id
            WHEN p2.kind = n.kind THEN p2.span_id
            WHEN n.p1_kind = n.kind THEN n.p1_id
            ELSE n.span_id
        END AS call_span_id,
        (CASE WHEN n.p1_kind = n.kind THEN 1 ELSE 0 END)
            + (CASE WHEN p2.kind = n.kind THEN 1 ELSE 0 END)
            + (CASE WHEN p3.kind = n.kind THEN 1 ELSE 0 END) AS call_depth
    FROM nested AS n
    LEFT JOIN hops AS p2 ON p2.trace_id = n.trace_id AND p2.span_id = n.p1_parent
    LEFT JOIN hops AS p3
        ON p2.kind IN (n.kind, 'other', 'chain') AND p3.trace_id = n.trace_id AND p3.span_id = p2.parent_span_id
),
nesting AS (
    -- how many spans each outermost span has nested in its call
    SELECT trace_id, call_span_id, count(*) AS nested_span_count
    FROM walked
    WHERE call_depth > 0
    GROUP BY trace_id, call_span_id
)
SELECT
    d.*,
    CASE WHEN d.kind IN ('llm', 'tool') THEN coalesce(w.call_span_id, d.span_id) END AS call_span_id,
    CASE WHEN d.kind IN ('llm', 'tool') THEN coalesce(w.call_depth, 0) END AS call_depth,
    CASE WHEN d.kind IN ('llm', 'tool') AND coalesce(w.call_depth, 0) = 0 THEN coalesce(n.nested_span_count, 0) END
        AS nested_span_count
FROM facts AS d
LEFT JOIN walked AS w ON w.trace_id = d.trace_id AND w.span_id = d.span_id
LEFT JOIN nesting AS n ON n.trace_id = d.trace_id AND n.call_span_id = d.span_id;
