-- message_parts: the messages of every model call, one row per part, from the best source the lake
-- holds for that call (see message_sources for the order). Nested spans of one call share it: a log
-- record on the provider's `generate_content` span and ADK's attributes on the `call_llm` wrapper
-- describe the same model call.
--
-- Every shape is read into the same columns:
--   GenAI   {"role", "parts": [{"type": "text", "content"}, {"type": "tool_call", "id", "name",
--           "arguments"}, {"type": "tool_call_response", "id", "response"}]}
--   OpenAI  {"role", "content": "..." | [{"type": "text", "text"}], "tool_calls": [{"id",
--           "function": {"name", "arguments"}}], "tool_call_id"}
--   Gemini  {"role": "user" | "model", "parts": [{"text"}, {"function_call": {"name", "args"}},
--           {"function_response": {"name", "response"}}]}
--   Bedrock {"role", "content": [{"text"}, {"toolUse": {"toolUseId", "name", "input"}},
--           {"toolResult": {"toolUseId", "content"}}]} (also as a JSON string: Strands' span events)
--   and each framework's declared part shapes (tracevals/spans/dialects/: Vercel AI SDK's {"type": "tool-call",
--           "toolCallId", "toolName", "input"} / {"type": "tool-result", "output"}, Haystack's {"tool_call": {...}}
--           / {"tool_call_result": {...}} ...): the marked places below are generated from them.
-- part_type: text | tool_call | tool_call_response | whatever else the part calls itself.
-- tool_args / tool_response are JSON text (a JSON string argument is unwrapped to the JSON it holds); a text,
-- argument or response that is a placeholder (`<elided>` ...) is NULL: no content. finish_reason: the message's
-- own (`$.finish_reason`), on each of its parts.
CREATE OR REPLACE VIEW message_parts AS
WITH messages AS (
    SELECT
        m.*,
        c.call_span_id,
        -- an item that is one call or one result and no message (OpenAI's Responses API: its request's `input`
        -- and its response's `output` list `function_call` and `function_call_output` items beside the messages)
        -- is its own one part, the model's call or the tool's answer
        CASE WHEN json_type(m.message, '$.role') IS NULL THEN CASE
            WHEN json_extract_string(m.message, '$.type') IN (/*@ call_types @*/) THEN 'assistant'
            WHEN json_extract_string(m.message, '$.type') IN (/*@ result_types @*/) THEN 'tool'
        END END AS item_role,
        CASE lower(coalesce(json_extract_string(m.message, '$.role'), m.role_hint))
            WHEN 'model' THEN 'assistant'
            WHEN 'ai' THEN 'assistant'
            WHEN 'human' THEN 'user'
            ELSE lower(coalesce(
                json_extract_string(m.message, '$.role'),
                item_role,
                m.role_hint,
                CASE WHEN m.direction = 'output' THEN 'assistant' END
            ))
        END AS role,
        dense_rank() OVER (
            PARTITION BY m.trace_id, c.call_span_id, m.direction ORDER BY m.priority, m.source, m.span_id
        ) AS source_rank
    FROM message_sources AS m
    JOIN call_spans AS c ON c.trace_id = m.trace_id AND c.span_id = m.span_id
    WHERE c.kind = 'llm'
      -- a reply that says nothing (GenAI's `"parts": []` and nothing else: LiteLLM writes a reply that asks for
      -- tools so, its calls only in its flattened gen_ai.completion.N) is no message: a source of such alone
      -- yields to the next (cheap tests first: most messages are input, most replies say something)
      AND NOT coalesce(
          m.direction = 'output' AND contains(CAST(m.message AS VARCHAR), '"parts":[]')
          AND json_array_length(m.message, '$.parts') = 0
          AND json_type(m.message, '$.content') IS NULL AND json_type(m.message, '$.tool_calls') IS NULL,
          FALSE
      )
),
parts AS (
    SELECT m.*, p.part, CAST(p.ordinal - 1 AS INTEGER) AS part_index
    FROM messages AS m,
         UNNEST(list_concat(
             CASE WHEN json_type(m.message, '$.parts') = 'ARRAY' THEN json_extract(m.message, '$.parts[*]') ELSE [] END,
             CASE json_type(m.message, '$.content')
                 -- content blocks recorded as a JSON string ('[{"text": ...}, {"toolUse": ...}]': Bedrock
                 -- Converse, Strands) are the blocks, not one text
                 WHEN 'VARCHAR' THEN CASE
                     WHEN json_extract_string(m.message, '$.content') LIKE '[{%'
                         AND json_type(try_cast(json_extract_string(m.message, '$.content') AS JSON)) = 'ARRAY'
                         THEN json_extract(try_cast(json_extract_string(m.message, '$.content') AS JSON), '$[*]')
                     ELSE [json_extract(m.message, '$.content')]
                 END
                 WHEN 'ARRAY' THEN json_extract(m.message, '$.content[*]')
                 ELSE []
             END,
             CASE
                 WHEN json_type(m.message, '$.tool_calls') = 'ARRAY' THEN json_extract(m.message, '$.tool_calls[*]')
                 ELSE []
             END,
             -- a framework's own message shape: its text and tool calls under other names (declared)
             /*@ message_parts(m.message) @*/,
             CASE WHEN m.item_role IS NOT NULL THEN [m.message] ELSE [] END,
             -- a tool message that kept only the id of the call it answers (content not captured: OpenTelemetry's
             -- OpenAI instrumentations, Python's legacy events and Node's), or not even that (OpenInference's
             -- Haystack: its role alone), still says a call was answered: one response part without content
             -- (the lists above all empty: no parts, no content, no calls, none of a framework's shape); one
             -- without an id answers by its place (`by_place` of requested_tool_calls)
             CASE WHEN m.role = 'tool' AND m.item_role IS NULL AND json_type(m.message, '$.parts') IS NULL
                       AND coalesce(json_type(m.message, '$.content'), 'NULL') = 'NULL'
                       AND coalesce(json_type(m.message, '$.tool_calls'), 'NULL') = 'NULL'
                       AND len(list_concat(/*@ message_parts(m.message) @*/)) = 0
                  THEN ['{}'::JSON] ELSE [] END
         )) WITH ORDINALITY AS p(part, ordinal)
    WHERE m.source_rank = 1
),
typed AS (
    -- a part's arguments and response are looked for only in the parts of the kind that has them (most parts
    -- are text, and each look parses the part's JSON)
    SELECT
        *,
        CASE WHEN part_type = 'tool_call' THEN coalesce(
            /*@ args(part) @*/
        ) END AS args_json,
        CASE WHEN part_type = 'tool_call_response' THEN coalesce(
            /*@ results(part) @*/,
            CASE WHEN json_type(part) = 'VARCHAR' THEN part END,
            json_extract(part, '$.content'),
            json_extract(part, '$.text')
        ) END AS response_json
    FROM (
        SELECT
            *,
            CASE
                WHEN json_type(part) = 'VARCHAR' AND role = 'tool' THEN 'tool_call_response'
                WHEN json_type(part) = 'VARCHAR' THEN 'text'
                WHEN /*@ call_type(part) @*/ THEN 'tool_call'
                WHEN /*@ result_type(part) @*/ THEN 'tool_call_response'
                WHEN role = 'tool' THEN 'tool_call_response'
                -- OpenAI's Responses API calls a message's text parts `input_text` and `output_text`
                WHEN json_extract_string(part, '$.type') IN ('text', 'input_text', 'output_text')
                    OR (json_type(part, '$.type') IS NULL AND json_type(part, '$.text') = 'VARCHAR') THEN 'text'
                ELSE coalesce(json_extract_string(part, '$.type'), 'other')
            END AS part_type
        FROM parts
    ) AS kinds
),
valued AS MATERIALIZED (  -- named twice: computed once, with the columns the view gives only
    SELECT
        trace_id, call_span_id, span_id, source, direction, message_index, role, part_index, part_type, part,
        -- why the model stopped, where the message says (GenAI's output messages: `tool_call`, `stop` ...)
        json_extract_string(message, '$.finish_reason') AS finish_reason,
        CASE
            WHEN part_type = 'text' THEN coalesce(
                CASE WHEN json_type(part) = 'VARCHAR' THEN json_extract_string(part, '$') END,
                json_extract_string(part, '$.content'),
                json_extract_string(part, '$.text')
            )
        END AS text_value,
        CASE WHEN part_type IN ('tool_call', 'tool_call_response') THEN coalesce(
            /*@ ids(part) @*/,
            json_extract_string(part, '$.tool_call_id'),
            json_extract_string(message, '$.tool_call_id'),
            -- some instrumentations name the call a tool message answers `id` (on a tool message only: an
            -- assistant message's id is the message's own)
            CASE WHEN role = 'tool' THEN json_extract_string(message, '$.id') END
        ) END AS tool_call_id,
        CASE WHEN part_type IN ('tool_call', 'tool_call_response') THEN coalesce(
            /*@ names(part) @*/,
            json_extract_string(message, '$.name')
        ) END AS tool_name,
        CASE WHEN part_type = 'tool_call' THEN
            CASE WHEN json_type(args_json) = 'VARCHAR' THEN json_extract_string(args_json, '$')
                 ELSE CAST(args_json AS VARCHAR) END
        END AS args_value,
        CASE WHEN part_type = 'tool_call_response' THEN
            CASE WHEN json_type(response_json) = 'VARCHAR' THEN json_extract_string(response_json, '$')
                 ELSE CAST(response_json AS VARCHAR) END
        END AS response_value,
        -- a call's id: the one it was given, else (none, or '') in a model call's input one known by where the
        -- conversation holds it (the same in every later request's history); an answer's, the one it was given
        CASE WHEN direction = 'input' AND part_type = 'tool_call'
             THEN coalesce(nullif(tool_call_id, ''), 'tv:' || message_index || '.' || part_index)
             ELSE nullif(tool_call_id, '') END AS own_id
    FROM typed
),
tool_parts AS MATERIALIZED (
    -- the tool parts of each model call's input (its conversation so far), with their ids
    SELECT trace_id, call_span_id, message_index, part_index, part_type, tool_name, own_id
    FROM valued
    WHERE direction = 'input' AND part_type IN ('tool_call', 'tool_call_response')
),
suspect AS (
    -- the model calls whose conversation holds an answer by an id no call of it carries (none at all, '', or one its
    -- instrumentation made up apart from the call's: OpenTelemetry's Gen AI SDK instrumentation numbers a Gemini
    -- call and its answer each by its place in its own message, so an answer's id may even be another call's)
    SELECT DISTINCT a.trace_id, a.call_span_id
    FROM tool_parts AS a
    WHERE a.part_type = 'tool_call_response' AND NOT EXISTS (
        SELECT 1 FROM tool_parts AS c
        WHERE c.part_type = 'tool_call' AND c.trace_id = a.trace_id AND c.call_span_id = a.call_span_id
          AND c.own_id = a.own_id
    )
),
blocks AS MATERIALIZED (
    -- their tool parts in conversation order, cut into blocks: a run of calls and the answers after it (a call after
    -- an answer starts the next block)
    SELECT *, sum(CASE WHEN part_type = 'tool_call' AND prev_type IS DISTINCT FROM 'tool_call' THEN 1 ELSE 0 END)
                  OVER (PARTITION BY trace_id, call_span_id ORDER BY message_index, part_index) AS block
    FROM (
        SELECT t.*,
               lag(t.part_type) OVER (
                   PARTITION BY t.trace_id, t.call_span_id ORDER BY t.message_index, t.part_index
               ) AS prev_type
        FROM tool_parts AS t
        SEMI JOIN suspect AS s ON s.trace_id = t.trace_id AND s.call_span_id = t.call_span_id
    ) AS ordered
),
judged AS MATERIALIZED (
    -- each answer: whether its id is one of its block's calls', or of a call of another block (an answer given later)
    SELECT a.trace_id, a.call_span_id, a.block, a.message_index, a.part_index,
           coalesce(bool_or(c.block = a.block), FALSE) AS in_block,
           coalesce(bool_or(c.block <> a.block) AND NOT bool_or(c.block = a.block), FALSE) AS elsewhere
    FROM blocks AS a
    LEFT JOIN blocks AS c
        ON c.part_type = 'tool_call' AND c.trace_id = a.trace_id AND c.call_span_id = a.call_span_id
       AND c.own_id = a.own_id
    WHERE a.part_type = 'tool_call_response'
    GROUP BY a.trace_id, a.call_span_id, a.block, a.message_index, a.part_index
),
astray AS (
    -- the blocks with such an answer
    SELECT DISTINCT trace_id, call_span_id, block FROM judged WHERE NOT in_block AND NOT elsewhere
),
renumbered AS MATERIALIZED (
    -- in those blocks, the calls and the answers (but those that answer another block's call by its id) in order,
    -- and in order per tool name
    SELECT b.trace_id, b.call_span_id, b.block, b.message_index, b.part_index, b.part_type, b.tool_name, b.own_id,
           row_number() OVER (PARTITION BY b.trace_id, b.call_span_id, b.block, b.part_type
                              ORDER BY b.message_index, b.part_index) AS nth,
           row_number() OVER (PARTITION BY b.trace_id, b.call_span_id, b.block, b.part_type, b.tool_name
                              ORDER BY b.message_index, b.part_index) AS nth_of_name
    FROM blocks AS b
    SEMI JOIN astray AS s ON s.trace_id = b.trace_id AND s.call_span_id = b.call_span_id AND s.block = b.block
    LEFT JOIN judged AS j
        ON b.part_type = 'tool_call_response' AND j.trace_id = b.trace_id AND j.call_span_id = b.call_span_id
       AND j.message_index = b.message_index AND j.part_index = b.part_index
    WHERE NOT coalesce(j.elsewhere, FALSE)
),
rematched AS (
    -- each answer there answers the call the protocol says: its block's k-th call of the tool it names (Gemini's
    -- functionResponse names its function), else its block's k-th call (the answers in the order asked)
    SELECT a.trace_id, a.call_span_id, a.message_index, a.part_index, coalesce(n.own_id, k.own_id) AS own_id
    FROM renumbered AS a
    LEFT JOIN renumbered AS n
        ON n.part_type = 'tool_call' AND n.trace_id = a.trace_id AND n.call_span_id = a.call_span_id
       AND n.block = a.block AND n.tool_name = a.tool_name AND n.nth_of_name = a.nth_of_name
    LEFT JOIN renumbered AS k
        ON k.part_type = 'tool_call' AND k.trace_id = a.trace_id AND k.call_span_id = a.call_span_id
       AND k.block = a.block AND k.nth = a.nth
    WHERE a.part_type = 'tool_call_response'
)
SELECT
    v.trace_id,
    v.call_span_id,
    v.span_id,
    v.source,
    v.direction,
    v.message_index,
    v.role,
    v.part_index,
    v.part_type,
    CASE WHEN NOT coalesce(/*@ placeholder(text_value) @*/, FALSE) THEN text_value END AS content,
    coalesce(i.own_id, v.own_id) AS tool_call_id,
    tool_name,
    CASE WHEN NOT coalesce(/*@ placeholder(args_value) @*/, FALSE) THEN args_value END AS tool_args,
    CASE WHEN NOT coalesce(/*@ placeholder(response_value) @*/, FALSE) THEN response_value END AS tool_response,
    part AS raw_part,
    finish_reason
FROM valued AS v
LEFT JOIN rematched AS i
    ON v.part_type = 'tool_call_response' AND v.direction = 'input' AND i.trace_id = v.trace_id
   AND i.call_span_id = v.call_span_id AND i.message_index = v.message_index AND i.part_index = v.part_index;
