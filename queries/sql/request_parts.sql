-- The message parts the matching of tool-call requests reads (an include of requested_tool_calls and
-- tool_call_gaps, as their CTE `parts`): in one pass over message_parts, the tool calls model responses asked
-- for and the tool messages (with a tool call id) that answered them.
parts AS MATERIALIZED (
    SELECT trace_id, call_span_id, source, direction, message_index, part_index, tool_call_id, tool_name, tool_args,
           tool_response
    FROM message_parts
    WHERE (direction = 'output' AND part_type = 'tool_call')
       OR (direction = 'input' AND part_type = 'tool_call_response' AND tool_call_id IS NOT NULL)
)
