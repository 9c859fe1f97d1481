-- The message parts the matching of tool-call requests reads (an include of requested_tool_calls and
-- tool_call_gaps): `parts`, in one pass over message_parts, the tool calls model responses asked for, the tool
-- messages that answered them (by a tool call id, or by their place: `answers_by_place`), and the calls later
-- requests' history repeats (with the id their answers carry); `from_messages`, the requests of the responses'
-- output messages.
parts AS MATERIALIZED (
    SELECT trace_id, call_span_id, source, direction, part_type, message_index, part_index, tool_call_id, tool_name,
           tool_args, tool_response
    FROM message_parts
    WHERE (direction = 'output' AND part_type = 'tool_call')
       OR (direction = 'input' AND part_type = 'tool_call_response')
       OR (direction = 'input' AND part_type = 'tool_call' AND tool_call_id IS NOT NULL)
),
from_messages AS MATERIALIZED (
    SELECT trace_id, call_span_id AS model_span_id, source, message_index AS message_order, part_index AS part_order,
           tool_call_id, tool_name, tool_args
    FROM parts
    WHERE direction = 'output'
)
