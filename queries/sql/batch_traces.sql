-- batch_traces: one row per trace of the batch (`tv_batch`), as `model.batch.TRACE_SCHEMA` has it (the
-- span facts joined in Python): ids, what the harness recorded on the attempt's root (the `runs` view's
-- columns, read from span_facts: `runs` also joins the scores, which a loader has no need to compute),
-- tokens, times in ms since the epoch, and each model's token counts. `tv_trajectories`: the columns of
-- `trajectories` the loader reads (`trajectories.TRAJECTORY_COLUMNS`).
SELECT t.trace_id, t.session_id, t.run_id, t.task_id, CAST(t.attempt AS BIGINT) AS attempt, t.variant,
       r.output, coalesce(r.error_type, r.error) AS error_type,
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
