-- tool_answers: what a tool message told the model, by the call it answers: the tool_call_response parts of
-- model calls' input messages (the history repeats a tool message in every later call: one row each).
-- Where no span recorded a tool call's result (a framework without tool spans, an MCP client span without
-- content), this is the result; `steps` and `tool_call_gaps` read it.
CREATE OR REPLACE VIEW tool_answers AS
SELECT trace_id, tool_call_id,
       min_by(tool_name, (call_span_id, message_index, part_index)) AS tool_name,
       min_by(tool_response, (call_span_id, message_index, part_index)) AS tool_response
FROM message_parts
WHERE direction = 'input' AND part_type = 'tool_call_response' AND tool_call_id IS NOT NULL
GROUP BY trace_id, tool_call_id;
