-- What each model call answered (an include of turns and batch_traces), over the including query's `output_parts`
-- (the assistant's output message parts of its model calls): its text (the text parts, in order) and how many
-- tools it asked for (its tool-call parts, or its finish reason where an exporter dropped them: OpenLLMetry JS
-- keeps a text and loses the calls beside it). A call whose response asked for no tool answered with its text.
SELECT
    trace_id,
    call_span_id,
    string_agg(content, chr(10) ORDER BY message_index, part_index)
        FILTER (WHERE part_type = 'text' AND content <> '') AS text,
    count(*) FILTER (WHERE part_type = 'tool_call'
                        OR lower(finish_reason) IN ('tool_call', 'tool_calls', 'tool-calls', 'tool_use',
                                                    'function_call')) AS tool_asks
FROM output_parts
GROUP BY trace_id, call_span_id
