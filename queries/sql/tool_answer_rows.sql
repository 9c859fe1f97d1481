-- What the conversation's tool messages told the model, one row per call answered (an include of tool_answers,
-- requested_tool_calls, tool_call_gaps and turns), over the including view's `answer_parts`: the
-- tool_call_response parts with a tool call id of model calls' input messages. The history repeats a tool
-- message in every later call: the first copy (model call, message, part) speaks for it. Its value as a step's
-- result is: a tool message of one text block (`[{"text": ...}]`, Strands, MCP) its text; a dict or list the
-- framework handed the model as its Python repr (AutoGen, Semantic Kernel: `{'city': 'Paris'}`) that value as
-- JSON (`rules.python_literal`: the same rule as a tool span's result).
SELECT trace_id, tool_call_id, tool_name,
       coalesce(/*@ one_text_block(tool_response) @*/, /*@ python_literal(tool_response) @*/) AS tool_response
FROM (
    SELECT trace_id, tool_call_id,
           min_by(tool_name, (call_span_id, message_index, part_index)) AS tool_name,
           min_by(tool_response, (call_span_id, message_index, part_index)) AS tool_response
    FROM answer_parts
    GROUP BY trace_id, tool_call_id
) AS first_copy
