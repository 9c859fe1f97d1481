-- span_facts: every span once (from `spans`), without the wide JSON columns, with what the call views
-- need from them as typed columns, and the call each model / tool span belongs to.
-- The views that rebuild calls, steps and trajectories read this instead of `spans`: at millions of
-- spans, reading and parsing attributes again in every view dominates everything else. A batch job can
-- snapshot it once (open_lake(..., materialize=True)).
--
-- Facts (model, tool, agent, session-end and root spans; the lake's typed columns from normalizer 5 on,
-- else read from the attributes JSON):
--   http_status_code, retry_after_ms (tracevals.retry_after_ms), retryable, retry_attempt,
--   idempotency_key, replay; requested_tool_call_ids / requested_tool_names (tracevals.tool_calls.*:
--   what a model response asked for); answered_tool_call_ids (tracevals.tool_results.ids: the calls whose
--   results a model request carries); response_id (gen_ai.response.id); reported_cost_usd (gen_ai.usage.cost,
--   llm.cost.total); entity_name (traceloop.entity.name); on a root span: commit_hash, lock_hash, attempt_output,
--   attempt_error (harness); session_status (tracevals.session.status, on a session end);
--   has_content: a model span that may hold message content (see message_sources).
--
-- Nesting: one logical call is often several nested spans, a framework's `call_llm` around the
-- provider's `generate_content`, or framework -> MCP client -> MCP server for one tool call. A model
-- or tool span belongs to the call of its farthest ancestor of the same kind, walking up through spans
-- with no GenAI meaning (kind other / chain: HTTP, CHAIN ...) and stopping at any other GenAI span (an
-- agent called as a tool runs calls of its own), and, for tools, at a tool span of another tool name: a
-- tool that calls another tool (a refund that deletes an order) makes two calls, each judged on its own. The walk looks three spans up, which covers
-- framework -> client -> (HTTP) -> server; a deeper chain is reported as separate calls. It never passes a
-- span twice: a span recorded as its own parent ends the walk there, and of two spans parented to each other the
-- one that started first is the outer one.
--   call_span_id  the outermost span of the call (NULL for spans that are not model or tool calls)
--   call_depth    0 for that span, 1 for a span nested in it, ...
--   nested_span_count  on the outermost span: how many spans its call nests (0: the call is one span)
CREATE OR REPLACE VIEW span_facts AS
WITH facts AS (
    -- Rows written by normalizer 5 or later carry the facts as typed columns (typed); older rows have
    -- them in the attributes JSON only, read with one json_extract_string for all paths, then a cast.
    SELECT
        r.* EXCLUDE (
            attributes, events, links, resource_attributes, source_file, status_message, scope_name, scope_version,
            normalizer_version, x, typed, fact_span, http_status_code, retry_after_ms, retryable, retry_attempt,
            idempotency_key, replay, requested_tool_call_ids, requested_tool_names, reported_cost_usd, entity_name,
            commit_hash, lock_hash, attempt_output, attempt_error, session_status, has_message_attributes,
            answered_tool_call_ids, response_id
        ),
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.http_status_code ELSE TRY_CAST(x[1] AS BIGINT) END
            AS http_status_code,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.retry_after_ms ELSE TRY_CAST(x[2] AS DOUBLE) END
            AS retry_after_ms,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.retryable ELSE TRY_CAST(x[3] AS BOOLEAN) END AS retryable,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.retry_attempt ELSE TRY_CAST(x[4] AS BIGINT) END
            AS retry_attempt,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.idempotency_key ELSE x[5] END AS idempotency_key,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.replay ELSE x[6] END AS replay,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.requested_tool_call_ids
            ELSE CAST(CAST(x[7] AS JSON) AS VARCHAR[]) END AS requested_tool_call_ids,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.requested_tool_names
            ELSE CAST(CAST(x[8] AS JSON) AS VARCHAR[]) END AS requested_tool_names,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.reported_cost_usd
            ELSE coalesce(TRY_CAST(x[9] AS DOUBLE), TRY_CAST(x[10] AS DOUBLE)) END AS reported_cost_usd,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.entity_name ELSE x[11] END AS entity_name,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.commit_hash ELSE x[12] END AS commit_hash,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.lock_hash ELSE x[13] END AS lock_hash,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.attempt_output ELSE x[14] END AS attempt_output,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.attempt_error ELSE x[15] END AS attempt_error,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.session_status ELSE x[16] END AS session_status,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.answered_tool_call_ids
            ELSE CAST(CAST(x[17] AS JSON) AS VARCHAR[]) END AS answered_tool_call_ids,
        CASE WHEN NOT fact_span THEN NULL WHEN typed THEN r.response_id ELSE x[18] END AS response_id,
        (r.kind = 'llm' AND (
            r.events <> '[]'
            OR CASE WHEN typed THEN coalesce(r.has_message_attributes, FALSE) ELSE (
                -- a cheap superset of the keys message_sources reads (a false hit only costs that view a look)
                contains(r.attributes, 'messages')
                OR contains(r.attributes, 'gen_ai.prompt')
                OR contains(r.attributes, 'gen_ai.completion')
                OR contains(r.attributes, 'llm_request')
            ) END
        )) AS has_content
    FROM (
        SELECT
            s.*,
            coalesce(s.normalizer_version, 0) >= 5 AS typed,
            (s.kind IN ('llm', 'tool', 'agent', 'session_end') OR s.parent_span_id IS NULL) AS fact_span,
            CASE WHEN coalesce(s.normalizer_version, 0) < 5
                AND (s.kind IN ('llm', 'tool', 'agent', 'session_end') OR s.parent_span_id IS NULL) THEN
                json_extract_string(s.attributes, [
                    '$."http.response.status_code"', '$."tracevals.retry_after_ms"', '$."tracevals.retryable"',
                    '$."tracevals.retry.attempt"', '$."tracevals.idempotency_key"', '$."tracevals.replay"',
                    '$."tracevals.tool_calls.ids"', '$."tracevals.tool_calls.names"', '$."gen_ai.usage.cost"',
                    '$."llm.cost.total"', '$."traceloop.entity.name"', '$."tracevals.commit"',
                    '$."tracevals.lock_hash"', '$."tracevals.attempt.output"', '$."tracevals.attempt.error"',
                    '$."tracevals.session.status"', '$."tracevals.tool_results.ids"',
                    '$."gen_ai.response.id"'
                ])
            END AS x
        FROM spans AS s
    ) AS r
),
hops AS (
    -- the spans a walk can pass (calls, and spans with no GenAI meaning), narrow. Read from the files
    -- without deduplication: copies of a span have the same parent and kind, so they only repeat rows of
    -- `walked`, which keeps each span once.
    SELECT trace_id, span_id, parent_span_id, kind, tool_name, start_time, response_id
    FROM raw_spans WHERE kind IN ('llm', 'tool', 'other', 'chain')
),
nested AS (
    -- the (few) calls whose parent continues the walk; every other call is its own outermost span
    SELECT c.trace_id, c.span_id, c.kind, c.tool_name, p1.span_id AS p1_id, p1.kind AS p1_kind,
           p1.parent_span_id AS p1_parent,
           p1.kind = c.kind AND (c.kind = 'llm' OR p1.tool_name IS NULL OR c.tool_name IS NULL
                                 OR p1.tool_name = c.tool_name) AS p1_same
    FROM hops AS c
    JOIN hops AS p1 ON p1.trace_id = c.trace_id AND p1.span_id = c.parent_span_id
    WHERE c.kind IN ('llm', 'tool')
      AND p1.span_id <> c.span_id  -- a span its own parent (a recorded cycle) is no nesting
      -- two spans parented to each other: the one that started first is the outer one
      AND NOT (p1.parent_span_id = c.span_id AND (c.start_time, c.span_id) < (p1.start_time, p1.span_id))
      AND (p1.kind IN ('other', 'chain')
           OR (p1.kind = c.kind AND (c.kind = 'llm' OR p1.tool_name IS NULL OR c.tool_name IS NULL
                                     OR p1.tool_name = c.tool_name)))
),
walked AS (
    SELECT DISTINCT
        trace_id,
        span_id,
        CASE
            WHEN p3_same THEN p3_id
            WHEN p2_same THEN p2_id
            WHEN p1_same THEN p1_id
            ELSE span_id
        END AS call_span_id,
        CAST(p1_same AS INTEGER) + CAST(coalesce(p2_same, FALSE) AS INTEGER)
            + CAST(coalesce(p3_same, FALSE) AS INTEGER) AS call_depth
    FROM (
        SELECT n.trace_id, n.span_id, n.p1_id, n.p1_same, p2.span_id AS p2_id, p3.span_id AS p3_id,
               p2.kind = n.kind AND (n.kind = 'llm' OR p2.tool_name IS NULL OR n.tool_name IS NULL
                                     OR p2.tool_name = n.tool_name) AS p2_same,
               p3.kind = n.kind AND (n.kind = 'llm' OR p3.tool_name IS NULL OR n.tool_name IS NULL
                                     OR p3.tool_name = n.tool_name) AS p3_same
        FROM nested AS n
        -- a walk never comes back to a span it passed: parents can form cycles in real recordings
        LEFT JOIN hops AS p2
            ON p2.trace_id = n.trace_id AND p2.span_id = n.p1_parent AND p2.span_id NOT IN (n.span_id, n.p1_id)
        LEFT JOIN hops AS p3
            ON p3.span_id NOT IN (n.span_id, n.p1_id, p2.span_id)
               AND (p2.kind IN ('other', 'chain')
                OR (p2.kind = n.kind AND (n.kind = 'llm' OR p2.tool_name IS NULL OR n.tool_name IS NULL
                                          OR p2.tool_name = n.tool_name)))
               AND p3.trace_id = n.trace_id AND p3.span_id = p2.parent_span_id
    )
),
twins AS (
    -- two instrumentations of one model call that do not nest (OpenLLMetry's Anthropic span beside the SDK's own,
    -- both children of the caller's span): outermost model spans that name the same response (`gen_ai.response.id`)
    -- are one call, whose outermost span is the one that started first. From `hops` (copies of a span are one
    -- span_id); only responses named by more than one span.
    SELECT trace_id, span_id, first_value(span_id) OVER (
               PARTITION BY trace_id, response_id ORDER BY start_time, span_id
           ) AS twin_of
    FROM (
        SELECT DISTINCT r.trace_id, r.span_id, r.start_time, r.response_id
        FROM hops AS r
        LEFT JOIN walked AS w ON w.trace_id = r.trace_id AND w.span_id = r.span_id
        WHERE r.kind = 'llm' AND r.response_id <> '' AND coalesce(w.call_depth, 0) = 0
    ) AS outermost
    QUALIFY count(*) OVER (PARTITION BY trace_id, response_id) > 1
),
nesting AS (
    -- how many spans each outermost span has nested in its call (a twin and what it nests, in the first twin's)
    SELECT trace_id, call_span_id, count(*) AS nested_span_count
    FROM (
        SELECT w.trace_id, coalesce(t.twin_of, w.call_span_id) AS call_span_id
        FROM walked AS w
        LEFT JOIN twins AS t ON t.trace_id = w.trace_id AND t.span_id = w.call_span_id
        WHERE w.call_depth > 0
        UNION ALL
        SELECT trace_id, twin_of FROM twins WHERE twin_of <> span_id
    ) AS inner_spans
    GROUP BY trace_id, call_span_id
)
SELECT
    d.*,
    CASE WHEN d.kind IN ('llm', 'tool') THEN coalesce(t.twin_of, w.call_span_id, d.span_id) END AS call_span_id,
    CASE WHEN d.kind IN ('llm', 'tool') THEN coalesce(w.call_depth, 0)
        + CASE WHEN t.twin_of <> coalesce(w.call_span_id, d.span_id) THEN 1 ELSE 0 END END AS call_depth,
    CASE WHEN d.kind IN ('llm', 'tool') AND coalesce(w.call_depth, 0) = 0
              AND coalesce(t.twin_of, d.span_id) = d.span_id THEN coalesce(n.nested_span_count, 0) END
        AS nested_span_count
FROM facts AS d
LEFT JOIN walked AS w ON w.trace_id = d.trace_id AND w.span_id = d.span_id
LEFT JOIN twins AS t ON t.trace_id = d.trace_id AND t.span_id = coalesce(w.call_span_id, d.span_id)
LEFT JOIN nesting AS n ON n.trace_id = d.trace_id AND n.call_span_id = d.span_id;
