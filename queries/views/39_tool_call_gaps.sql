-- tool_call_gaps: tool calls a model asked for that no span executed, rebuilt from the message parts
-- (name, id, arguments when captured). The rule is requested_tool_calls' (is_gap), computed the cheap
-- way: a gap needs more requests than executions of a tool in a trace, so the request-by-request
-- matching runs only for those (trace, tool) pairs. request_index: as in requested_tool_calls.
CREATE OR REPLACE VIEW tool_call_gaps AS
WITH model AS (
    SELECT trace_id, span_id, call_span_id, start_time, end_time, requested_tool_call_ids, requested_tool_names
    FROM span_facts
    WHERE kind = 'llm'
),
from_messages AS (
    SELECT trace_id, call_span_id AS model_span_id, source, message_index AS message_order, part_index AS part_order,
           tool_call_id, tool_name, tool_args
    FROM message_parts
    WHERE direction = 'output' AND part_type = 'tool_call'
),
requests AS (
    SELECT * FROM from_messages
    UNION ALL
    -- ids and names only (tracevals.tool_calls.*), for the model calls whose messages were not captured.
    -- (A select-list unnest: DuckDB plans UNNEST ... WITH ORDINALITY as a join.)
    SELECT trace_id, model_span_id, 'span:tracevals.tool_calls', 0, CAST(i AS INTEGER), ids[i], names[i],
           CAST(NULL AS VARCHAR)
    FROM (
        SELECT m.trace_id, m.call_span_id AS model_span_id, m.requested_tool_call_ids AS ids,
               m.requested_tool_names AS names, unnest(range(1, len(m.requested_tool_names) + 1)) AS i
        FROM model AS m
        LEFT JOIN (SELECT DISTINCT trace_id, model_span_id FROM from_messages) AS x
            ON x.trace_id = m.trace_id AND x.model_span_id = m.call_span_id
        WHERE x.trace_id IS NULL AND len(m.requested_tool_names) > 0
    ) AS listed
),
executed AS (
    -- the outermost span of each tool call
    SELECT trace_id, span_id, tool_call_id, tool_name, start_time
    FROM span_facts
    WHERE kind = 'tool' AND call_depth = 0
),
short AS (
    -- (trace, tool) pairs asked for more often than executed
    SELECT r.trace_id, r.tool_name
    FROM (SELECT trace_id, tool_name, count(*) AS n FROM requests GROUP BY trace_id, tool_name) AS r
    LEFT JOIN (SELECT trace_id, tool_name, count(*) AS n FROM executed GROUP BY trace_id, tool_name) AS e
        ON e.trace_id = r.trace_id AND e.tool_name = r.tool_name
    WHERE r.n > coalesce(e.n, 0)
),
candidates AS (
    SELECT
        q.*,
        m.start_time AS model_start_time,
        m.end_time AS model_end_time,
        EXISTS (
            SELECT 1 FROM executed AS e
            WHERE e.trace_id = q.trace_id AND e.tool_name = q.tool_name AND e.tool_call_id = q.tool_call_id
        ) AS id_matched
    FROM requests AS q
    JOIN short AS s ON s.trace_id = q.trace_id AND s.tool_name = q.tool_name
    JOIN model AS m ON m.trace_id = q.trace_id AND m.span_id = q.model_span_id
),
unmatched AS (
    SELECT
        c.*,
        row_number() OVER (
            PARTITION BY c.trace_id, c.tool_name
            ORDER BY c.model_start_time, c.model_span_id, c.message_order, c.part_order
        ) AS name_ordinal,
        (
            SELECT count(*) FROM executed AS e
            WHERE e.trace_id = c.trace_id AND e.tool_name = c.tool_name AND NOT EXISTS (
                SELECT 1 FROM candidates AS k
                WHERE k.trace_id = e.trace_id AND k.tool_call_id = e.tool_call_id AND k.id_matched
            )
        ) AS executions_left
    FROM candidates AS c
    WHERE NOT c.id_matched
),
ordered AS (
    SELECT
        r.*,
        row_number() OVER (
            PARTITION BY r.trace_id ORDER BY m.start_time, r.model_span_id, r.message_order, r.part_order
        ) AS request_index
    FROM requests AS r
    JOIN model AS m ON m.trace_id = r.trace_id AND m.span_id = r.model_span_id
    WHERE EXISTS (SELECT 1 FROM short AS s WHERE s.trace_id = r.trace_id)
)
SELECT
    u.trace_id,
    a.session_id,
    a.run_id,
    a.task_id,
    a.attempt,
    a.variant,
    o.request_index,
    u.model_span_id,
    u.model_start_time,
    u.model_end_time,
    u.source,
    u.tool_call_id,
    u.tool_name,
    u.tool_args
FROM unmatched AS u
JOIN attempts AS a ON a.trace_id = u.trace_id
JOIN ordered AS o
    ON o.trace_id = u.trace_id AND o.model_span_id = u.model_span_id
    AND o.message_order = u.message_order AND o.part_order = u.part_order
WHERE u.name_ordinal > u.executions_left;
