-- batch_traces: one row per trace of the batch (`tv_batch`), as `model.batch.TRACE_SCHEMA` has it (the
-- span facts joined in Python): ids, what the harness recorded on the attempt's root (the `runs` view's
-- columns, read from span_facts: `runs` also joins the scores, which a loader has no need to compute),
-- tokens, times in ms since the epoch, and each model's token counts. `tv_trajectories`: the columns of
-- `trajectories` the loader reads (`trajectories.TRAJECTORY_COLUMNS`). `output`: what the harness recorded as the
-- attempt's answer; a trace no harness ran (production traffic) answered with its last model call's text, when
-- that response asked for no tool (the `turns` view's `final_text`, by the same rule: `response_texts`), if the
-- content was captured; a trace that recorded no model call, with its agent span's answer (`agent_texts`, as
-- `turns` reads it).
WITH unrun AS (  -- the batch's traces no harness ran: the only ones whose answer is read from their messages
    SELECT trace_id FROM tv_trajectories JOIN tv_batch USING (trace_id) WHERE run_id IS NULL
),
output_parts AS (
    SELECT * FROM message_parts
    WHERE direction = 'output' AND role = 'assistant' AND trace_id IN (SELECT trace_id FROM unrun)
),
answered AS (/*@ include(response_texts) @*/),
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
    -- the last model call of the trace (as `turns` orders them), and its answer when it asked for no tool
    SELECT trace_id, CASE WHEN tool_asks = 0 THEN text END AS answer
    FROM (
        SELECT m.trace_id, r.text, r.tool_asks,
               row_number() OVER (PARTITION BY m.trace_id ORDER BY m.start_time DESC, m.span_id DESC) AS n
        FROM model_calls AS m
        LEFT JOIN answered AS r ON r.trace_id = m.trace_id AND r.call_span_id = m.span_id
        WHERE m.trace_id IN (SELECT trace_id FROM unrun)
    ) AS last_call
    WHERE n = 1
) AS a ON a.trace_id = t.trace_id
LEFT JOIN agent_texts AS x ON x.trace_id = t.trace_id
