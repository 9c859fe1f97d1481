"""One session's rows of any view, fast on a lake of any size (`session_lookup`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import duckdb

from tracevals.lake.columns import COLUMNS, LOGS_DIR, SCORES_DIR, SPANS_DIR
from tracevals.lake.lake import Lake
from tracevals.lake.paths import LakeError

if TYPE_CHECKING:
    import pyarrow as pa
from tracevals.queries.binding import own, shadow, unshadow, work_table
from tracevals.queries.catalog import VIEW_NAMES
from tracevals.queries.sources import STRICT, files_sql

_HEX = re.compile(r"[0-9a-f]{1,64}")


# Optimizer passes that cost more than they save on a session's few rows: on them planning the views
# takes far longer than running them (projection_pullup alone ~60 ms). Results do not depend on them.
_LOOKUP_DISABLED_OPTIMIZERS = (
    "projection_pullup,join_order,statistics_propagation,expression_rewriter,common_subplan,cte_inlining,"
    "self_join_aggregate,common_subexpressions,aggregate_reuse,cte_filter_pusher,deliminator,build_side_probe_side,"
    "join_filter_pushdown"
)


def session_lookup(con: duckdb.DuckDBPyConnection, session_id: str, view: str = "trajectories") -> pa.Table:
    """One session's rows of `view` (trajectories, turns, steps, sessions ...), as an Arrow table.

    Finds the session's traces with a filter on the span files themselves (the writers' Bloom filters on
    session_id and trace_id let DuckDB skip the row groups of other sessions: ids are random, so min/max
    statistics cannot), then, for the one query, shadows the lake's base relations
    (the raw files and any snapshot) with copies restricted to those traces: every view is computed over
    the session's spans only, instead of over the lake with a filter on top. Over those few rows the
    views are computed one at a time (`materialize.materialized`) with the costliest optimizer passes
    off: planning the whole tree of views as one query costs several times more than running it. A
    session without message content reads the message views as empty tables (`_without_content`).

    >>> pl.from_arrow(session_lookup(open_lake("demo-out/lake"), "sess-1", "turns"))
    """
    return session_lookups(con, session_id, (view,))[view]


def session_lookups(con: duckdb.DuckDBPyConnection, session_id: str, views: Sequence[str]) -> dict[str, pa.Table]:
    """One session's rows of each of `views`, by name: `session_lookup` for several views over one copy of
    the session's rows (a page that shows a session's turns and steps finds its files once)."""
    return _lookups(con, "session_id", session_id, views)


def trace_lookups(con: duckdb.DuckDBPyConnection, trace_id: str, views: Sequence[str]) -> dict[str, pa.Table]:
    """One trace's rows of each of `views` (views with a trace_id column: spans, steps, tool_calls, retries,
    message_parts ...), by name, found and computed as `session_lookup` does a session's: every row of the
    trace, whether or not its spans carry a session id (`tracevals ui`'s trace page)."""
    return _lookups(con, "trace_id", trace_id, views)


def _lookups(con: duckdb.DuckDBPyConnection, key: str, value: str, views: Sequence[str]) -> dict[str, pa.Table]:
    unknown = [v for v in views if v not in VIEW_NAMES]
    if unknown:
        raise LakeError(f"unknown view {unknown[0]!r} (choose from {', '.join(VIEW_NAMES)})")
    from tracevals.queries.materialize import materialized

    # the session's traces, and the files that hold their spans: the wide copy below then opens only those
    find = (
        "SELECT DISTINCT trace_id, source_file FROM {0} "
        f"WHERE trace_id IN (SELECT trace_id FROM {{0}} WHERE {key} = ?)"
    )
    try:  # union_by_name reads every file's schema first: three times slower over a few columns
        rows = con.execute(find.format(f"{STRICT}raw_spans"), [value]).fetchall()
    except duckdb.InvalidInputException:  # files of two lake formats
        rows = con.execute(find.format("raw_spans"), [value]).fetchall()
    # inlined as literals (hex ids only), so that DuckDB pushes them into the scans as constants
    traces = sorted({str(r[0]) for r in rows if r[0] is not None and _HEX.fullmatch(str(r[0]))})
    files = sorted({str(r[1]) for r in rows if r[1] is not None})
    listed = ", ".join(f"'{t}'" for t in traces) or "NULL"
    [(lake, snapshots, disabled)] = con.execute(
        "SELECT getvariable('tracevals_lake'), getvariable('tracevals_snapshots'), "
        "current_setting('disabled_optimizers')"
    ).fetchall()
    where, params = f"{key} = ?", [value]
    out: dict[str, pa.Table] = {}
    for view in views:
        if view in (snapshots or ()):  # computed at open (a small lake): its rows are there already
            out[view] = con.sql(f"SELECT * FROM {view} WHERE {where}", params=params).to_arrow_table()
    if len(out) == len(views):
        return out
    # a snapshot without trace ids (per run, per task) is read whole: the final filter keeps the session
    kept = [n for n in snapshots or () if "trace_id" in {d[0] for d in con.execute(f"FROM {n} LIMIT 0").description}]
    bases = ["raw_spans", "raw_logs", "raw_scores", *kept]
    try:
        for name in bases:
            # a small table per base relation, read once: the views reference the bases many times
            copy = f"SELECT * FROM {{}} WHERE trace_id IN ({listed})"
            strict = f"{STRICT}{name}"
            if name == "raw_spans" and lake and files:
                strict = f"({files_sql(con, Lake.open(lake), SPANS_DIR, files, union_by_name=False)})"
            if not (name.startswith("raw_") and _copied_strictly(con, copy, name, strict)):
                work_table(con, _copy(name), copy.format(own(con, name)))
            shadow(con, name, f"SELECT * FROM {_copy(name)}")
        tuned = _set_disabled_optimizers(con, _LOOKUP_DISABLED_OPTIMIZERS)
        try:
            wanted = [v for v in views if v not in out]
            with materialized(con, wanted, known_empty=_without_content):
                for view in wanted:
                    out[view] = con.sql(f"SELECT * FROM {view} WHERE {where}", params=params).to_arrow_table()
                return out
        finally:
            if tuned:
                _set_disabled_optimizers(con, disabled)
    finally:
        unshadow(con, *bases, tables=[_copy(name) for name in bases])


def _copy(name: str) -> str:
    return f"tv_lookup_{name}"


# The views whose only inputs are model spans that may hold message content (span_facts.has_content)
# and log records (see 22_message_sources.sql), and the views that read only them.
_CONTENT_VIEWS = ("message_sources", "message_parts")


def _without_content(con: duckdb.DuckDBPyConnection, computed: str) -> list[str]:
    """`materialized`'s known_empty for a lookup: once span_facts is computed over the session's spans,
    a session without message content (capture is off by default) and without log records has no
    message sources, hence no message parts. Reading them as empty tables spares binding and running
    their SQL: computing trajectories over the session's rows took 36 ms with them, 24 without."""
    if computed != "span_facts":
        return []
    [(content,)] = con.execute(
        "SELECT coalesce(bool_or(has_content), false) OR EXISTS (SELECT 1 FROM raw_logs) FROM span_facts"
    ).fetchall()
    return [] if content else list(_CONTENT_VIEWS)


_RAW_TABLES = {"raw_spans": SPANS_DIR, "raw_logs": LOGS_DIR, "raw_scores": SCORES_DIR}


def _copied_strictly(con: duckdb.DuckDBPyConnection, copy: str, name: str, strict: str) -> bool:
    """Run `copy` on `strict` (the raw files read without union_by_name); False where that cannot read
    them as the lake's view does (files of two lake formats), so that the caller copies through the view
    instead."""
    try:
        work_table(con, _copy(name), copy.format(strict))
    except duckdb.InvalidInputException:  # a file without a column the first one has
        return False
    copied = {d[0] for d in con.execute(f"SELECT * FROM {_copy(name)} LIMIT 0").description}
    return {c[0] for c in COLUMNS[_RAW_TABLES[name]]} <= copied  # else the first file lacked a column a later one has


def _set_disabled_optimizers(con: duckdb.DuckDBPyConnection, value: str) -> bool:
    """False where the connection's settings are locked (a sandboxed `tracevals sql` connection)."""
    try:
        con.execute("SET disabled_optimizers = ?", [value])
    except duckdb.Error:
        return False
    return True
