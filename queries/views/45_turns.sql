-- turns: one row per turn of a conversation: what the user said, what the agent answered, and what it did
-- in between. A turn is a trace, with the traces its spans' links join to it: some runtimes start a trace
-- per message delivery and join them by span links (AutoGen's), and a turn is then every trace of the run,
-- named by the earliest (`trace_id`).
--   user_text           the last user message with text in the first model call's input (out of the prompt a
--                       framework wraps it in, where one is declared)
--   final_text          the text of the turn's last model call, when that response asked for no tool; when
--                       it asked for tools that all ran after it (none a child of its span) and none failed, in a
--                       run whose root ended well, their results (an agent that ends on its tools': tool_ended);
--                       a turn that recorded no model call: the text its outermost agent span declares as its
--                       answer (and user_text its first agent span's input): agent_texts
--   intermediate_texts  non-empty text the model produced next to tool calls, in order (a response asked for
--                       tools by its tool-call parts, its finish reason, or a later call's history showing the
--                       text beside tool calls)
--   agents              the agents that ran in the turn (delegates included), sorted by name
--   tool_calls          the tool calls, in step order: name, args, result, is_error, error_type, is_gap. What
--                       no span recorded comes from the conversation: a result is the answer of the tool
--                       message for the call (by its id, or by the id of the model request it was matched to);
--                       arguments a span recorded as no object (a bare value, or none) are the request's;
--                       the calls one model response asked for are in the order it asked for them (a gap in
--                       its request's place, a retry beside the call it retries); a failed
--                       call of a framework that hands the model its error message (declared) has that result
--   input/output_tokens every model call counted once
-- turn_index numbers the turns of a session by start time (then trace id); a trace with no session id is a
-- session of its own, its turn 1. A turn whose every trace is a framework's set-up (`attempts.is_setup`:
-- `create_agent`, MCP `server/discover`; no trajectory either) is no turn.
-- Texts are NULL where no source recorded message content.
CREATE OR REPLACE VIEW turns AS
WITH
-- the views this one reads more than once, each computed once per query (inlined, a view is computed again at
-- every mention: on a lake read live, `steps` alone five times)
turn_attempts AS MATERIALIZED (SELECT * FROM attempts),
turn_facts AS MATERIALIZED (SELECT * FROM span_facts),
turn_parts AS MATERIALIZED (SELECT * FROM message_parts),
turn_steps AS MATERIALIZED (
    -- a failed call whose span recorded an empty value as its result (LangSmith's `{}` for a tool that raised)
    -- recorded none: its result is then what the conversation handed the model, as for a call with none
    SELECT * REPLACE (CASE WHEN is_error AND result IN ('{}', '[]', '""', 'null') THEN NULL ELSE result END AS result)
    FROM steps
),
turn_requests AS MATERIALIZED (SELECT * FROM requested_tool_calls),
links AS (
    -- trace -> an earlier trace one of its spans links to (a message delivery -> the one that sent it)
    SELECT DISTINCT r.trace_id, json_extract_string(l.value, '$.trace_id') AS linked_trace_id
    FROM (SELECT trace_id, links FROM raw_spans WHERE links <> '[]' AND links LIKE '[{%') AS r,
         json_each(r.links) AS l
),
joined AS (
    SELECT k.trace_id, k.linked_trace_id
    FROM links AS k
    JOIN turn_attempts AS a ON a.trace_id = k.trace_id
    JOIN turn_attempts AS b ON b.trace_id = k.linked_trace_id
    WHERE k.linked_trace_id <> k.trace_id AND (b.start_time, b.trace_id) < (a.start_time, a.trace_id)
      -- a link to a framework's set-up that created an agent and ran nothing (LangGraph's every run links to its
      -- `create_agent` trace) joins no turn; a runtime's message deliveries (AutoGen's) ran nothing either, and do
      AND NOT (b.is_setup AND EXISTS (
          SELECT 1 FROM turn_facts AS f WHERE f.trace_id = b.trace_id AND f.operation = 'create_agent'
      ))
),
turn_of AS (
    -- each trace's turn: the earliest trace its links lead back to (a bounded walk: a cycle cannot loop)
    WITH RECURSIVE up(trace_id, root_id, depth) AS (
        SELECT trace_id, trace_id, 0 FROM turn_attempts
        UNION ALL
        SELECT u.trace_id, j.linked_trace_id, u.depth + 1
        FROM up AS u JOIN joined AS j ON j.trace_id = u.root_id
        WHERE u.depth < 64
    )
    SELECT u.trace_id, min_by(u.root_id, (a.start_time, a.root_id)) AS turn_id
    FROM up AS u
    JOIN (SELECT trace_id AS root_id, start_time FROM turn_attempts) AS a ON a.root_id = u.root_id
    GROUP BY u.trace_id
),
parts AS (
    -- read once, shared by responses, user_messages and answers
    SELECT trace_id, call_span_id, direction, role, message_index, part_index, part_type, content, tool_call_id,
           tool_name, tool_response, finish_reason
    FROM turn_parts
    WHERE (direction = 'output' AND role = 'assistant') OR (direction = 'input' AND role = 'user')
       OR (direction = 'input' AND part_type = 'tool_call_response' AND tool_call_id IS NOT NULL)
),
answer_parts AS (SELECT * FROM parts WHERE part_type = 'tool_call_response'),
answers AS (
    -- what the tool message answering a call said, for a call no span recorded the result of (a framework
    -- without tool spans: its request's id); steps already holds it for a request no span executed
    /*@ include(tool_answer_rows) @*/
),
errors AS (
    -- a failed tool's error message, of a framework that hands the model that message as the tool's result (the
    -- AI SDK, Mastra: declared, `error_results`), for a call neither its spans nor the conversation say the result of
    SELECT trace_id, span_id, min(status_message) AS message
    FROM raw_spans
    WHERE kind = 'tool' AND status_code = 'error' AND /*@ error_results(dialect) @*/
      AND status_message <> '' AND NOT /*@ placeholder(status_message) @*/
    GROUP BY trace_id, span_id
),
calls AS (
    SELECT
        t.turn_id, m.trace_id, m.span_id, m.end_time, m.input_tokens, m.output_tokens, m.cost_usd,
        row_number() OVER (PARTITION BY t.turn_id ORDER BY m.start_time, m.span_id) AS call_order,
        row_number() OVER (PARTITION BY t.turn_id ORDER BY m.start_time DESC, m.span_id DESC) AS call_order_desc
    FROM model_calls AS m
    JOIN turn_of AS t ON t.trace_id = m.trace_id
),
asked_in_history AS (
    -- the texts a later call's history shows beside tool calls in one assistant message: answers that asked for
    -- tools, whatever their own call recorded (the OTel v2 bridge of the OpenAI Agents SDK keeps the text alone)
    SELECT DISTINCT p.trace_id, p.content
    FROM turn_parts AS p
    WHERE p.direction = 'input' AND p.role = 'assistant' AND p.part_type = 'text' AND p.content <> ''
      AND EXISTS (
          SELECT 1 FROM turn_parts AS c
          WHERE c.trace_id = p.trace_id AND c.call_span_id = p.call_span_id AND c.direction = 'input'
            AND c.message_index = p.message_index AND c.part_type = 'tool_call'
      )
),
agent_text_facts AS (SELECT trace_id, kind FROM turn_facts),
agent_texts AS (/*@ include(agent_texts) @*/),  -- a trace with no model call: what its agent spans say
turn_agent_texts AS (
    SELECT t.turn_id,
           min_by(x.input_text, (a.start_time, a.trace_id)) FILTER (WHERE x.input_text IS NOT NULL) AS user_text,
           max_by(x.output_text, (a.start_time, a.trace_id)) FILTER (WHERE x.output_text IS NOT NULL) AS final_text
    FROM agent_texts AS x
    JOIN turn_of AS t ON t.trace_id = x.trace_id
    JOIN turn_attempts AS a ON a.trace_id = x.trace_id
    GROUP BY t.turn_id
),
output_parts AS (SELECT * FROM parts WHERE direction = 'output'),
answered AS (/*@ include(response_texts) @*/),
responses AS (
    SELECT r.trace_id, r.call_span_id, r.text,
           r.tool_asks + CASE WHEN h.content IS NOT NULL AND r.tool_asks = 0 THEN 1 ELSE 0 END AS tool_asks
    FROM answered AS r
    LEFT JOIN asked_in_history AS h ON h.trace_id = r.trace_id AND h.content = r.text
),
tool_ended_calls AS (
    SELECT c.trace_id, c.span_id, c.end_time
    FROM calls AS c JOIN turn_attempts AS a ON a.trace_id = c.trace_id
    WHERE c.call_order_desc = 1 AND a.status = 'ok'
),
tool_ended_requests AS (SELECT * FROM turn_requests),
tool_ended_tools AS (
    SELECT s.trace_id, s.span_id, f.parent_span_id, s.start_time, s.result, s.is_error
    FROM turn_steps AS s
    JOIN (SELECT trace_id, span_id, any_value(parent_span_id) AS parent_span_id FROM turn_facts GROUP BY ALL) AS f
        ON f.trace_id = s.trace_id AND f.span_id = s.span_id
    WHERE s.step_kind = 'tool' AND NOT s.is_gap
),
tool_ended AS (/*@ include(tool_ended) @*/),  -- a turn that ended on its tools' results
user_messages AS (
    SELECT trace_id, call_span_id, message_index, string_agg(content, chr(10) ORDER BY part_index) AS text
    FROM parts
    WHERE direction = 'input' AND part_type = 'text'
    GROUP BY trace_id, call_span_id, message_index
),
per_turn AS (
    SELECT
        c.turn_id,
        -- a framework's prompt around the user's text (CrewAI's task prompt, smolagents' `New task:`) unwrapped
        max(/*@ user_text(u.text) @*/) FILTER (WHERE c.call_order = 1) AS user_text,
        max(CASE WHEN coalesce(r.tool_asks, 0) = 0 THEN r.text ELSE e.text END)
            FILTER (WHERE c.call_order_desc = 1) AS final_text,
        list(r.text ORDER BY c.call_order) FILTER (WHERE r.tool_asks > 0 AND r.text IS NOT NULL)
            AS intermediate_texts,
        count(*) AS model_call_count,
        CAST(sum(c.input_tokens) AS BIGINT) AS input_tokens,
        CAST(sum(c.output_tokens) AS BIGINT) AS output_tokens,
        CAST(sum(CAST(c.cost_usd AS DECIMAL(38, 15))) AS DOUBLE) AS cost_usd  -- exact: the same in any order
    FROM calls AS c
    LEFT JOIN responses AS r ON r.trace_id = c.trace_id AND r.call_span_id = c.span_id
    LEFT JOIN tool_ended AS e ON e.trace_id = c.trace_id AND e.call_span_id = c.span_id
    LEFT JOIN (
        SELECT trace_id, call_span_id, max_by(text, message_index) AS text
        FROM user_messages
        GROUP BY trace_id, call_span_id
    ) AS u ON u.trace_id = c.trace_id AND u.call_span_id = c.span_id
    GROUP BY c.turn_id
),
agent_spans AS (
    -- the agent spans that name an agent: an agent span named by its operation alone (OpenLIT's `invoke_agent` for
    -- the OpenAI Agents SDK's task and turn spans) names none, and the walk below goes past it to the one above
    SELECT trace_id, span_id, agent
    FROM (
        SELECT trace_id, span_id,
               coalesce(agent_name, entity_name,
                        -- no agent name attribute: the span's name says it (`invoke_agent x`, smolagents' `x.run`
                        -- ...: the declared patterns, tracevals/spans/dialects/)
                        CASE WHEN name <> coalesce(operation, '') THEN nullif(/*@ agent_from_span_name(name) @*/, '')
                        END) AS agent
        FROM raw_spans  -- narrow columns of the files, no fact extraction (copies of a span give the same name)
        WHERE kind = 'agent' AND coalesce(operation, '') <> 'create_agent'
    ) AS named
    WHERE agent IS NOT NULL
),
walk AS (
    -- from each model and tool call up its parents to the first agent span: the agent that made the call
    -- (a wrapper around the request, an outer A2A server's invoke_agent, is farther up and never reached).
    -- Eight hops, and never through a cycle's span twice (the depth bound ends any loop).
    WITH RECURSIVE up(trace_id, call_id, span_id, depth) AS (
        SELECT trace_id, span_id, parent_span_id, 1
        FROM turn_facts
        WHERE kind IN ('llm', 'tool') AND call_depth = 0 AND parent_span_id IS NOT NULL
        UNION ALL
        SELECT u.trace_id, u.call_id, s.parent_span_id, u.depth + 1
        FROM up AS u
        JOIN (SELECT DISTINCT trace_id, span_id, parent_span_id FROM raw_spans) AS s
            ON s.trace_id = u.trace_id AND s.span_id = u.span_id
        WHERE u.depth < 8 AND s.parent_span_id IS NOT NULL AND s.span_id <> s.parent_span_id
          AND NOT EXISTS (SELECT 1 FROM agent_spans AS a WHERE a.trace_id = u.trace_id AND a.span_id = u.span_id)
    )
    SELECT u.trace_id, u.call_id, min_by(a.agent, u.depth) AS agent
    FROM up AS u
    JOIN agent_spans AS a ON a.trace_id = u.trace_id AND a.span_id = u.span_id
    GROUP BY u.trace_id, u.call_id
),
agents AS (
    -- The agents that ran: for each model or tool call, the agent span it ran under (the nearest above it),
    -- else the agent name the call's own span carries. Only when no call has either: the agent spans, then
    -- any span's agent name, then any span's entity name (OpenLLMetry names every task so: an agent name the
    -- steps' events give, LlamaIndex's, comes first)
    SELECT
        t.turn_id,
        CASE WHEN bool_or(rank = 1) THEN list(DISTINCT agent ORDER BY agent) FILTER (WHERE rank = 1)
             WHEN bool_or(rank = 2) THEN list(DISTINCT agent ORDER BY agent) FILTER (WHERE rank = 2)
             WHEN bool_or(rank = 3) THEN list(DISTINCT agent ORDER BY agent) FILTER (WHERE rank = 3)
             ELSE list(DISTINCT agent ORDER BY agent) END AS agents
    FROM (
        SELECT f.trace_id, coalesce(w.agent, f.agent_name) AS agent, 1 AS rank
        FROM turn_facts AS f
        LEFT JOIN walk AS w ON w.trace_id = f.trace_id AND w.call_id = f.span_id
        WHERE f.kind IN ('llm', 'tool') AND f.call_depth = 0
        UNION ALL
        SELECT trace_id, agent, 2 FROM agent_spans
        UNION ALL
        SELECT trace_id, agent_name, 3 FROM turn_facts
        UNION ALL
        SELECT trace_id, entity_name, 4 FROM turn_facts
    ) AS named
    JOIN turn_of AS t ON t.trace_id = named.trace_id
    WHERE agent IS NOT NULL
    GROUP BY t.turn_id
),
requests AS (
    -- the model request each executed call answers: its id and arguments, for what the call's own spans did not
    -- record. A span that recorded a bare argument value (LangGraph's one-argument tools) is the request of its
    -- tool whose arguments hold that value; any other, the request requested_tool_calls matched it to (by id,
    -- or the n-th request for a tool to its n-th execution)
    SELECT s.trace_id, s.span_id AS executed_span_id, min_by(r.tool_call_id, r.request_index) AS tool_call_id,
           min_by(r.tool_args, r.request_index) AS tool_args, min(r.request_index) AS request_index,
           min(r.model_start_time) AS model_start_time
    FROM turn_steps AS s
    JOIN turn_requests AS r ON r.trace_id = s.trace_id AND r.tool_name = s.name
    WHERE NOT s.is_gap AND s.step_kind = 'tool' AND s.args IS NOT NULL
      AND coalesce(json_type(try_cast(s.args AS JSON)), 'VARCHAR') NOT IN ('OBJECT', 'ARRAY')
      AND list_contains(CAST(json_extract_string(try_cast(r.tool_args AS JSON), '$.*') AS VARCHAR[]), s.args)
    GROUP BY s.trace_id, s.span_id
    UNION ALL
    SELECT trace_id, executed_span_id, min_by(tool_call_id, request_index), min_by(tool_args, request_index),
           min(request_index), min(model_start_time)
    FROM turn_requests AS r
    WHERE executed_span_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM turn_steps AS s
        WHERE s.trace_id = r.trace_id AND s.span_id = r.executed_span_id AND s.args IS NOT NULL
          AND coalesce(json_type(try_cast(s.args AS JSON)), 'VARCHAR') NOT IN ('OBJECT', 'ARRAY')
    )
    GROUP BY trace_id, executed_span_id
),
asked AS (
    -- each tool step of a turn with the request that asked for it: the model call's start and the request's
    -- index in its trace (an executed call: the request it was matched to; a gap: the request it is). An
    -- execution no request was matched to repeating a tool called before in its trace (a retry) keeps the
    -- key of that call, so it stands beside the call it retries; any other keeps its own start.
    SELECT
        s.*, t.turn_id, a.start_time AS trace_start, q.tool_args AS requested_args,
        w.tool_response AS answered_by_id, v.tool_response AS answered_by_request, e.message AS error_message,
        coalesce(
            q.model_start_time, m.start_time,
            last_value(coalesce(q.model_start_time, m.start_time) IGNORE NULLS) OVER previous_calls, s.start_time
        ) AS ask_time,
        coalesce(
            q.request_index, CASE WHEN s.is_gap THEN s.request_index END,
            last_value(coalesce(q.request_index, CASE WHEN s.is_gap THEN s.request_index END) IGNORE NULLS)
                OVER previous_calls
        ) AS ask_index
    FROM turn_steps AS s
    JOIN turn_of AS t ON t.trace_id = s.trace_id
    JOIN turn_attempts AS a ON a.trace_id = s.trace_id
    LEFT JOIN requests AS q ON NOT s.is_gap AND q.trace_id = s.trace_id AND q.executed_span_id = s.span_id
    LEFT JOIN turn_steps AS m
        ON s.is_gap AND m.trace_id = s.trace_id AND m.span_id = s.requested_by_span_id AND m.step_kind = 'llm'
    LEFT JOIN answers AS w ON s.result IS NULL AND w.trace_id = s.trace_id AND w.tool_call_id = s.tool_call_id
    LEFT JOIN answers AS v
        ON s.result IS NULL AND v.trace_id = s.trace_id AND v.tool_call_id = q.tool_call_id
    LEFT JOIN errors AS e ON s.result IS NULL AND s.is_error AND e.trace_id = s.trace_id AND e.span_id = s.span_id
    WHERE s.step_kind = 'tool'
    WINDOW previous_calls AS (
        PARTITION BY s.trace_id, s.name ORDER BY s.start_time, s.step_index ROWS UNBOUNDED PRECEDING
    )
),
tools AS (
    SELECT
        turn_id,
        list(
            struct_pack(
                name := name,
                args := CASE WHEN args IS NULL OR coalesce(json_type(try_cast(args AS JSON)), 'VARCHAR')
                                                  NOT IN ('OBJECT', 'ARRAY')
                             THEN coalesce(requested_args, args) ELSE args END,
                result := coalesce(result, answered_by_id, answered_by_request, error_message),
                is_error := is_error, error_type := error_type, is_gap := is_gap,
                tool_call_id := tool_call_id, span_id := span_id
            )
            -- the calls one model response asked for (a parallel batch, started in any order) in the order asked
            ORDER BY trace_start, trace_id, ask_time, ask_index NULLS LAST, start_time, step_index
        ) AS tool_calls,
        count(*) FILTER (WHERE NOT is_gap) AS tool_call_count,
        count(*) FILTER (WHERE is_gap) AS gap_count
    FROM asked
    GROUP BY turn_id
),
spans_of_turn AS (
    SELECT t.turn_id, min(a.start_time) AS start_time, max(a.end_time) AS end_time,
           -- a framework's set-up in every trace of it (attempts.is_setup: the rule trajectories read)
           bool_and(a.is_setup) AS is_setup
    FROM turn_attempts AS a
    JOIN turn_of AS t ON t.trace_id = a.trace_id
    GROUP BY t.turn_id
)
SELECT
    a.session_id,
    -- a trace without a session id is a session of its own (the sessions' key, as the loader's)
    row_number() OVER (PARTITION BY coalesce(a.session_id, a.trace_id) ORDER BY o.start_time, a.trace_id) AS turn_index,
    a.trace_id,
    a.run_id,
    a.task_id,
    a.attempt,
    a.variant,
    -- a turn that recorded no model call: what its agent spans say it was asked and answered (agent_texts)
    coalesce(p.user_text, CASE WHEN coalesce(p.model_call_count, 0) = 0 THEN x.user_text END) AS user_text,
    coalesce(p.final_text, CASE WHEN coalesce(p.model_call_count, 0) = 0 THEN x.final_text END) AS final_text,
    coalesce(p.intermediate_texts, []) AS intermediate_texts,
    coalesce(g.agents, []) AS agents,
    coalesce(t.tool_calls, []) AS tool_calls,
    coalesce(t.tool_call_count, 0) AS tool_call_count,
    coalesce(t.gap_count, 0) AS gap_count,
    coalesce(p.model_call_count, 0) AS model_call_count,
    coalesce(p.input_tokens, 0) AS input_tokens,
    coalesce(p.output_tokens, 0) AS output_tokens,
    coalesce(p.cost_usd, 0) AS cost_usd,
    a.root_error_type AS error_type,
    o.start_time,
    o.end_time
FROM turn_attempts AS a
JOIN spans_of_turn AS o ON o.turn_id = a.trace_id  -- a turn is named by its first trace
LEFT JOIN per_turn AS p ON p.turn_id = a.trace_id
LEFT JOIN agents AS g ON g.turn_id = a.trace_id
LEFT JOIN tools AS t ON t.turn_id = a.trace_id
LEFT JOIN turn_agent_texts AS x ON x.turn_id = a.trace_id
-- a trace of session-end markers only is not a turn, nor a framework's set-up (`create_agent`, an MCP client's
-- `server/discover` and `tools/list`): the attempts no trajectory is built of (attempts.is_setup), one rule
WHERE NOT a.is_end_marker AND NOT o.is_setup;
