-- batch_traces: one row per trace of the batch (`tv_batch`), as `model.batch.TRACE_SCHEMA` has it (the
-- span facts joined in Python): ids, what the harness recorded on the attempt's root (the `runs` view's
-- columns, read from span_facts: `runs` also joins the scores, which a loader has no need to compute),
-- tokens, times in ms since the epoch, and each model's token counts. `tv_trajectories`: the columns of
-- `trajectories` the loader reads (`trajectories.TRAJECTORY_COLUMNS`). `output`: what the harness recorded as the
-- attempt's answer; a trace no harness ran (production traffic) answered with its last model call's text, when
-- that response asked for no tool (the `turns` view's `final_text`, by the same rule: `response_texts`), or with its
-- tools' results when it ended on them (`tool_ended`), if the content was captured; a trace that recorded no model
-- call, with its agent span's answer (`agent_texts`, as `turns` reads it).
WITH unrun AS (  -- the batch's traces no harness ran: the only ones whose answer is read from their messages
    SELECT trace_id FROM tv_trajectories JOIN tv_batch USING (trace_id) WHERE run_id IS NULL
),
output_parts AS (
    SELECT * FROM message_parts
    WHERE direction = 'output' AND role = 'assistant' AND trace_id IN (SELECT trace_id FROM unrun)
),
answered AS (/*@ include(response_texts) @*/),
last_call_scope AS (
    SELECT trace_id, span_id, start_time, end_time, is_error FROM model_calls
    WHERE trace_id IN (SELECT trace_id FROM unrun)
),
last_calls AS (/*@ include(last_calls) @*/),  -- the last model call of each trace no harness ran (as trace_facts)
tool_ended_calls AS (
    SELECT l.trace_id, l.span_id, l.end_time
    FROM last_calls AS l JOIN tv_trajectories AS t USING (trace_id) WHERE t.status = 'ok'
),
tool_ended_requests AS (SELECT * FROM requested_tool_calls WHERE trace_id IN (SELECT trace_id FROM tool_ended_calls)),
tool_ended_tools AS (
    SELECT trace_id, span_id, parent_span_id, start_time, tool_result AS result, is_error
    FROM tool_calls WHERE trace_id IN (SELECT trace_id FROM tool_ended_calls)
),
tool_ended AS (/*@ include(tool_ended) @*/),  -- a trace that ended on its tools' results (as turns)
agent_text_facts AS (SELECT trace_id, kind FROM span_facts WHERE trace_id IN (SELECT trace_id FROM unrun)),
agent_texts AS (/*@ include(agent_texts) @*/)  -- a trace with no model call: what its agent spans say (as turns)
SELECT t.trace_id, t.session_id, t.run_id, t.task_id, CAST(t.attempt AS BIGINT) AS attempt, t.variant,
       coalesce(r.output, a.answer, x.output_text) AS output,
       coalesce(r.error_type, r.error) AS error_type,
       CAST(t.model_call_count AS BIGINT) AS model_calls, CAST(t.input_tokens AS BIGINT) AS input_tokens,
       CAST(t.output_tokens AS BIGINT) AS output_tokens,
       epoch_ns(t.start_time) / 1000000.0 AS start_ms, epoch_ns(t.end_time) / 1000000.0 AS end_ms,
       u.model_usage
FROM tv_trajectories AS t
JOIN tv_batch USING (trace_id)
LEFT JOIN (  -- one row per trace, as trace_facts.sql reads the root (a trace may have many parentless spans)
    SELECT trace_id,
           min_by(attempt_output, (start_time, span_id)) FILTER (WHERE attempt_output IS NOT NULL) AS output,
           min_by(attempt_error, (start_time, span_id)) FILTER (WHERE attempt_error IS NOT NULL) AS error,
           min_by(error_type, (start_time, span_id)) FILTER (WHERE error_type IS NOT NULL) AS error_type
    FROM span_facts WHERE parent_span_id IS NULL AND run_id IS NOT NULL GROUP BY trace_id
) AS r ON r.trace_id = t.trace_id
LEFT JOIN (
    SELECT trace_id,
           list({'model': model, 'input_tokens': i, 'output_tokens': o} ORDER BY model) AS model_usage
    FROM (
        SELECT trace_id, model, CAST(sum(input_tokens) AS BIGINT) AS i, CAST(sum(output_tokens) AS BIGINT) AS o
        FROM model_calls WHERE trace_id IN (SELECT trace_id FROM tv_batch) GROUP BY trace_id, model
    ) GROUP BY trace_id
) AS u ON u.trace_id = t.trace_id
LEFT JOIN (
    -- the last model call's answer: its text when it asked for no tool, else its tools' results if it ended on them
    SELECT l.trace_id, CASE WHEN coalesce(r.tool_asks, 0) = 0 THEN r.text ELSE e.text END AS answer
    FROM last_calls AS l
    LEFT JOIN answered AS r ON r.trace_id = l.trace_id AND r.call_span_id = l.span_id
    LEFT JOIN tool_ended AS e ON e.trace_id = l.trace_id AND e.call_span_id = l.span_id
) AS a ON a.trace_id = t.trace_id
LEFT JOIN agent_texts AS x ON x.trace_id = t.trace_id
