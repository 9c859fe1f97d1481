"""Open a lake as a DuckDB connection with every view of `queries/views/` defined.

>>> con = open_lake("demo-out/lake")
>>> con.sql("select task_id, tools from trajectories limit 3").pl()      # a Polars DataFrame
>>> con.sql("select * from steps").arrow()                               # a pyarrow Table
>>> con.execute("select count(*) from sessions").fetchone()              # a tuple

DuckDB 2 relations (`con.sql(...)`) have `.pl()`, `.arrow()`, `.fetchall()` but no `fetchone()`: use
`con.execute(...)` for that, and for parameters (`con.execute("... where session_id = ?", [sid])`).

The views are plain SQL files, applied in file-name order; each reads only views defined before it.
`raw_spans`, `raw_logs` and `raw_scores` are the Parquet files as written (a typed empty table when there are
none yet), so every view exists, and a query over an empty lake returns no rows rather than failing.

A lake is a directory or an object-store prefix (`s3://bucket/lake`, read through DuckDB's httpfs
extension, see docs/queries.md). `since` / `until` keep only the `date=…/hour=…` partitions in range, so
DuckDB never opens the other files.
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

from tracevals.collector.schema import LOG_SCHEMA, LOGS_DIR, SCORE_SCHEMA, SCORES_DIR, SPAN_SCHEMA, SPANS_DIR

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


def partition_filter(
    since: dt.date | dt.datetime | str | None = None, until: dt.date | dt.datetime | str | None = None
) -> str:
    """A WHERE condition on the hive columns `date` / `hour` (both bounds inclusive, UTC); '' for no range.

    It names only partition columns, so DuckDB applies it to the file list and skips whole files.
    """
    conditions = []
    if since is not None:
        day, hour = _hour_bound(since, end=False)
        conditions.append(f"(date > DATE '{day}' OR (date = DATE '{day}' AND hour >= {hour}))")
    if until is not None:
        day, hour = _hour_bound(until, end=True)
        conditions.append(f"(date < DATE '{day}' OR (date = DATE '{day}' AND hour <= {hour}))")
    return " AND ".join(conditions)


def source_sql(lake: str, sub: str, hive: bool, where: str = "") -> str:
    """The SELECT that reads one table of the lake (`spans`, `logs`, `scores`) with DuckDB's read_parquet.

    The same text serves a directory and an `s3://` prefix: DuckDB resolves the glob through httpfs.
    """
    if "'" in lake:
        raise LakeError(f"lake path {lake!r} contains a quote; move or rename it")
    glob = f"{lake.rstrip('/')}/{sub}/**/*.parquet"
    hive_opt = "true" if hive else "false"
    sql = (
        "SELECT * EXCLUDE (filename), filename AS source_file "
        f"FROM read_parquet('{glob}', hive_partitioning = {hive_opt}, union_by_name = true, filename = true)"
    )
    return f"{sql} WHERE {where}" if where and hive else sql


def _register_source(
    con: duckdb.DuckDBPyConnection, name: str, lake: str, sub: str, schema: pa.Schema, hive: bool, where: str
) -> None:
    if is_remote(lake) or _has_parquet(Path(lake) / sub):
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {source_sql(lake, sub, hive, where)}")
        return
    empty = schema.empty_table()
    if hive:
        empty = empty.append_column("date", pa.array([], pa.date32())).append_column("hour", pa.array([], pa.int64()))
    empty = empty.append_column("source_file", pa.array([], pa.string()))
    con.register(f"{name}_empty", empty)
    con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {name}_empty")


def _default_prices() -> PricesT:
    try:  # the demo's prices live with the outcome arithmetic; a lake of other models simply has none
        from tracevals.outcomes import DEFAULT_PRICES
    except ImportError:
        return {}
    return DEFAULT_PRICES


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
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection whose views read the lake at `lake` (a directory, or an `s3://` URL).

    since / until: keep only the spans and log records whose start hour is in range (inclusive, UTC;
    a date, a datetime, or text `YYYY-MM-DD` / `YYYY-MM-DDTHH`). prices: USD per million tokens
    (input, output) by model name, for the `cost_usd` columns. memory_limit (e.g. "4GB") and threads
    bound DuckDB. read_only: sandbox the connection to the lake (see `sandbox`), as `tracevals sql` does.
    materialize: snapshot the base views (MATERIALIZE, or the names given) into temporary tables once, so
    that a job running many queries over a big lake deduplicates and un-nests its spans once; the
    connection then no longer sees files that arrive later.
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
    where = partition_filter(since, until)
    _register_source(con, "raw_spans", lake_str, SPANS_DIR, SPAN_SCHEMA, hive=True, where=where)
    _register_source(con, "raw_logs", lake_str, LOGS_DIR, LOG_SCHEMA, hive=True, where=where)
    _register_source(con, "raw_scores", lake_str, SCORES_DIR, SCORE_SCHEMA, hive=False, where="")
    _register_prices(con, _default_prices() if prices is None else prices)
    snapshot = set(MATERIALIZE if materialize is True else materialize or ())
    unknown = snapshot - set(VIEW_NAMES)
    if unknown:
        raise LakeError(f"cannot materialize {sorted(unknown)}: not views (choose from {', '.join(VIEW_NAMES)})")
    for file_name, sql in view_sql():
        try:
            con.execute(sql)
            for name in _defined_views(sql) & snapshot:
                # The snapshot takes the view's name, so every view defined after it reads the snapshot
                # (and binds against a table, not the whole tree of views beneath).
                con.execute(f"CREATE OR REPLACE TEMP TABLE {name}_snapshot AS SELECT * FROM {name}")
                con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {name}_snapshot")
        except duckdb.Error as exc:
            raise LakeError(f"view file {file_name}: {str(exc).splitlines()[0]}") from exc
    if read_only:
        sandbox(con, lake_str)
    return con
