"""Trajectories for the evaluators, rebuilt from the views: as Polars frames (`load_batch`) for
set-at-a-time scoring, or as `Trajectory` objects (`load_trajectories`).

Reads `trajectories` (a few columns), `steps` (tool calls and gaps), `model_calls` and `span_facts` (what the harness
recorded, `tracevals.retryable`), the span-level facts of `completeness.py`, and, from the raw rows, the
two things no view extracts: the `tracevals.injection.*` marks and the hand-off fields (the queries are
`queries/sql/batch_*.sql`). What is read: the sessions a `selection.Restriction` holds (a time range, a
sample, some runs: `selection.select_sessions`), narrowed further by `where` (a condition on
`trajectories`), or without a restriction the whole lake (or the sessions of the traces `where` keeps).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb
import polars as pl

from tracevals.model.batch import (
    CALL_SCHEMA,
    FACT_COLUMNS,
    HANDOFF_SCHEMA,
    KEY_IN_ARGS_SQL,
    OP_KEY_SQL,
    TRACE_SCHEMA,
    Batch,
    with_op_keys,
)
from tracevals.model.trajectory import Trajectory
from tracevals.queries.binding import drop_tables, work_table
from tracevals.queries.catalog import query_sql
from tracevals.queries.completeness import span_facts
from tracevals.queries.lookup import _without_content
from tracevals.queries.materialize import materialized
from tracevals.queries.selection import Restriction, restrict_to

if TYPE_CHECKING:
    import pyarrow as pa


def frame(con: duckdb.DuckDBPyConnection, sql: str) -> pl.DataFrame:
    """A query's rows as a Polars frame (through Arrow, no copy through Python objects)."""
    result = pl.from_arrow(con.sql(sql).to_arrow_table())
    assert isinstance(result, pl.DataFrame)
    return result


# The views the loader reads; `materialized` computes them (and what they read) once per load. Of
# `trajectories` it reads a few columns (`TRAJECTORY_COLUMNS`, into `tv_trajectories`): computed whole,
# its lists of steps would cost more than all of them.
READS = (
    "attempts",
    "model_calls",
    "tool_calls",
    "requested_tool_calls",
    "message_parts",
)
# The views a connection that only loads batches defines (`open_lake(views=...)`): what `load_batch` reads.
LOADER_VIEWS = (*READS, "trajectories", "steps", "span_facts", "spans")
TRAJECTORY_COLUMNS = (
    "trace_id, session_id, run_id, task_id, attempt, variant, model_call_count, input_tokens, output_tokens, "
    "start_time, end_time, status"
)
_BATCH_SQL = "SELECT trace_id, session_id FROM tv_trajectories"
# The traces of the batch's sessions: completeness counts a session's turns, so it needs them all.
_SCOPE_SQL = (
    "SELECT trace_id FROM attempts "
    "WHERE coalesce(session_id, trace_id) IN (SELECT coalesce(session_id, trace_id) FROM tv_batch)"
)


def load_batch(con: duckdb.DuckDBPyConnection, where: str = "", within: Restriction | None = None) -> Batch:
    """Every trace of the lake's `trajectories` view (optionally those matching `where`, a condition on the
    columns of `TRAJECTORY_COLUMNS`) as a `Batch`.

    `within`: the restriction the connection's views are under (`selection.select_sessions`, or a chunk
    of `session_chunks`); the batch is read from it as it is, `where` applied to the trajectories computed
    for it. Without one, `where` first restricts the views to the sessions of the matching traces (whole
    sessions: completeness counts a session's turns), and that restriction is undone afterwards.
    """
    return _load(con, where, within, None)[0]


def load_batch_and(con: duckdb.DuckDBPyConnection, query: str) -> tuple[Batch, pa.Table]:
    """`load_batch(con)`, and the rows of `query` (over the same views: `attempts`, `span_facts` ...) read
    while the views the batch computed once are still tables, rather than computing them again."""
    batch, rows = _load(con, "", None, query)
    assert rows is not None
    return batch, rows


def _load(
    con: duckdb.DuckDBPyConnection, where: str, within: Restriction | None, query: str | None
) -> tuple[Batch, pa.Table | None]:
    own = None
    if where and within is None:  # the scope: the sessions of the matching traces, found through the views
        work_table(con, "tv_batch", f"SELECT trace_id, session_id FROM trajectories WHERE {where}")
        work_table(con, "tv_scope", _SCOPE_SQL)
        own = restrict_to(con, "tv_scope")
    try:
        # a chunk without message content (capture is off by default) and without log records has no
        # message parts: read as empty tables (`lookup._without_content`), they cost nothing to bind or run
        with materialized(con, READS, known_empty=_without_content):
            work_table(con, "tv_trajectories", f"SELECT {TRAJECTORY_COLUMNS} FROM trajectories")
            # the batch: the computed trajectories that match (naming `trajectories` before its views are
            # computed plans their whole tree)
            work_table(con, "tv_batch", _BATCH_SQL + (f" WHERE {where}" if where else ""))
            work_table(con, "tv_scope", _SCOPE_SQL)
            batch = Batch(traces=_traces(con), calls=_calls(con), handoffs=_handoffs(con))
            return batch, None if query is None else con.sql(query).to_arrow_table()
    finally:
        drop_tables(con, "tv_trajectories")
        if own is not None:
            own.undo()


def load_trajectories(
    con: duckdb.DuckDBPyConnection, where: str = "", within: Restriction | None = None
) -> list[Trajectory]:
    """Every trajectory in the lake (optionally filtered by a SQL condition on `trajectories`), in
    (variant, task, attempt, trace) order, its tool calls in `call_index` order."""
    return trajectories_of(load_batch(con, where, within))


def trajectories_of(batch: Batch) -> list[Trajectory]:
    """A batch's trajectories in (variant, task, attempt, trace) order, as `load_trajectories` returns them."""
    ordered = batch.traces.sort(["variant", "task_id", "attempt", "trace_id"], nulls_last=False)
    return Batch(ordered, batch.calls, batch.handoffs).trajectories()


def _traces(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    base = frame(con, query_sql("batch_traces"))
    facts = span_facts(con, scope="tv_scope")
    joined = base.join(facts, on="trace_id", how="left").with_columns(
        pl.lit(True).alias("facts_loaded"), pl.lit(None, dtype=pl.Float64).alias("cost_usd")
    )
    return joined.select([pl.col(name).cast(dtype) for name, dtype in TRACE_SCHEMA.items()])


def _calls(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Executed tool calls and gaps (requested, never executed), in the `steps` view's order."""
    sql = query_sql("batch_calls", op_key=OP_KEY_SQL.format(c="c"), key_in_args=KEY_IN_ARGS_SQL.format(c="c"))
    calls = frame(con, sql)
    # In the steps view's order (its step_index), numbered per trace here: a window over every step in
    # SQL sorts all of a lake's steps, where this sorts only the tool calls read.
    calls = calls.sort(["trace_id", "tv_at", "tv_by", "tv_nth"], nulls_last=True).with_columns(
        pos=pl.int_range(pl.len(), dtype=pl.Int64).over("trace_id")
    )
    return with_op_keys(calls).select([pl.col(name).cast(dtype) for name, dtype in CALL_SCHEMA.items()])


def _handoffs(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    handoffs = frame(con, query_sql("batch_handoffs"))
    return handoffs.select([pl.col(name).cast(dtype) for name, dtype in HANDOFF_SCHEMA.items()])


__all__ = ["FACT_COLUMNS", "frame", "load_batch", "load_trajectories", "trajectories_of", "with_op_keys"]
