-- batch_handoffs: the structured hand-offs of the batch's traces (`tv_batch`): the fields no view
-- extracts, read from the raw `handoff` rows (their OTLP-retry duplicates collapsed as `spans` does).
WITH rows AS (
    SELECT * EXCLUDE (tv_rank) FROM (
        SELECT trace_id, span_id, start_time, attributes,
               row_number() OVER (PARTITION BY trace_id, span_id ORDER BY (end_time IS NULL), end_time DESC) AS tv_rank
        FROM raw_spans WHERE kind = 'handoff' AND trace_id IN (SELECT trace_id FROM tv_batch)
    ) WHERE tv_rank = 1
)
SELECT trace_id, epoch_ns(start_time) / 1000000.0 AS at_ms,
       json_extract_string(attributes, '$."tracevals.handoff.reason"') AS reason,
       TRY_CAST(json_extract(attributes, '$."tracevals.handoff.completed"') AS VARCHAR[]) AS completed,
       TRY_CAST(json_extract(attributes, '$."tracevals.handoff.pending"') AS VARCHAR[]) AS pending,
       TRY_CAST(json_extract(attributes, '$."tracevals.handoff.candidates"') AS VARCHAR[]) AS candidates
FROM rows
ORDER BY trace_id, start_time
