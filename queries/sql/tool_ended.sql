-- What a last model call answered by its tools (an include of trace_facts, turns and batch_traces). An agent can end
-- on its tools' results, with no model call after them (LangChain's `return_direct`, the OpenAI Agents SDK's
-- `stop_on_first_tool`, CrewAI's `result_as_answer`, ADK's `skip_summarization`): a trace's last model call whose
-- every requested tool ran after it and none failed, in a run that ended well, answered with their results, in the
-- order asked (`text`, NULL where no result was captured). A request that never ran or a tool that failed is no
-- answer: the run stopped short; nor is a tool whose span is a child of the call's: the span is no model call but a
-- framework's whole agent loop (OpenInference's ADK writes its model attributes on `invoke_agent`), or one that
-- holds a sub-agent's run, and what it answered came later, from inside. Over the including query's
--   tool_ended_calls     trace_id, span_id: the last model call of each trace or turn it asks about, of a run whose
--                        root ended without error (`attempts.status` 'ok', or the includer's own root facts)
--   tool_ended_requests  requested_tool_calls' rows of those traces
--   tool_ended_tools     their executed tool calls: trace_id, span_id, parent_span_id, result, is_error
SELECT r.trace_id, r.model_span_id AS call_span_id,
       string_agg(t.result, chr(10) ORDER BY r.request_index) AS text
FROM tool_ended_requests AS r
JOIN tool_ended_calls AS c ON c.trace_id = r.trace_id AND c.span_id = r.model_span_id
LEFT JOIN tool_ended_tools AS t ON t.trace_id = r.trace_id AND t.span_id = r.executed_span_id
GROUP BY r.trace_id, r.model_span_id
HAVING bool_and(t.span_id IS NOT NULL AND NOT coalesce(t.is_error, false)
                 AND t.parent_span_id IS DISTINCT FROM r.model_span_id)
