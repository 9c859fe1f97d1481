"""Trajectories for the evaluators, rebuilt from the views: as Polars frames (`load_batch`) for
set-at-a-time scoring, or as `Trajectory` objects (`load_trajectories`).

Reads `trajectories`, `steps` (tool calls and gaps), `model_calls` and `span_facts` (what the harness
recorded, `tracevals.retryable`), the span-level facts of `completeness.py`, and, from the raw rows, the
two things no view extracts: the `tracevals.injection.*` marks and the hand-off fields. Restrict what is read first with
`selection.select_sessions` (a time range, a sample) or with `where` (a condition on `trajectories`).
"""

from __future__ import annotations

import duckdb
import polars as pl

from tracevals.model.batch import CALL_SCHEMA, FACT_COLUMNS, HANDOFF_SCHEMA, TRACE_SCHEMA, Batch
from tracevals.model.calls import KEY_PAIR, TRAILING_COMMA, UNKNOWN_ARGS
from tracevals.model.trajectory import Trajectory
from tracevals.queries.completeness import span_facts
from tracevals.queries.materialize import materialized
from tracevals.queries.selection import is_restricted, restrict_raw, unrestrict_raw

_MS = "epoch_ns({}) / 1000000.0"
# What the harness recorded on an attempt's root span (the `runs` view's columns, read here from
# span_facts: `runs` also joins the scores, which a loader has no need to compute).
_ATTEMPT_SQL = """
    SELECT trace_id, attempt_output AS output, attempt_error AS error, error_type
    FROM span_facts WHERE parent_span_id IS NULL AND run_id IS NOT NULL
"""
# A few spans need attributes no view extracts (injection marks, hand-off fields): they are read from
# the raw rows, filtered first, and their OTLP-retry duplicates collapsed like `spans` does.
_RAW_ONCE = """
    SELECT * EXCLUDE (tv_rank) FROM (
        SELECT trace_id, span_id, start_time, attributes,
               row_number() OVER (PARTITION BY trace_id, span_id ORDER BY (end_time IS NULL), end_time DESC) AS tv_rank
        FROM raw_spans WHERE {condition}
    ) WHERE tv_rank = 1
"""
_CALL_ATTRS = (
    "tracevals.injection.kind",
    "tracevals.injection.type",
    "tracevals.injection.id",
    "tracevals.injection.goal",
)


def frame(con: duckdb.DuckDBPyConnection, sql: str) -> pl.DataFrame:
    """A query's rows as a Polars frame (through Arrow, no copy through Python objects)."""
    result = pl.from_arrow(con.sql(sql).to_arrow_table())
    assert isinstance(result, pl.DataFrame)
    return result


# The views the loader reads; `materialized` computes them (and what they read) once per load.
READS = (
    "attempts",
    "model_calls",
    "tool_calls",
    "requested_tool_calls",
    "message_parts",
    "trajectories",
)


def load_batch(con: duckdb.DuckDBPyConnection, where: str = "") -> Batch:
    """Every trace of the lake's `trajectories` view (optionally those matching `where`) as a `Batch`.

    With `where`, the views are first restricted to the sessions of the matching traces (whole
    sessions: completeness counts a session's turns), and the restriction is undone afterwards; a
    restriction already in place (`selection.select_sessions`) is kept as it is.
    """
    restrict = bool(where) and not is_restricted(con)
    if where:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE tv_batch AS SELECT trace_id, session_id FROM trajectories WHERE {where}"
        )
    if restrict:
        con.execute(_SCOPE_SQL)
        restrict_raw(con, "tv_scope")
    try:
        with materialized(con, READS):
            if not where:
                con.execute("CREATE OR REPLACE TEMP TABLE tv_batch AS SELECT trace_id, session_id FROM trajectories")
            con.execute(_SCOPE_SQL)
            return Batch(traces=_traces(con), calls=_calls(con), handoffs=_handoffs(con))
    finally:
        if restrict:
            unrestrict_raw(con)


# The traces of the batch's sessions: completeness counts a session's turns, so it needs them all.
_SCOPE_SQL = (
    "CREATE OR REPLACE TEMP TABLE tv_scope AS SELECT trace_id FROM attempts "
    "WHERE coalesce(session_id, trace_id) IN (SELECT coalesce(session_id, trace_id) FROM tv_batch)"
)


def load_trajectories(con: duckdb.DuckDBPyConnection, where: str = "") -> list[Trajectory]:
    """Every trajectory in the lake (optionally filtered by a SQL condition on `trajectories`), in
    (variant, task, attempt, trace) order, its tool calls in `call_index` order."""
    batch = load_batch(con, where)
    ordered = batch.traces.sort(["variant", "task_id", "attempt", "trace_id"], nulls_last=False)
    return Batch(ordered, batch.calls, batch.handoffs).trajectories()


def _traces(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    base = frame(
        con,
        f"""
        SELECT t.trace_id, t.session_id, t.run_id, t.task_id, CAST(t.attempt AS BIGINT) AS attempt, t.variant,
               r.output, coalesce(r.error_type, r.error) AS error_type,
               CAST(t.model_call_count AS BIGINT) AS model_calls, CAST(t.input_tokens AS BIGINT) AS input_tokens,
               CAST(t.output_tokens AS BIGINT) AS output_tokens,
               {_MS.format("t.start_time")} AS start_ms, {_MS.format("t.end_time")} AS end_ms,
               u.model_usage
        FROM trajectories AS t
        JOIN tv_batch USING (trace_id)
        LEFT JOIN ({_ATTEMPT_SQL}) AS r ON r.trace_id = t.trace_id
        LEFT JOIN (
            SELECT trace_id,
                   list({{'model': model, 'input_tokens': i, 'output_tokens': o}} ORDER BY model) AS model_usage
            FROM (
                SELECT trace_id, model, CAST(sum(input_tokens) AS BIGINT) AS i, CAST(sum(output_tokens) AS BIGINT) AS o
                FROM model_calls WHERE trace_id IN (SELECT trace_id FROM tv_batch) GROUP BY trace_id, model
            ) GROUP BY trace_id
        ) AS u ON u.trace_id = t.trace_id
        """,
    )
    facts = span_facts(con, scope="tv_scope")
    joined = base.join(facts, on="trace_id", how="left").with_columns(
        pl.lit(True).alias("facts_loaded"), pl.lit(None, dtype=pl.Float64).alias("cost_usd")
    )
    return joined.select([pl.col(name).cast(dtype) for name, dtype in TRACE_SCHEMA.items()])


def _calls(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Executed tool calls and gaps (requested, never executed), in the `steps` view's order."""
    paths = ", ".join(f"'$.\"{key}\"'" for key in _CALL_ATTRS)
    text = "CASE WHEN json_type(j[{i}]) = 'VARCHAR' THEN j[{i}] ->> '$' ELSE CAST(j[{i}] AS VARCHAR) END"
    marks = _RAW_ONCE.format(condition="attributes LIKE '%\"tracevals.injection.%'")
    calls = frame(
        con,
        f"""
        SELECT c.trace_id, c.start_time AS tv_at, coalesce(c.span_id, c.requested_by_span_id) AS tv_by,
               c.request_index AS tv_nth,
               c.name, c.args, c.result, c.error_type,
               {_MS.format("c.start_time")} AS start_ms, {_MS.format("c.end_time")} AS end_ms,
               c.span_id, c.tool_call_id AS call_id, c.effect, CAST(c.retry_after_ms AS DOUBLE) AS retry_after_ms,
               c.idempotency_key, c.is_gap AS gap, CAST(c.http_status_code AS BIGINT) AS status_code,
               f.retryable, c.args_hash,
               {text.format(i=1)} AS injection_kind, {text.format(i=2)} AS injection_type,
               {text.format(i=3)} AS injection_id, {text.format(i=4)} AS injection_goal
        FROM steps AS c
        LEFT JOIN span_facts AS f ON f.trace_id = c.trace_id AND f.span_id = c.span_id
        LEFT JOIN (SELECT trace_id, span_id, json_extract(attributes, [{paths}]) AS j FROM ({marks})) AS m
          ON m.trace_id = c.trace_id AND m.span_id = c.span_id
        WHERE c.step_kind = 'tool' AND c.trace_id IN (SELECT trace_id FROM tv_batch)
        """,
    )
    # In the steps view's order (its step_index), numbered per trace here: a window over every step in
    # SQL sorts all of a lake's steps, where this sorts only the tool calls read.
    calls = calls.sort(["trace_id", "tv_at", "tv_by", "tv_nth"], nulls_last=True).with_columns(
        pos=pl.int_range(pl.len(), dtype=pl.Int64).over("trace_id")
    )
    return with_op_keys(calls).select([pl.col(name).cast(dtype) for name, dtype in CALL_SCHEMA.items()])


def with_op_keys(calls: pl.DataFrame) -> pl.DataFrame:
    """`calls` with `op_key`, the operation identity of `calls.operation_key`, as Polars expressions."""
    stripped = pl.col("args").str.replace_all(KEY_PAIR, "").str.replace_all(TRAILING_COMMA, "}")
    inner = (
        pl.when(pl.col("args").is_not_null())
        .then(stripped)
        .when(pl.col("args_hash").is_not_null())
        .then(pl.concat_str([pl.lit("#"), pl.col("args_hash")]))
        .otherwise(pl.lit(UNKNOWN_ARGS))
    )
    return calls.with_columns(op_key=pl.concat_str([pl.col("name").fill_null(""), pl.lit("("), inner, pl.lit(")")]))


def _handoffs(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    lists = "TRY_CAST(json_extract(attributes, '$.\"tracevals.handoff.{}\"') AS VARCHAR[])"
    rows = _RAW_ONCE.format(condition="kind = 'handoff' AND trace_id IN (SELECT trace_id FROM tv_batch)")
    handoffs = frame(
        con,
        f"""
        SELECT trace_id, {_MS.format("start_time")} AS at_ms,
               json_extract_string(attributes, '$."tracevals.handoff.reason"') AS reason,
               {lists.format("completed")} AS completed, {lists.format("pending")} AS pending,
               {lists.format("candidates")} AS candidates
        FROM ({rows})
        ORDER BY trace_id, start_time
        """,
    )
    return handoffs.select([pl.col(name).cast(dtype) for name, dtype in HANDOFF_SCHEMA.items()])


__all__ = ["FACT_COLUMNS", "frame", "load_batch", "load_trajectories", "with_op_keys"]
