-- The requests model responses made for tool calls, one row each (an include of requested_tool_calls and
-- tool_call_gaps), over the including view's `model` (the model calls)
-- and `from_messages` (the tool_call parts of their output messages): `from_attributes` (ids and names
-- from tracevals.tool_calls.* where no messages were captured) and `req` (every request, with its
-- model call's times, its request_index and the id its answer carries).
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
listed AS MATERIALIZED (
    -- every request with its model call's times and its index; `unrepeated`: no later request's history holds its
    -- id (a call the conversation neither repeats nor answers by that id)
    SELECT
        u.*,
        c.start_time AS model_start_time,
        c.end_time AS model_end_time,
        row_number() OVER (
            PARTITION BY u.trace_id ORDER BY c.start_time, u.model_span_id, u.message_order, u.part_order
        ) AS request_index,
        NOT EXISTS (
            SELECT 1 FROM parts AS h
            WHERE h.trace_id = u.trace_id AND h.tool_call_id = u.tool_call_id AND h.direction = 'input'
        ) AS unrepeated
    FROM (SELECT * FROM from_messages UNION ALL SELECT * FROM from_attributes) AS u
    JOIN model AS c ON c.trace_id = u.trace_id AND c.span_id = u.model_span_id
),
unrepeated AS (
    -- those requests, numbered per tool and arguments, in the traces whose history repeats calls (arguments
    -- compared as JSON, minified, else as written: a malformed value is text, never an error)
    SELECT *, row_number() OVER (PARTITION BY trace_id, tool_name, args_key ORDER BY request_index) AS ordinal
    FROM (
        SELECT trace_id, request_index, tool_name,
               /*@ args_key(tool_args) @*/ AS args_key
        FROM listed
        WHERE unrepeated
          AND trace_id IN (SELECT trace_id FROM parts WHERE direction = 'input' AND part_type = 'tool_call')
    ) AS keyed
),
repeated AS (
    -- the calls later requests' history repeats, once each (the first copy), with the id their answers carry;
    -- those no request carries, numbered per tool and arguments in the order the history gives them
    SELECT trace_id, tool_call_id, tool_name, args_key,
           row_number() OVER (PARTITION BY trace_id, tool_name, args_key ORDER BY first_at) AS ordinal
    FROM (
        SELECT h.trace_id, h.tool_call_id, min_by(h.tool_name, (h.message_index, h.part_index)) AS tool_name,
               min_by(/*@ args_key(h.tool_args) @*/, (h.message_index, h.part_index)) AS args_key,
               min((h.message_index, h.part_index)) AS first_at
        FROM parts AS h
        WHERE h.direction = 'input' AND h.part_type = 'tool_call'
          AND h.trace_id IN (SELECT trace_id FROM unrepeated)
        GROUP BY h.trace_id, h.tool_call_id
    ) AS first_copies
    WHERE NOT EXISTS (
        SELECT 1 FROM listed AS l
        WHERE l.trace_id = first_copies.trace_id AND l.tool_call_id = first_copies.tool_call_id
    )
),
req AS (
    -- every request; one whose response recorded no id, or an id the conversation never answers by (a Responses
    -- API output item's own `fc_...`: its answer carries the call's `call_...`), takes the id of the same call,
    -- the n-th of that tool and arguments, as later requests' history repeats it
    SELECT l.* EXCLUDE (tool_call_id, unrepeated), coalesce(r.tool_call_id, l.tool_call_id) AS tool_call_id
    FROM listed AS l
    LEFT JOIN unrepeated AS u ON u.trace_id = l.trace_id AND u.request_index = l.request_index
    LEFT JOIN repeated AS r
        ON r.trace_id = u.trace_id AND r.tool_name = u.tool_name AND r.args_key = u.args_key AND r.ordinal = u.ordinal
)
