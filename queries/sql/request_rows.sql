-- The requests model responses made for tool calls, one row each (an include of requested_tool_calls and
-- tool_call_gaps), over the including view's `model` (the model calls)
-- and `from_messages` (the tool_call parts of their output messages): `from_attributes` (ids and names
-- from tracevals.tool_calls.* where no messages were captured) and `req` (every request, with its
-- model call's times and its request_index).
from_attributes AS (
    -- ids and names only, recorded whatever the content setting; for the model calls whose messages
    -- were not captured. (A select-list unnest: DuckDB plans UNNEST ... WITH ORDINALITY as a join.)
    SELECT trace_id, model_span_id, 'span:tracevals.tool_calls' AS source, 0 AS message_order,
           CAST(i AS INTEGER) AS part_order, ids[i] AS tool_call_id, names[i] AS tool_name,
           CAST(NULL AS VARCHAR) AS tool_args
    FROM (
        SELECT m.trace_id, m.call_span_id AS model_span_id, m.requested_tool_call_ids AS ids,
               m.requested_tool_names AS names, unnest(range(1, len(m.requested_tool_names) + 1)) AS i
        FROM model AS m
        LEFT JOIN (SELECT DISTINCT trace_id, model_span_id FROM from_messages) AS x
            ON x.trace_id = m.trace_id AND x.model_span_id = m.call_span_id
        WHERE x.trace_id IS NULL AND len(m.requested_tool_names) > 0
    ) AS listed
),
req AS (
    SELECT
        u.*,
        c.start_time AS model_start_time,
        c.end_time AS model_end_time,
        row_number() OVER (
            PARTITION BY u.trace_id ORDER BY c.start_time, u.model_span_id, u.message_order, u.part_order
        ) AS request_index
    FROM (SELECT * FROM from_messages UNION ALL SELECT * FROM from_attributes) AS u
    JOIN model AS c ON c.trace_id = u.trace_id AND c.span_id = u.model_span_id
)
