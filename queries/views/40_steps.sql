-- steps: the model calls and tool calls of each trace in one ordered list (step_index, 1-based: start
-- time, then span id). Nested spans of one call are one step (see call_spans). A tool call a model
-- asked for that no span executed is a step too, placed right after the model call that asked for it,
-- with the arguments the message recorded: a tool step with the tool message's answer as its result where
-- the conversation answered it (the call ran, untraced), else flagged is_gap (`turns` adds what the
-- conversation says for an executed call whose spans hold no result).
-- status: ok | error | gap.
CREATE OR REPLACE VIEW steps AS
SELECT
    u.*,
    CASE WHEN u.is_gap THEN 'gap' WHEN u.is_error THEN 'error' ELSE 'ok' END AS status,
    row_number() OVER (
        PARTITION BY u.trace_id ORDER BY u.start_time, coalesce(u.span_id, u.requested_by_span_id), u.request_index
    ) AS step_index
FROM (
    SELECT trace_id, span_id, session_id, run_id, task_id, attempt, variant,
           'llm' AS step_kind, model AS name, agent_name,
           CAST(NULL AS VARCHAR) AS tool_call_id, CAST(NULL AS VARCHAR) AS args, CAST(NULL AS VARCHAR) AS result,
           CAST(NULL AS VARCHAR) AS effect, CAST(NULL AS VARCHAR) AS args_hash,
           error_type, is_error, FALSE AS is_gap,
           CAST(NULL AS BIGINT) AS http_status_code, CAST(NULL AS DOUBLE) AS retry_after_ms,
           CAST(NULL AS VARCHAR) AS idempotency_key,
           start_time, end_time, duration_ms, input_tokens, output_tokens, cost_usd,
           CAST(NULL AS VARCHAR) AS requested_by_span_id, CAST(0 AS BIGINT) AS request_index
    FROM model_calls
    UNION ALL
    SELECT trace_id, span_id, session_id, run_id, task_id, attempt, variant,
           'tool', tool_name, agent_name, tool_call_id, tool_args,
           -- a result given as content blocks, one text block (`[{"text": ...}]`: Strands, MCP): its text
           coalesce(/*@ one_text_block(raw_result) @*/, raw_result),
           tool_effect, tool_args_hash, error_type, is_error, FALSE, http_status_code, retry_after_ms,
           idempotency_key, start_time, end_time, duration_ms, NULL, NULL, NULL, NULL, 0
    FROM (
        -- an instrumentation's placeholder (OpenInference's `__REDACTED__`, Strands' `[REDACTED]`: the declared
        -- ones) is no content, as in messages (rows of normalizer 8 on have none; older rows may)
        SELECT * REPLACE (CASE WHEN /*@ placeholder(tool_args) @*/ THEN NULL ELSE tool_args END AS tool_args),
               CASE WHEN /*@ placeholder(tool_result) @*/ THEN NULL ELSE tool_result END AS raw_result
        FROM tool_calls
    ) AS called
    UNION ALL
    -- a request no span executed. Answered by a tool message of the conversation, it ran where no span recorded
    -- it (a loop that traces only its model calls): a tool step whose result is the answer, failed when the
    -- answer says so (`rules.answer_failed`). Unanswered, it is a gap.
    SELECT trace_id, NULL, session_id, run_id, task_id, attempt, variant,
           'tool', tool_name, NULL, tool_call_id, tool_args, answer, NULL, NULL,
           CASE WHEN failed THEN /*@ answer_error_type(answer) @*/ END, failed, NOT answered, NULL, NULL, NULL,
           model_end_time, NULL, NULL, NULL, NULL, NULL, model_span_id, request_index
    FROM (
        SELECT *, coalesce(answered AND /*@ answer_failed(answer) @*/, FALSE) AS failed FROM tool_call_gaps
    ) AS requested
) AS u;
