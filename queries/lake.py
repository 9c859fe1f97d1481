"""Open a lake as a DuckDB connection with every view of `queries/views/` defined.

>>> con = open_lake("demo-out/lake")
>>> con.sql("select task_id, tools from trajectories limit 3").pl()      # a Polars DataFrame
>>> con.sql("select * from steps").arrow()                               # a pyarrow Table
>>> con.execute("select count(*) from sessions").fetchall()              # a list of tuples

DuckDB 2 relations (`con.sql(...)`) have `.pl()`, `.arrow()`, `.fetchall()` but no `fetchone()`: use
`con.execute(...)` for that, and for parameters (`con.execute("... where session_id = ?", [sid])`). A
result read with `fetchone()` stays open until fetched to the end: on a connection you keep using, fetch
with `fetchall()`.

The views are plain SQL files, applied in file-name order; each reads only views defined before it.
`raw_spans`, `raw_logs` and `raw_scores` are the Parquet files as written (a typed empty table when there are
none yet), so every view exists, and a query over an empty lake returns no rows rather than failing.

A lake is a directory or an object-store prefix (`s3://bucket/lake`, read through DuckDB's httpfs
extension, see docs/queries.md). `since` / `until` keep only the `date=…/hour=…` partitions in range, so
DuckDB never opens the other files (see `partition_globs`).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import duckdb
import pyarrow as pa

from tracevals.lake.schema import LOG_SCHEMA, LOGS_DIR, SCORE_SCHEMA, SCORES_DIR, SPAN_SCHEMA, SPANS_DIR
from tracevals.model.prices import default_prices

VIEW_NAMES = (
    "spans",
    "logs",
    "span_facts",
    "attempts",
    "call_spans",
    "genai_spans",
    "message_sources",
    "message_parts",
    "model_calls",
    "tool_calls",
    "requested_tool_calls",
    "tool_call_gaps",
    "steps",
    "turns",
    "scores",
    "runs",
    "trajectories",
    "sessions",
    "handoffs",
    "retries",
    "injections",
    "model_prices",
)

# The views every call / step / trajectory view is built on; snapshotting them pays for deduplicating and
# un-nesting the spans once per connection instead of once per view that reads them.
MATERIALIZE = ("span_facts", "attempts", "message_parts")

# Model prices: USD per million tokens (input, output) by model name. A model without a price costs 0
# (docs/queries.md says so) rather than failing a query.
PricesT = Mapping[str, tuple[float, float]]


class LakeError(Exception):
    """The lake cannot be opened (missing directory, unreadable files, a view that does not apply)."""


def view_sql() -> list[tuple[str, str]]:
    """The view files, in the order they are applied: (file name, SQL text)."""
    folder = resources.files("tracevals.queries").joinpath("views")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [(f.name, f.read_text(encoding="utf-8")) for f in files]


_HEX = re.compile(r"[0-9a-f]{1,64}")


def _defined_views(sql: str) -> set[str]:
    return set(re.findall(r"CREATE OR REPLACE VIEW (\w+)", sql))


def is_remote(lake: str) -> bool:
    return "://" in lake


def _has_parquet(directory: Path) -> bool:
    return directory.is_dir() and any(directory.rglob("*.parquet"))


def _hour_bound(value: dt.date | dt.datetime | str, end: bool) -> tuple[dt.date, int]:
    """(date, hour) of a range bound; a bare date covers its whole day (hour 0 as `since`, 23 as `until`)."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = dt.datetime.fromisoformat(text) if len(text) > 10 else dt.date.fromisoformat(text)
        except ValueError:
            try:  # "2026-11-29T08": an hour, the partition unit
                value = dt.datetime.strptime(text, "%Y-%m-%dT%H")
            except ValueError:
                raise LakeError(f"{text!r} is not a date (YYYY-MM-DD) or an hour (YYYY-MM-DDTHH)") from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value.date(), value.hour
    return value, 23 if end else 0


Bound = tuple[dt.date, int]


def _bounds(
    since: dt.date | dt.datetime | str | None, until: dt.date | dt.datetime | str | None
) -> tuple[Bound | None, Bound | None]:
    return (
        None if since is None else _hour_bound(since, end=False),
        None if until is None else _hour_bound(until, end=True),
    )


def partition_filter(
    since: dt.date | dt.datetime | str | None = None, until: dt.date | dt.datetime | str | None = None
) -> str:
    """A WHERE condition on the hive columns `date` / `hour` (both bounds inclusive, UTC); '' for no range."""
    low, high = _bounds(since, until)
    conditions = []
    if low is not None:
        conditions.append(f"(date > DATE '{low[0]}' OR (date = DATE '{low[0]}' AND hour >= {low[1]}))")
    if high is not None:
        conditions.append(f"(date < DATE '{high[0]}' OR (date = DATE '{high[0]}' AND hour <= {high[1]}))")
    return " AND ".join(conditions)


def partition_globs(
    lake: str,
    sub: str,
    since: dt.date | dt.datetime | str | None = None,
    until: dt.date | dt.datetime | str | None = None,
) -> list[str]:
    """The file globs of one hive-partitioned table for a range of start hours (inclusive, UTC).

    A local lake lists its `date=/hour=` directories and keeps those in range, so DuckDB never opens
    another file (not even its footer). On object storage a range with both ends names one glob per day
    (DuckDB then lists only those prefixes); the hour bounds and an open range are left to the WHERE of
    `partition_filter`, which DuckDB applies to the listed paths before reading them.
    """
    root = f"{lake.rstrip('/')}/{sub}"
    low, high = _bounds(since, until)
    if low is None and high is None:
        return [f"{root}/**/*.parquet"]
    if is_remote(lake):
        if low is None or high is None:
            return [f"{root}/**/*.parquet"]
        days = [low[0] + dt.timedelta(days=n) for n in range((high[0] - low[0]).days + 1)]
        return [f"{root}/date={day}/*/*.parquet" for day in days]
    globs = []
    for directory in sorted(Path(root).glob("date=*/hour=*")):
        try:
            key = (dt.date.fromisoformat(directory.parent.name[5:]), int(directory.name[5:]))
        except ValueError:
            continue  # not a partition directory
        if (low is None or key >= low) and (high is None or key <= high) and any(directory.glob("*.parquet")):
            globs.append(f"{directory}/*.parquet")
    return globs


def source_sql(
    lake: str, sub: str, hive: bool, where: str = "", globs: list[str] | None = None, union_by_name: bool = True
) -> str:
    """The SELECT that reads one table of the lake (`spans`, `logs`, `scores`) with DuckDB's read_parquet.

    The same text serves a directory and an `s3://` prefix: DuckDB resolves the globs through httpfs.
    union_by_name: files written by an older lake format, without a newer column, still read (as NULL).
    Without it, columns still match by name, and a file without one of them is an error, never a
    misread; a wide read is about twice as fast.
    """
    paths = globs if globs is not None else [f"{lake.rstrip('/')}/{sub}/**/*.parquet"]
    for path in paths:
        if "'" in path:
            raise LakeError(f"lake path {path!r} contains a quote; move or rename it")
    listed = ", ".join(f"'{p}'" for p in paths)
    hive_opt = "true" if hive else "false"
    # The partition columns' types, declared: detected, `hour` is VARCHAR as soon as one directory is
    # hour=00 ... hour=09 (a leading zero), BIGINT otherwise, and a filter on it fails half the day.
    types = ", hive_types = {'date': DATE, 'hour': BIGINT}" if hive and _partitioned(lake, sub, globs) else ""
    sql = (
        "SELECT * EXCLUDE (filename), filename AS source_file "
        f"FROM read_parquet([{listed}], hive_partitioning = {hive_opt}, union_by_name = {str(union_by_name).lower()}, "
        f"filename = true{types})"
    )
    return f"{sql} WHERE {where}" if where and hive else sql


def _partitioned(lake: str, sub: str, globs: list[str] | None) -> bool:
    """Whether the files read lie in `date=/hour=` partitions, as both writers put them (DuckDB refuses
    declared partition types for files outside any): globs of partitions, a remote lake, or a local one whose
    first file is in one."""
    if globs is not None:
        return all("/date=" in g for g in globs)  # a partition, or all of a day's (date=D/*)
    if is_remote(lake):
        return True
    first = next((Path(lake) / sub).rglob("*.parquet"), None)
    return first is None or (first.parent.name.startswith("hour=") and first.parent.parent.name.startswith("date="))


_STRICT = "tv_strict_"


def _register_source(
    con: duckdb.DuckDBPyConnection,
    name: str,
    lake: str,
    sub: str,
    schema: pa.Schema,
    hive: bool,
    since: dt.date | dt.datetime | str | None = None,
    until: dt.date | dt.datetime | str | None = None,
) -> None:
    ranged = hive and (since is not None or until is not None)
    globs = partition_globs(lake, sub, since, until) if ranged else None
    if is_remote(lake) or (bool(globs) if ranged else _has_parquet(Path(lake) / sub)):
        where = partition_filter(since, until) if hive else ""
        select = source_sql(lake, sub, hive, where, globs)
        missing = missing_columns(con, select, schema)
        con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT *{missing} FROM ({select})")
        # the same files read without union_by_name, for session_lookup's wide reads of a few rows
        strict = source_sql(lake, sub, hive, where, globs, union_by_name=False)
        con.execute(f"CREATE OR REPLACE VIEW {_STRICT}{name} AS SELECT *{missing} FROM ({strict})")
        return
    _register_empty(con, name, schema, hive)


def _register_empty(con: duckdb.DuckDBPyConnection, name: str, schema: pa.Schema, hive: bool) -> None:
    """`name` (and its strict twin) as a typed empty table: a lake with no such files yet."""
    empty = schema.empty_table()
    if hive:
        empty = empty.append_column("date", pa.array([], pa.date32())).append_column("hour", pa.array([], pa.int64()))
    empty = empty.append_column("source_file", pa.array([], pa.string()))
    con.register(f"{name}_empty", empty)
    con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {name}_empty")
    con.execute(f"CREATE OR REPLACE VIEW {_STRICT}{name} AS SELECT * FROM {name}_empty")


def missing_columns(con: duckdb.DuckDBPyConnection, select: str, schema: pa.Schema) -> str:
    """Select-list items (", CAST(NULL AS type) AS name ...") for the columns of `schema` that no file read
    by `select` has (a lake written by an older version of the lake format): they read as NULL."""
    have = {row[0] for row in con.execute(f"DESCRIBE {select}").fetchall()}
    return "".join(f", CAST(NULL AS {_sql_type(f.type)}) AS {f.name}" for f in schema if f.name not in have)


_SQL_TYPES = {
    pa.string(): "VARCHAR",
    pa.int64(): "BIGINT",
    pa.int32(): "INTEGER",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    pa.list_(pa.string()): "VARCHAR[]",
    pa.timestamp("ns", tz="UTC"): "TIMESTAMPTZ",
}


def _sql_type(arrow_type: pa.DataType) -> str:
    return _SQL_TYPES[arrow_type]


def _default_prices() -> PricesT:
    return default_prices()


def _register_prices(con: duckdb.DuckDBPyConnection, prices: PricesT) -> None:
    models = sorted(prices)
    table = pa.table(
        {
            "model": pa.array(models, pa.string()),
            "input_usd_per_mtok": pa.array([float(prices[m][0]) for m in models], pa.float64()),
            "output_usd_per_mtok": pa.array([float(prices[m][1]) for m in models], pa.float64()),
        }
    )
    con.register("model_prices_table", table)
    con.execute("CREATE OR REPLACE VIEW model_prices AS SELECT * FROM model_prices_table")


def sandbox(con: duckdb.DuckDBPyConnection, lake: str) -> None:
    """Let the connection read the lake and nothing else, for good.

    After this, even a SELECT cannot read or write a file outside the lake (`read_csv('/etc/passwd')`,
    `read_parquet('other/**')`), install or load an extension, or change a setting back.
    """
    root = lake.rstrip("/") + "/" if is_remote(lake) else str(Path(lake).resolve()) + os.sep
    con.execute("SET allowed_directories = ?", [[root]])
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET lock_configuration = true")


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
    if view not in VIEW_NAMES:
        raise LakeError(f"unknown view {view!r} (choose from {', '.join(VIEW_NAMES)})")
    from tracevals.queries.materialize import materialized  # it reads this module's view files

    # the session's traces, and the files that hold their spans: the wide copy below then opens only those
    find = (
        "SELECT DISTINCT trace_id, source_file FROM {0} "
        "WHERE trace_id IN (SELECT trace_id FROM {0} WHERE session_id = ?)"
    )
    try:  # union_by_name reads every file's schema first: three times slower over a few columns
        rows = con.execute(find.format(f"{_STRICT}raw_spans"), [session_id]).fetchall()
    except duckdb.InvalidInputException:  # files of two lake formats
        rows = con.execute(find.format("raw_spans"), [session_id]).fetchall()
    # inlined as literals (hex ids only), so that DuckDB pushes them into the scans as constants
    traces = sorted({str(r[0]) for r in rows if r[0] is not None and _HEX.fullmatch(str(r[0]))})
    files = sorted({str(r[1]) for r in rows if r[1] is not None})
    listed = ", ".join(f"'{t}'" for t in traces) or "NULL"
    [(lake, snapshots, catalog, disabled)] = con.execute(
        "SELECT getvariable('tracevals_lake'), getvariable('tracevals_snapshots'), current_database(), "
        "current_setting('disabled_optimizers')"
    ).fetchall()
    bases = ["raw_spans", "raw_logs", "raw_scores", *(snapshots or [])]
    try:
        for name in bases:
            # a small table per base relation, read once: the views reference the bases many times
            copy = f"CREATE OR REPLACE TEMP TABLE tv_lookup_{name} AS SELECT * FROM {{}} WHERE trace_id IN ({listed})"
            strict = f"{_STRICT}{name}"
            if name == "raw_spans" and lake and files:
                strict = f"({files_sql(con, lake, SPANS_DIR, files, union_by_name=False)})"
            if not (name.startswith("raw_") and _copied_strictly(con, copy, name, strict)):
                con.execute(copy.format(f"{catalog}.main.{name}"))
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM tv_lookup_{name}")
        tuned = _set_disabled_optimizers(con, _LOOKUP_DISABLED_OPTIMIZERS)
        try:
            with materialized(con, [view], known_empty=_without_content):
                return con.sql(f"SELECT * FROM {view} WHERE session_id = ?", params=[session_id]).to_arrow_table()
        finally:
            if tuned:
                _set_disabled_optimizers(con, disabled)
    finally:  # one call: each statement costs a round trip
        con.execute(
            ";".join(
                f"DROP VIEW IF EXISTS temp.main.{name}; DROP TABLE IF EXISTS temp.main.tv_lookup_{name}"
                for name in bases
            )
        )


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


_RAW_SCHEMAS = {"raw_spans": SPAN_SCHEMA, "raw_logs": LOG_SCHEMA, "raw_scores": SCORE_SCHEMA}


_DIR_SCHEMAS = {SPANS_DIR: SPAN_SCHEMA, LOGS_DIR: LOG_SCHEMA}


def files_sql(
    con: duckdb.DuckDBPyConnection, lake: str, sub: str, globs: list[str] | None = None, union_by_name: bool = True
) -> str:
    """Some of the lake's span or log files (`globs`, else all) read as `raw_spans` / `raw_logs` read
    them: hive columns, source_file, and the columns no file has (an older lake format) as NULL.

    union_by_name=False reads the columns of the first file only (and fails on a later file that lacks
    one): the columns that some later file has and the first lacks are then missing from the result, not
    NULL, so that a caller can tell (`_copied_strictly`) and read through union_by_name instead."""
    select = source_sql(lake, sub, hive=True, globs=globs, union_by_name=union_by_name)
    every = select if union_by_name else source_sql(lake, sub, hive=True, globs=globs, union_by_name=True)
    return f"SELECT *{missing_columns(con, every, _DIR_SCHEMAS[sub])} FROM ({select})"


def _copied_strictly(con: duckdb.DuckDBPyConnection, copy: str, name: str, strict: str) -> bool:
    """Run `copy` on `strict` (the raw files read without union_by_name); False where that cannot read
    them as the lake's view does (files of two lake formats), so that the caller copies through the view
    instead."""
    try:
        con.execute(copy.format(strict))
    except duckdb.InvalidInputException:  # a file without a column the first one has
        return False
    copied = {d[0] for d in con.execute(f"SELECT * FROM tv_lookup_{name} LIMIT 0").description}
    return set(_RAW_SCHEMAS[name].names) <= copied  # else the first file lacked a column a later one has


def _set_disabled_optimizers(con: duckdb.DuckDBPyConnection, value: str) -> bool:
    """False where the connection's settings are locked (a sandboxed `tracevals sql` connection)."""
    try:
        con.execute("SET disabled_optimizers = ?", [value])
    except duckdb.Error:
        return False
    return True


def open_lake(
    lake: str | os.PathLike[str],
    con: duckdb.DuckDBPyConnection | None = None,
    *,
    since: dt.date | dt.datetime | str | None = None,
    until: dt.date | dt.datetime | str | None = None,
    prices: PricesT | None = None,
    memory_limit: str | None = None,
    threads: int | None = None,
    read_only: bool = False,
    materialize: bool | tuple[str, ...] = False,
    snapshot_path: str | os.PathLike[str] | None = None,
    read_spans: bool = True,
    views: tuple[str, ...] | None = None,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection whose views read the lake at `lake` (a directory, or an `s3://` URL).

    since / until: keep only the spans and log records whose start hour is in range (inclusive, UTC;
    a date, a datetime, or text `YYYY-MM-DD` / `YYYY-MM-DDTHH`). prices: USD per million tokens
    (input, output) by model name, for the `cost_usd` columns. memory_limit (e.g. "4GB") and threads
    bound DuckDB. read_only: sandbox the connection to the lake (see `sandbox`), as `tracevals sql` does.
    materialize: snapshot the base views (MATERIALIZE, or the names given) into temporary tables once, so
    that a job running many queries over a big lake deduplicates and un-nests its spans once; the
    connection then no longer sees files that arrive later. snapshot_path: keep those tables in a DuckDB
    file there (compressed, paged out under memory_limit) instead of in memory; the caller removes it.
    read_spans=False: `raw_spans` and `raw_logs` start empty (the views bind against no files, which is
    quicker), for a caller that points them at files of its own (`export.export_view`'s workers).
    views: define only these views and those they read (defining all of them binds every view's whole
    tree of views: most of the time it takes to open a small lake).
    """
    lake_str = os.fspath(lake)
    if not is_remote(lake_str) and not Path(lake_str).is_dir():
        raise LakeError(f"lake {lake_str!r} is not a directory; pass the folder that holds spans/")
    con = con or duckdb.connect(":memory:")
    con.execute("SET parquet_metadata_cache = true")
    if memory_limit:
        con.execute("SET memory_limit = ?", [memory_limit])
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    if is_remote(lake_str):
        try:
            con.execute("LOAD httpfs")
        except duckdb.Error as exc:
            raise LakeError(f"reading {lake_str} needs DuckDB's httpfs extension: {str(exc).splitlines()[0]}") from exc
    for raw, sub, schema in (("raw_spans", SPANS_DIR, SPAN_SCHEMA), ("raw_logs", LOGS_DIR, LOG_SCHEMA)):
        if read_spans:
            _register_source(con, raw, lake_str, sub, schema, True, since, until)
        else:
            _register_empty(con, raw, schema, True)
    _register_source(con, "raw_scores", lake_str, SCORES_DIR, SCORE_SCHEMA, False)
    _register_prices(con, _default_prices() if prices is None else prices)
    snapshot = set(MATERIALIZE if materialize is True else materialize or ())
    unknown = snapshot - set(VIEW_NAMES)
    if unknown:
        raise LakeError(f"cannot materialize {sorted(unknown)}: not views (choose from {', '.join(VIEW_NAMES)})")
    create, schema = "CREATE OR REPLACE TEMP TABLE", "temp"
    if snapshot and snapshot_path is not None:
        con.execute("ATTACH ? AS tv_snapshot", [os.fspath(snapshot_path)])
        create, schema = "CREATE OR REPLACE TABLE", "tv_snapshot"
    wanted = None
    if views is not None:
        from tracevals.queries.materialize import closure  # it reads this module's view files

        unknown_views = set(views) - set(VIEW_NAMES)
        if unknown_views:
            raise LakeError(f"unknown views {sorted(unknown_views)} (choose from {', '.join(VIEW_NAMES)})")
        wanted = set(closure(views)) | {"model_prices"}
    for file_name, sql in view_sql():
        if wanted is not None and not _defined_views(sql) & wanted:
            continue
        try:
            con.execute(sql)
            for name in _defined_views(sql) & snapshot:
                # The snapshot takes the view's name, so every view defined after it reads the snapshot
                # (and binds against a table, not the whole tree of views beneath).
                con.execute(f"{create} {schema}.{name}_snapshot AS SELECT * FROM {name}")
                con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {schema}.{name}_snapshot")
        except duckdb.Error as exc:
            raise LakeError(f"view file {file_name}: {str(exc).splitlines()[0]}") from exc
    # for session_lookup: where the span files are, and which views are snapshots on this connection
    con.execute("SET VARIABLE tracevals_lake = ?", [lake_str if read_spans else None])
    con.execute("SET VARIABLE tracevals_snapshots = ?", [[n for n in VIEW_NAMES if n in snapshot]])
    if read_only:
        sandbox(con, lake_str)
    return con
