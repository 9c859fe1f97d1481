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
             -- OpenAI instrumentations, Python's legacy events and Node's) still says that call was answered: one
             -- response part without content
             -- (the lists above all empty: no parts, no content, no calls, none of a framework's shape)
             CASE WHEN m.role = 'tool' AND m.item_role IS NULL AND json_type(m.message, '$.parts') IS NULL
                       AND coalesce(json_type(m.message, '$.content'), 'NULL') = 'NULL'
                       AND json_type(m.message, '$.tool_calls') IS NULL
                       AND coalesce(
                           json_extract_string(m.message, '$.tool_call_id'), json_extract_string(m.message, '$.id')
                       ) IS NOT NULL
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
)
SELECT
    trace_id,
    call_span_id,
    span_id,
    source,
    direction,
    message_index,
    role,
    part_index,
    part_type,
    CASE WHEN NOT coalesce(/*@ placeholder(text_value) @*/, FALSE) THEN text_value END AS content,
    tool_call_id,
    tool_name,
    CASE WHEN NOT coalesce(/*@ placeholder(args_value) @*/, FALSE) THEN args_value END AS tool_args,
    CASE WHEN NOT coalesce(/*@ placeholder(response_value) @*/, FALSE) THEN response_value END AS tool_response,
    part AS raw_part,
    -- why the model stopped, where the message says (GenAI's output messages: `tool_call`, `stop` ...)
    json_extract_string(message, '$.finish_reason') AS finish_reason
FROM (
    SELECT
        *,
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
        END AS response_value
    FROM typed
) AS valued;
