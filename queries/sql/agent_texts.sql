-- What a trace that recorded no model call was asked and answered (an include of turns and batch_traces, over the
-- including query's `no_call_agents`: the agent spans of such traces, with their attributes): the first agent
-- span's input text and the outermost (first started) agent span's output text, of the attributes declared so
-- (`Dialect.agent_inputs` / `agent_outputs`: plain text, no JSON). Some instrumentations write agent and tool
-- spans only (OpenLLMetry's Agno): the agent span's texts are then all the trace holds of the turn's.
SELECT trace_id,
       min_by(input_text, (start_time, span_id)) FILTER (WHERE input_text IS NOT NULL) AS input_text,
       min_by(output_text, (start_time, span_id)) FILTER (WHERE output_text IS NOT NULL) AS output_text
FROM (
    SELECT trace_id, span_id, start_time, /*@ agent_input(attributes) @*/ AS input_text,
           /*@ agent_output(attributes) @*/ AS output_text
    FROM no_call_agents
) AS texts
GROUP BY trace_id
