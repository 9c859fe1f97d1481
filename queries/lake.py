"""Open a lake as a DuckDB connection with every view of `queries/views/` defined.

>>> con = open_lake("demo-out/lake")
>>> con.sql("select task_id, tools from trajectories limit 3").pl()   # Polars; .arrow() for Arrow

The views are plain SQL files, applied in file-name order; each reads only views defined before it.
`raw_spans`, `raw_logs` and `raw_scores` are the Parquet files as written (a typed empty table when there are
none yet), so every view exists, and a query over an empty lake returns no rows rather than failing.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import duckdb
import pyarrow as pa

from tracevals.collector.schema import LOG_SCHEMA, LOGS_DIR, SCORE_SCHEMA, SCORES_DIR, SPAN_SCHEMA, SPANS_DIR

VIEW_NAMES = (
    "spans",
    "logs",
    "attempts",
    "model_calls",
    "tool_calls",
    "steps",
    "runs",
    "trajectories",
    "handoffs",
    "scores",
)


class LakeError(Exception):
    """The lake cannot be opened (missing directory, unreadable files)."""


def view_sql() -> list[tuple[str, str]]:
    """The view files, in the order they are applied: (file name, SQL text)."""
    folder = resources.files("tracevals.queries").joinpath("views")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [(f.name, f.read_text(encoding="utf-8")) for f in files]


def _is_remote(lake: str) -> bool:
    return "://" in lake


def _has_parquet(directory: Path) -> bool:
    return directory.is_dir() and any(directory.rglob("*.parquet"))


def _register_source(
    con: duckdb.DuckDBPyConnection, name: str, lake: str, sub: str, schema: pa.Schema, hive: bool
) -> None:
    glob = f"{lake.rstrip('/')}/{sub}/**/*.parquet"
    if _is_remote(lake) or _has_parquet(Path(lake) / sub):
        hive_opt = "true" if hive else "false"
        con.execute(
            f"CREATE OR REPLACE VIEW {name} AS SELECT * EXCLUDE (filename), filename AS source_file "
            f"FROM read_parquet('{glob}', hive_partitioning = {hive_opt}, union_by_name = true, filename = true)"
        )
        return
    empty = schema.empty_table()
    if hive:
        empty = empty.append_column("date", pa.array([], pa.date32())).append_column("hour", pa.array([], pa.int64()))
    empty = empty.append_column("source_file", pa.array([], pa.string()))
    con.register(f"{name}_empty", empty)
    con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {name}_empty")


def open_lake(lake: str | os.PathLike[str], con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection whose views read the lake at `lake` (a directory, or an `s3://` URL)."""
    lake_str = os.fspath(lake)
    if not _is_remote(lake_str) and not Path(lake_str).is_dir():
        raise LakeError(f"lake {lake_str!r} is not a directory; pass the folder that holds spans/")
    con = con or duckdb.connect(":memory:")
    if "'" in lake_str:
        raise LakeError(f"lake path {lake_str!r} contains a quote; move or rename it")
    _register_source(con, "raw_spans", lake_str, SPANS_DIR, SPAN_SCHEMA, hive=True)
    _register_source(con, "raw_logs", lake_str, LOGS_DIR, LOG_SCHEMA, hive=True)
    _register_source(con, "raw_scores", lake_str, SCORES_DIR, SCORE_SCHEMA, hive=False)
    for name, sql in view_sql():
        try:
            con.execute(sql)
        except duckdb.Error as exc:
            raise LakeError(f"view file {name}: {exc}") from exc
    return con
