-- tool_answers: what a tool message told the model, by the call it answers: the tool_call_response parts of
-- model calls' input messages (the history repeats a tool message in every later call: one row each).
-- Where no span recorded a tool call's result (a framework without tool spans, an MCP client span without
-- content), this is the result: `turns` reads it, and `requested_tool_calls` / `tool_call_gaps` say which
-- requests it answered (`answered`: the call ran, where no span recorded it).
CREATE OR REPLACE VIEW tool_answers AS
WITH answer_parts AS (
    SELECT * FROM message_parts
    WHERE direction = 'input' AND part_type = 'tool_call_response' AND tool_call_id IS NOT NULL
)
/*@ include(tool_answer_rows) @*/;
