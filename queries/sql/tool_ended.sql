-- What a last model call answered by its tools (an include of trace_facts, turns and batch_traces). An agent can end on
-- its tools' results, with no model call after them (LangChain's `return_direct`, the OpenAI Agents SDK's
-- `stop_on_first_tool`, CrewAI's `result_as_answer`, ADK's `skip_summarization`): a trace's last model call whose every
-- requested tool ran after it and none failed, in a run that ended well, answered with their results, in the order
-- asked (`text`, NULL where no result was captured; `tools`, how many). Where no content says what the call requested
-- (capture off, the default outside the harness, or a call that asked for no tool), the tools that started after it
-- ended stand for its requests, in the order they ran; with none, the call ended the run by itself (`tools` 0: its own
-- text is the answer, the includer's to read). A request that never ran or a tool that failed is no answer: the run
-- stopped short; nor is a tool whose span is a child of the call's: the span is no model call but a framework's whole
-- agent loop (OpenInference's ADK writes its model attributes on `invoke_agent`), or one that holds a sub-agent's run,
-- and what it answered came later, from inside. Over the including query's
--   tool_ended_calls     trace_id, span_id, end_time: the last model call of each trace or turn it asks about, of a
--                        run whose root ended without error (`attempts.status` 'ok', or the includer's own root facts)
--   tool_ended_requests  requested_tool_calls' rows of those traces
--   tool_ended_tools     their executed tool calls: trace_id, span_id, parent_span_id, start_time, result, is_error
WITH ran AS (
    -- each request of the calls, with the tool call that executed it (none: it never ran)
    SELECT r.trace_id, r.model_span_id AS call_span_id, r.request_index AS k, true AS requested, t.span_id,
           t.parent_span_id, t.result, t.is_error
    FROM tool_ended_requests AS r
    JOIN tool_ended_calls AS c ON c.trace_id = r.trace_id AND c.span_id = r.model_span_id
    LEFT JOIN tool_ended_tools AS t ON t.trace_id = r.trace_id AND t.span_id = r.executed_span_id
    UNION ALL
    -- a call with no request recorded: the tools that started after it ended (none: one row without a tool)
    SELECT c.trace_id, c.span_id,
           row_number() OVER (PARTITION BY c.trace_id, c.span_id ORDER BY t.start_time, t.span_id),
           false, t.span_id, t.parent_span_id, t.result, t.is_error
    FROM tool_ended_calls AS c
    LEFT JOIN tool_ended_tools AS t ON t.trace_id = c.trace_id AND t.start_time >= c.end_time
    WHERE NOT EXISTS (
        SELECT 1 FROM tool_ended_requests AS r WHERE r.trace_id = c.trace_id AND r.model_span_id = c.span_id
    )
)
SELECT trace_id, call_span_id, string_agg(result, chr(10) ORDER BY k) AS text, count(span_id) AS tools
FROM ran
GROUP BY trace_id, call_span_id
HAVING bool_and((span_id IS NOT NULL OR NOT requested) AND NOT coalesce(is_error, false)
                AND parent_span_id IS DISTINCT FROM call_span_id)
