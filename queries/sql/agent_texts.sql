-- What a trace that recorded no model call was asked and answered (an include of turns, batch_traces and
-- trace_facts, over the including query's `agent_text_facts`: the span facts, trace_id and kind, of the traces in
-- its scope): the first agent span's input text and the outermost (first started) agent span's output text, of the
-- attributes declared so (`Dialect.agent_inputs` / `agent_outputs`: plain text, no JSON). Some instrumentations
-- write agent and tool spans only (OpenLLMetry's Agno): the agent span's texts are then all the trace holds of the
-- turn's.
SELECT trace_id,
       min_by(input_text, (start_time, span_id)) FILTER (WHERE input_text IS NOT NULL) AS input_text,
       min_by(output_text, (start_time, span_id)) FILTER (WHERE output_text IS NOT NULL) AS output_text
FROM (
    SELECT trace_id, span_id, start_time, /*@ agent_input(attributes) @*/ AS input_text,
           /*@ agent_output(attributes) @*/ AS output_text
    FROM raw_spans
    WHERE kind = 'agent'
      AND trace_id IN (SELECT trace_id FROM agent_text_facts GROUP BY trace_id HAVING NOT bool_or(kind = 'llm'))
) AS texts
GROUP BY trace_id
