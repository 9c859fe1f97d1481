-- message_sources: every copy of a model call's messages that the lake holds, one row per message, in
-- the place and the shape it arrived in. The same conversation is often recorded more than once (on
-- the span and in a log record; by the provider's span and by the framework's wrapper), so
-- message_parts keeps one source per model call and direction: the lowest `priority`.
--
--   1  gen_ai.input.messages / gen_ai.output.messages span attributes (current GenAI conventions)
--   2  the same attributes on an OTLP log record or a span event (content capture `event_only`)
--   3  one log record or span event per message (older GenAI: gen_ai.user.message, gen_ai.choice, ...),
--      or gen_ai.content.prompt / gen_ai.content.completion span events
--   4  flattened attributes: gen_ai.prompt.N.* / gen_ai.completion.N.* (older GenAI, OpenLLMetry),
--      llm.input_messages.N.message.* / llm.output_messages.N.message.* (OpenInference)
--   5  a framework's own attributes on the model span (Google ADK's gcp.vertex.agent.llm_request, the
--      Vercel AI SDK's ai.prompt.messages / ai.response.text, Haystack's ...): the declarations of
--      tracevals/spans/dialects/ (the marked places below are generated from them, with the conventions'
--      gen_ai.input.messages / gen_ai.output.messages, priority 1)
--   6  the conversation on an agent span (gen_ai.input.messages / gen_ai.output.messages on `invoke_agent`,
--      and the frameworks' declared ones): some harnesses record it there only, their model spans carrying
--      usage alone. The agent's input stands for its trace's first model call's input, its output for the
--      last call's output.
--
-- A log record with a trace id and no span id (some instrumentations write them so) belongs to the only
-- model call of its trace, when the trace has exactly one; with several it cannot be placed.
--
-- `message` is one message as JSON in its own shape (GenAI parts, OpenAI chat, Gemini contents);
-- `role_hint` is the role its container implies when the message does not name one. A value recorded
-- as a JSON string is parsed, and text that is no JSON is the content of one message; a message wrapped
-- as {"message": {...}} (Semantic Kernel's gen_ai.choice records) is the message it wraps; a message whose
-- content is a placeholder (`<elided>`, a redaction's `__REDACTED__` ... : the declared ones) is no content.
CREATE OR REPLACE VIEW message_sources AS
WITH llm AS (
    -- the model spans that may hold content (span_facts.has_content), once each. Read from the files
    -- for just those spans, so a lake without content skips this whole view at the cost of one lookup.
    -- `attr_keys`: the attributes' keys, parsed once; each declared source below looks its key up in
    -- them rather than scanning the whole attribute text again (a model span's text is often kilobytes).
    SELECT trace_id, span_id, attributes, events, coalesce(try(json_keys(attributes)), []) AS attr_keys
    FROM (
        SELECT
            r.trace_id, r.span_id, r.attributes, r.events,
            row_number() OVER (
                PARTITION BY r.trace_id, r.span_id ORDER BY (r.end_time IS NULL), r.end_time DESC, r.source_file DESC
            ) AS dedup_rank
        FROM raw_spans AS r
        WHERE r.kind = 'llm' AND EXISTS (
            SELECT 1 FROM span_facts AS f WHERE f.has_content AND f.trace_id = r.trace_id AND f.span_id = r.span_id
        )
    ) AS ranked
    WHERE dedup_rank = 1
),
sole_calls AS (
    SELECT trace_id, any_value(span_id) AS span_id
    FROM span_facts
    WHERE kind = 'llm' AND call_depth = 0
    GROUP BY trace_id
    HAVING count(*) = 1
),
placed_logs AS MATERIALIZED (  -- named three times: computed once
    SELECT l.* REPLACE (coalesce(l.span_id, c.span_id) AS span_id)
    FROM logs AS l
    LEFT JOIN sole_calls AS c ON l.span_id IS NULL AND c.trace_id = l.trace_id
),
agent_spans AS MATERIALIZED (
    -- the agent spans, read once: each declared attribute below looks in them alone (a scan of every span's
    -- attribute text per declared attribute cost more than the rest of this view on a lake of long spans)
    SELECT trace_id, span_id, start_time, end_time, attributes FROM raw_spans WHERE kind = 'agent'
),
agent_messages AS (
    -- the conversation an agent span holds, per trace and declared attribute: the first agent span's input,
    -- the last one's output
    /*@ agent_sources @*/
),
trace_calls AS (
    SELECT trace_id, arg_min(span_id, (start_time, span_id)) AS first_call,
           arg_max(span_id, (start_time, span_id)) AS last_call
    FROM span_facts
    WHERE kind = 'llm' AND call_depth = 0 AND trace_id IN (SELECT trace_id FROM agent_messages)
    GROUP BY trace_id
),
span_events AS (
    -- a select-list unnest (as the messages' below)
    SELECT trace_id, span_id, unnest(listed) AS event, unnest(range(1, len(listed) + 1)) AS ordinal
    FROM (SELECT l.trace_id, l.span_id, json_extract(l.events, '$[*]') AS listed FROM llm AS l
          WHERE l.events LIKE '%"gen_ai.%') AS e
),
flat AS (
    SELECT l.trace_id, l.span_id, kv.value,
           regexp_extract(
               kv.key,
               '^(gen_ai\.prompt|gen_ai\.completion|llm\.input_messages|llm\.output_messages)\.(\d+)\.(?:message\.)?(.+)$',
               ['family', 'idx', 'field']
           ) AS k
    FROM llm AS l, json_each(l.attributes) AS kv
    WHERE len(list_filter(l.attr_keys, lambda k: starts_with(k, 'gen_ai.prompt.') OR starts_with(k, 'gen_ai.completion.')
              OR starts_with(k, 'llm.input_messages.') OR starts_with(k, 'llm.output_messages.'))) > 0
),
flat_fields AS (
    SELECT trace_id, span_id, k.family, CAST(k.idx AS INTEGER) AS idx, k.field,
           -- a message's tool calls, or its one `function_call` (OpenAI's legacy functions API; LiteLLM's
           -- gen_ai.completion.N.function_call.name / .arguments: call 0, `n` '')
           regexp_extract(
               k.field, '^(?:tool_calls\.(\d+)\.(?:tool_call\.)?|function_call\.)(.+)$', ['n', 'attr']
           ) AS tc,
           value
    FROM flat
    WHERE k.family <> ''
),
flat_tool_calls AS (
    SELECT trace_id, span_id, family, idx,
           to_json(list(
               json_object(
                   'id', max_id,
                   'function', json_object('name', max_name, 'arguments', max_args)
               ) ORDER BY n
           )) AS call_list
    FROM (
        SELECT trace_id, span_id, family, idx, CAST(coalesce(nullif(tc.n, ''), '0') AS INTEGER) AS n,
               max(json_extract_string(value, '$')) FILTER (WHERE tc.attr = 'id') AS max_id,
               max(json_extract_string(value, '$')) FILTER (WHERE tc.attr IN ('name', 'function.name')) AS max_name,
               max(json_extract_string(value, '$'))
                   FILTER (WHERE tc.attr IN ('arguments', 'function.arguments')) AS max_args
        FROM flat_fields
        WHERE tc.attr <> ''
        GROUP BY trace_id, span_id, family, idx, CAST(coalesce(nullif(tc.n, ''), '0') AS INTEGER)
    ) AS per_call
    GROUP BY trace_id, span_id, family, idx
),
flat_messages AS (
    -- a message's text: `content`, else its content parts' texts (OpenInference's contents.N.message_content.text).
    -- A tool message without the id of the call it answers (OpenInference's LiteLLM instrumentor drops it) takes
    -- it from the protocol: the k-th message after an assistant message that asked for tools answers its k-th call
    SELECT trace_id, span_id, family, idx,
           json_object(
               'role', role,
               'content', content,
               'tool_call_id', coalesce(
                   tool_call_id,
                   CASE WHEN role = 'tool' AND asked.idx IS NOT NULL
                        THEN json_extract_string(asked.calls, '$[' || (idx - asked.idx - 1) || '].id') END
               ),
               'tool_calls', calls
           ) AS message
    FROM (
        SELECT *,
               last_value(CASE WHEN calls IS NOT NULL THEN {'idx': idx, 'calls': calls} END IGNORE NULLS) OVER (
                   PARTITION BY trace_id, span_id, family ORDER BY idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
               ) AS asked
        FROM (
            SELECT f.trace_id, f.span_id, f.family, f.idx,
                   max(json_extract_string(f.value, '$')) FILTER (WHERE f.field = 'role') AS role,
                   coalesce(
                       max(json_extract_string(f.value, '$')) FILTER (WHERE f.field = 'content'),
                       string_agg(json_extract_string(f.value, '$'), '' ORDER BY f.field)
                           FILTER (WHERE regexp_matches(f.field, '^contents\.\d+\.message_content\.text$'))
                   ) AS content,
                   max(json_extract_string(f.value, '$')) FILTER (WHERE f.field = 'tool_call_id') AS tool_call_id,
                   max(t.call_list) AS calls
            FROM flat_fields AS f
            LEFT JOIN flat_tool_calls AS t
                ON t.trace_id = f.trace_id AND t.span_id = f.span_id AND t.family = f.family AND t.idx = f.idx
            GROUP BY f.trace_id, f.span_id, f.family, f.idx
        ) AS grouped
    ) AS placed
),
found AS (
    -- 1 and 5: the declared attributes of the model span (generated from tracevals/spans/dialects/)
    /*@ attribute_sources @*/
    -- 2. log records and span events that carry the same attributes
    UNION ALL
    SELECT trace_id, span_id, 'log:gen_ai.messages', 2, 'input', NULL,
           json_extract(attributes, '$."gen_ai.input.messages"'), 0
    FROM placed_logs
    WHERE attributes LIKE '%"gen_ai.input.messages"%'
    UNION ALL
    SELECT trace_id, span_id, 'log:gen_ai.messages', 2, 'output', NULL,
           json_extract(attributes, '$."gen_ai.output.messages"'), 0
    FROM placed_logs
    WHERE attributes LIKE '%"gen_ai.output.messages"%'
    UNION ALL
    SELECT trace_id, span_id, 'event:gen_ai.messages', 2, 'input', NULL,
           json_extract(event, '$.attributes."gen_ai.input.messages"'), ordinal
    FROM span_events
    WHERE json_type(event, '$.attributes."gen_ai.input.messages"') IS NOT NULL
    UNION ALL
    SELECT trace_id, span_id, 'event:gen_ai.messages', 2, 'output', NULL,
           json_extract(event, '$.attributes."gen_ai.output.messages"'), ordinal
    FROM span_events
    WHERE json_type(event, '$.attributes."gen_ai.output.messages"') IS NOT NULL
    -- 3. one record per message
    UNION ALL
    SELECT trace_id, span_id, 'log:gen_ai.message-events', 3,
           CASE WHEN event_name = 'gen_ai.choice' THEN 'output' ELSE 'input' END,
           CASE event_name
               WHEN 'gen_ai.system.message' THEN 'system'
               WHEN 'gen_ai.user.message' THEN 'user'
               WHEN 'gen_ai.tool.message' THEN 'tool'
               ELSE 'assistant'
           END,
           CASE
               WHEN json_type(body, '$.message') = 'OBJECT' THEN json_extract(body, '$.message')
               ELSE CAST(body AS JSON)
           END,
           row_number() OVER (PARTITION BY trace_id, span_id ORDER BY time, observed_time, event_name, body)
    FROM placed_logs
    WHERE event_name IN (
        'gen_ai.system.message', 'gen_ai.user.message', 'gen_ai.assistant.message', 'gen_ai.tool.message',
        'gen_ai.choice'
    )
    UNION ALL
    SELECT trace_id, span_id, 'event:gen_ai.message-events', 3,
           CASE WHEN json_extract_string(event, '$.name') = 'gen_ai.choice' THEN 'output' ELSE 'input' END,
           CASE json_extract_string(event, '$.name')
               WHEN 'gen_ai.system.message' THEN 'system'
               WHEN 'gen_ai.user.message' THEN 'user'
               WHEN 'gen_ai.tool.message' THEN 'tool'
               ELSE 'assistant'
           END,
           json_extract(event, '$.attributes'), ordinal
    FROM span_events
    WHERE json_extract_string(event, '$.name') IN (
        'gen_ai.system.message', 'gen_ai.user.message', 'gen_ai.assistant.message', 'gen_ai.tool.message',
        'gen_ai.choice'
    )
    UNION ALL
    SELECT trace_id, span_id, 'event:gen_ai.content', 3,
           CASE WHEN json_extract_string(event, '$.name') = 'gen_ai.content.completion' THEN 'output' ELSE 'input' END,
           NULL,
           coalesce(
               json_extract(event, '$.attributes."gen_ai.prompt"'),
               json_extract(event, '$.attributes."gen_ai.completion"')
           ),
           ordinal
    FROM span_events
    WHERE json_extract_string(event, '$.name') IN ('gen_ai.content.prompt', 'gen_ai.content.completion')
    -- 4. flattened attributes
    UNION ALL
    SELECT trace_id, span_id, 'span:' || family || '.N', 4,
           CASE WHEN family IN ('gen_ai.prompt', 'llm.input_messages') THEN 'input' ELSE 'output' END,
           CASE WHEN family IN ('gen_ai.completion', 'llm.output_messages') THEN 'assistant' END,
           message, idx
    FROM flat_messages
    -- 6. an agent span's conversation
    UNION ALL
    SELECT a.trace_id, CASE WHEN a.direction = 'input' THEN c.first_call ELSE c.last_call END, a.source, a.priority,
           a.direction, NULL, a.value, 0
    FROM agent_messages AS a JOIN trace_calls AS c ON c.trace_id = a.trace_id
    WHERE a.value IS NOT NULL
),
decoded AS (
    -- text holding JSON parsed, text that is no JSON one message's content; {"message": {...}} unwrapped, and
    -- {"message": "text"} an answer of that content
    SELECT trace_id, span_id, source, priority, direction, role_hint, seq,
           CASE WHEN json_type(doc, '$.message') = 'OBJECT' AND json_type(doc, '$.role') IS NULL
                THEN json_extract(doc, '$.message')
                -- a choice whose message is text (Strands' legacy gen_ai.choice events: Bedrock blocks as JSON
                -- text) is an answer of that content
                WHEN json_type(doc, '$.message') = 'VARCHAR' AND json_type(doc, '$.role') IS NULL
                     AND json_type(doc, '$.content') IS NULL AND direction = 'output'
                THEN json_object('role', 'assistant', 'content', json_extract_string(doc, '$.message'),
                                 'finish_reason', json_extract_string(doc, '$.finish_reason'))
                ELSE doc END AS doc
    FROM (
        SELECT *,
               CASE
                   WHEN json_type(value) = 'VARCHAR' THEN coalesce(
                       try_cast(json_extract_string(value, '$') AS JSON),
                       json_object('role', coalesce(role_hint, CASE WHEN direction = 'input' THEN 'user'
                                                                     ELSE 'assistant' END),
                                   'content', json_extract_string(value, '$'))
                   )
                   ELSE value
               END AS doc
        FROM found
    ) AS parsed
)
SELECT
    m.trace_id,
    m.span_id,
    m.source,
    m.priority,
    m.direction,
    m.role_hint,
    CAST(row_number() OVER (
        PARTITION BY m.trace_id, m.span_id, m.source, m.direction ORDER BY m.seq, m.ordinal
    ) - 1 AS INTEGER) AS message_index,
    -- a LangChain message serialised as its constructor ({"lc": 1, "type": "constructor", "id": [..., "AIMessage"],
    -- "kwargs": {...}}: LangSmith's OpenTelemetry export) is its fields, its `type` (human, ai, system, tool) its role
    CASE WHEN contains(CAST(m.message AS VARCHAR), '"constructor"')
              AND json_extract_string(m.message, '$.type') = 'constructor'
              AND json_type(m.message, '$.kwargs') = 'OBJECT'
         THEN json_merge_patch(
             json_extract(m.message, '$.kwargs'),
             json_object('role', coalesce(json_extract_string(m.message, '$.kwargs.role'),
                                          json_extract_string(m.message, '$.kwargs.type')))
         )
         ELSE m.message END AS message
FROM (
    -- each document's messages, numbered: a select-list unnest (DuckDB plans `UNNEST(...) WITH ORDINALITY` in the
    -- FROM clause as a join back on each distinct document, hashing and comparing every document's text)
    SELECT trace_id, span_id, source, priority, direction, role_hint, seq,
           unnest(messages) AS message, unnest(range(1, len(messages) + 1)) AS ordinal
    FROM (
        SELECT d.*, CASE json_type(d.doc)
                        WHEN 'ARRAY' THEN json_extract(d.doc, '$[*]')
                        WHEN 'OBJECT' THEN [d.doc]
                    END AS messages
        FROM decoded AS d
    ) AS listed
) AS m
WHERE NOT /*@ placeholder(coalesce(
    json_extract_string(m.message, '$.content'), json_extract_string(m.message, '$.kwargs.content'), ''
)) @*/;
