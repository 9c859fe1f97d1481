-- steps: the model calls and tool calls of each trace in one ordered list (step_index, 1-based: start
-- time, then span id). Nested spans of one call are one step (see call_spans). A tool call a model
-- asked for that no span executed is a step too, flagged is_gap, placed right after the model call
-- that asked for it, with the arguments the message recorded. An executed call whose spans hold no
-- arguments or result takes them from the conversation: the request's arguments, the tool message's answer.
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
    SELECT c.trace_id, c.span_id, c.session_id, c.run_id, c.task_id, c.attempt, c.variant,
           'tool', c.tool_name, c.agent_name, coalesce(c.tool_call_id, q.tool_call_id),
           coalesce(c.tool_args, q.tool_args), coalesce(c.tool_result, w.tool_response), c.tool_effect,
           c.tool_args_hash, c.error_type, c.is_error, FALSE, c.http_status_code, c.retry_after_ms,
           c.idempotency_key, c.start_time, c.end_time, c.duration_ms, NULL, NULL, NULL, NULL, 0
    FROM tool_calls AS c
    -- a call whose spans hold no arguments or result (an MCP client span, a framework that records them only
    -- in the conversation): the arguments the model asked it with, the result the tool message gave back
    LEFT JOIN (
        SELECT trace_id, executed_span_id, any_value(tool_call_id) AS tool_call_id, any_value(tool_args) AS tool_args
        FROM requested_tool_calls
        WHERE executed_span_id IS NOT NULL
          AND trace_id IN (SELECT trace_id FROM tool_calls WHERE tool_args IS NULL OR tool_result IS NULL)
        GROUP BY trace_id, executed_span_id
    ) AS q ON (c.tool_args IS NULL OR c.tool_result IS NULL)
          AND q.trace_id = c.trace_id AND q.executed_span_id = c.span_id
    LEFT JOIN tool_answers AS w
        ON c.tool_result IS NULL AND w.trace_id = c.trace_id AND w.tool_call_id = coalesce(c.tool_call_id, q.tool_call_id)
    UNION ALL
    SELECT trace_id, NULL, session_id, run_id, task_id, attempt, variant,
           'tool', tool_name, NULL, tool_call_id, tool_args, tool_result, NULL, NULL,
           NULL, FALSE, TRUE, NULL, NULL, NULL,
           model_end_time, NULL, NULL, NULL, NULL, NULL, model_span_id, request_index
    FROM tool_call_gaps
) AS u;
