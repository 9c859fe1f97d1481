-- tool_call_gaps: tool calls a model asked for that no span executed, rebuilt from the message parts
-- (name, id, arguments when captured): the requests requested_tool_calls flags is_gap, by the same
-- matching (by tool call id, then the n-th unmatched request for a tool to its n-th unmatched
-- execution), computed the cheap way. request_index, answered, answer: as in requested_tool_calls.
--
-- The matching runs only on the traces that can have a gap. A trace whose every request (from
-- tracevals.tool_calls.*) has a tool call id, each the id of one of its executed calls, has none: every
-- request is matched by its id. One pass over the trace's calls sets those traces aside; the others (a
-- request without an id, or with an id nothing executed, or requests read from captured messages) are
-- matched request by request.
-- A CTE named more than once is MATERIALIZED: computed once (left unmarked, DuckDB may write a simple one
-- out at each name, and the views it reads with it), and counted once by `materialize.scans`.
CREATE OR REPLACE VIEW tool_call_gaps AS
WITH /*@ include(request_parts) @*/,
uneven AS MATERIALIZED (
    SELECT trace_id
    FROM (
        SELECT
            trace_id,
            sum(len(requested_tool_names)) FILTER (WHERE kind = 'llm') AS asked,
            bool_and(
                coalesce(len(requested_tool_call_ids), 0) = len(requested_tool_names)
                AND coalesce(list_aggregate(requested_tool_call_ids, 'count'), 0) = len(requested_tool_names)
            ) FILTER (WHERE kind = 'llm' AND len(requested_tool_names) > 0) AS every_id,
            flatten(list(requested_tool_call_ids) FILTER (WHERE kind = 'llm')) AS asked_ids,
            list(tool_call_id) FILTER (WHERE kind = 'tool' AND call_depth = 0) AS ran_ids
        FROM span_facts
        WHERE kind IN ('llm', 'tool')
        GROUP BY trace_id
    ) AS calls
    WHERE asked > 0 AND NOT (every_id AND coalesce(list_has_all(ran_ids, asked_ids), FALSE))
    UNION
    SELECT trace_id FROM from_messages
),
model AS MATERIALIZED (
    SELECT trace_id, span_id, call_span_id, start_time, end_time, requested_tool_call_ids, requested_tool_names
    FROM span_facts
    WHERE kind = 'llm' AND trace_id IN (SELECT trace_id FROM uneven)
),
answer_parts AS (
    SELECT * FROM parts
    WHERE direction = 'input' AND part_type = 'tool_call_response' AND tool_call_id IS NOT NULL
      AND trace_id IN (SELECT trace_id FROM uneven)
),
answers AS (/*@ include(tool_answer_rows) @*/),
answered_ids AS (
    SELECT DISTINCT trace_id, unnest(answered_tool_call_ids) AS tool_call_id
    FROM span_facts
    WHERE kind = 'llm' AND len(answered_tool_call_ids) > 0 AND trace_id IN (SELECT trace_id FROM uneven)
),
-- from here on requested_tool_calls' matching, over the uneven traces only
/*@ include(request_rows) @*/,
/*@ include(answers_by_place) @*/,
exe AS MATERIALIZED (
    -- the executed calls, as tool_calls collapses them (name, id and start of the outermost span first),
    -- computed here over the uneven traces only
    SELECT
        trace_id,
        call_span_id AS span_id,
        min_by(tool_call_id, call_depth) FILTER (WHERE tool_call_id IS NOT NULL) AS tool_call_id,
        coalesce(
            max(tool_name) FILTER (WHERE call_depth = 0),
            min_by(tool_name, call_depth) FILTER (WHERE tool_name IS NOT NULL)
        ) AS tool_name,
        max(start_time) FILTER (WHERE call_depth = 0) AS start_time
    FROM span_facts
    WHERE kind = 'tool' AND trace_id IN (SELECT trace_id FROM uneven)
    GROUP BY trace_id, call_span_id
),
/*@ include(request_matching) @*/
SELECT
    /*@ include(request_columns) @*/,
    /*@ include(answer_columns) @*/
FROM req_rest AS r
JOIN attempts AS a ON a.trace_id = r.trace_id
LEFT JOIN answers AS w ON w.trace_id = r.trace_id AND w.tool_call_id = r.tool_call_id
LEFT JOIN answered_ids AS k ON k.trace_id = r.trace_id AND k.tool_call_id = r.tool_call_id
LEFT JOIN by_place AS p ON p.trace_id = r.trace_id AND p.request_index = r.request_index
WHERE NOT EXISTS (
    SELECT 1 FROM exe_rest AS e
    WHERE e.trace_id = r.trace_id AND e.tool_name = r.tool_name AND e.name_ordinal = r.name_ordinal
)
  -- an agent hand-off the framework carried out as the next agent's run, not as a tool span (OpenAI Agents
  -- SDK's, LangGraph supervisor's `transfer_to_<agent>`): answered, so no gap
  AND NOT (
      starts_with(r.tool_name, 'transfer_to')
      AND EXISTS (
          SELECT 1 FROM span_facts AS g
          WHERE g.trace_id = r.trace_id AND g.kind = 'agent' AND g.start_time >= r.model_end_time
      )
  )
  -- nor a request for a tool a framework declares no call (smolagents' `final_answer`: the answer itself)
  AND NOT coalesce(/*@ not_call(r.tool_name) @*/, FALSE);
