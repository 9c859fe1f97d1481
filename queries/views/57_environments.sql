-- environments: one row per harness attempt, with what it ran in. From the attempt's root (the harness
-- records them, see docs/attributes.md `tracevals.env.*`): commit, lock file, the task file's and the
-- case's sha256, fault / injection / cassette profiles, replay mode, the frozen clock, locale,
-- PYTHONHASHSEED and the Python version. From its model calls (the instrumentation records them on
-- every call): the models requested and served and the sampling parameters, each the distinct values
-- of the attempt's calls joined with ',' in order, and the sha256 of the system instructions and of
-- the tool definitions the model was given (`tracevals.request.*`). NULL: not recorded.
-- A CTE named more than once is MATERIALIZED: computed once (left unmarked, DuckDB may write a simple one
-- out at each name, and the views it reads with it), and counted once by `materialize.scans`.
CREATE OR REPLACE VIEW environments AS
WITH roots AS MATERIALIZED (
    SELECT
        f.trace_id, f.run_id, f.task_id, f.attempt, f.variant, f.commit_hash, f.lock_hash, f.replay,
        json_extract_string(s.attributes, '$."tracevals.env.tasks_sha256"') AS tasks_sha256,
        json_extract_string(s.attributes, '$."tracevals.env.case_sha256"') AS case_sha256,
        json_extract_string(s.attributes, '$."tracevals.env.faults"') AS faults,
        json_extract_string(s.attributes, '$."tracevals.env.injections"') AS injections,
        json_extract_string(s.attributes, '$."tracevals.env.cassettes"') AS cassettes,
        json_extract_string(s.attributes, '$."tracevals.env.clock"') AS clock,
        json_extract_string(s.attributes, '$."tracevals.env.locale"') AS locale,
        json_extract_string(s.attributes, '$."tracevals.env.python_hash_seed"') AS python_hash_seed,
        json_extract_string(s.attributes, '$."tracevals.env.python"') AS python,
        json_extract_string(s.attributes, '$."tracevals.env.settings"') AS settings
    FROM span_facts AS f
    JOIN spans AS s ON s.trace_id = f.trace_id AND s.span_id = f.span_id
    WHERE f.parent_span_id IS NULL AND f.run_id IS NOT NULL
),
calls AS (
    -- the members read in one parse of each call's attributes (a call's are often kilobytes: its messages)
    SELECT trace_id, coalesce(v[1], model) AS requested, v[2] AS served, v[3] AS temperature, v[4] AS top_p,
           v[5] AS max_tokens, v[6] AS seed, v[7] AS system_sha256, v[8] AS tools_sha256
    FROM (
        SELECT trace_id, model, json_extract_string(attributes, [
            '$."gen_ai.request.model"', '$."gen_ai.response.model"', '$."gen_ai.request.temperature"',
            '$."gen_ai.request.top_p"', '$."gen_ai.request.max_tokens"', '$."gen_ai.request.seed"',
            '$."tracevals.request.system_sha256"', '$."tracevals.request.tools_sha256"'
        ]) AS v
        FROM spans
        WHERE kind = 'llm' AND trace_id IN (SELECT trace_id FROM roots)
    ) AS read
),
per_trace AS (
    SELECT
        trace_id,
        count(*) AS model_calls,
        string_agg(DISTINCT requested, ',' ORDER BY requested) AS models_requested,
        string_agg(DISTINCT served, ',' ORDER BY served) AS models_served,
        string_agg(DISTINCT temperature, ',' ORDER BY temperature) AS temperature,
        string_agg(DISTINCT top_p, ',' ORDER BY top_p) AS top_p,
        string_agg(DISTINCT max_tokens, ',' ORDER BY max_tokens) AS max_tokens,
        string_agg(DISTINCT seed, ',' ORDER BY seed) AS request_seeds,
        string_agg(DISTINCT system_sha256, ',' ORDER BY system_sha256) AS system_sha256,
        string_agg(DISTINCT tools_sha256, ',' ORDER BY tools_sha256) AS tools_sha256
    FROM calls
    GROUP BY trace_id
)
SELECT
    r.trace_id, r.run_id, r.task_id, r.attempt, r.variant,
    coalesce(c.model_calls, 0) AS model_calls,
    c.models_requested, c.models_served, c.temperature, c.top_p, c.max_tokens, c.request_seeds,
    c.system_sha256, c.tools_sha256,
    r.commit_hash, r.lock_hash, r.tasks_sha256, r.case_sha256, r.faults, r.injections, r.cassettes,
    r.replay, r.clock, r.locale, r.python_hash_seed, r.python, r.settings
FROM roots AS r
LEFT JOIN per_trace AS c ON c.trace_id = r.trace_id;
