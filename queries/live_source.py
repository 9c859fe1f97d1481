"""Span files as they arrive, and the views over spans held in memory (for live scoring).

`NewFiles` lists the span files of recent partitions that it has not returned before, with bounded
memory: a partition directory is listed again only when its mtime changed, and a file is remembered
only while its mtime is within `slack_s` of the newest one seen (files are renamed into place, so a
slow writer's file can arrive with an mtime a little older than files already seen).

`connection_for_spans(table)` defines the lake's views over an Arrow table of span rows, so live
scoring reads exactly what offline scoring reads (the same SQL files, applied in order).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from tracevals.lake.compact import COMPACTED_NAME, compacted_from
from tracevals.lake.schema import LOG_SCHEMA, SCORE_SCHEMA, SPAN_SCHEMA, SPANS_DIR, STEP_RELIABILITY_SCHEMA
from tracevals.model.prices import default_prices
from tracevals.queries.sources import register_prices
from tracevals.queries.views import view_sql

_log = logging.getLogger(__name__)


class NewFiles:
    """The span files of `lake` not returned before, in partitions at most `late_window_s` old."""

    def __init__(self, lake: str | os.PathLike[str], late_window_s: float = 86400.0, slack_s: float = 120.0) -> None:
        self.root = Path(lake) / SPANS_DIR
        self.late_window_s = late_window_s
        self.slack_s = slack_s
        self._dir_mtimes: dict[Path, float] = {}
        self._seen: dict[str, float] = {}
        self._newest = 0.0

    def poll(self, now: float | None = None) -> list[Path]:
        now = time.time() if now is None else now
        found: list[tuple[float, Path]] = []
        for directory in self._recent_partitions(now):
            mtime = directory.stat().st_mtime
            if self._dir_mtimes.get(directory) == mtime:
                continue
            self._dir_mtimes[directory] = mtime
            with os.scandir(directory) as entries:
                for entry in entries:
                    if not entry.name.endswith(".parquet") or entry.name.startswith("."):
                        continue
                    file_mtime = entry.stat().st_mtime
                    if entry.path in self._seen or file_mtime < self._newest - self.slack_s:
                        continue
                    if self._replaces_seen(Path(entry.path)):
                        self._seen[entry.path] = file_mtime
                        continue
                    found.append((file_mtime, Path(entry.path)))
        for file_mtime, path in found:
            self._seen[str(path)] = file_mtime
            self._newest = max(self._newest, file_mtime)
        cutoff = self._newest - self.slack_s
        self._seen = {p: m for p, m in self._seen.items() if m >= cutoff}
        return [path for _, path in sorted(found)]

    def _replaces_seen(self, path: Path) -> bool:
        """Whether `path` is a compacted file (`tracevals compact`) that holds only files returned before:
        its rows are not new. It keeps its newest file's time, so it can look new to the time rule."""
        if not COMPACTED_NAME.search(path.name):
            return False
        try:
            names = compacted_from(path)
        except (OSError, pa.ArrowInvalid):
            return False
        return names is not None and all(str(path.parent / name) in self._seen for name in names)

    def _recent_partitions(self, now: float) -> list[Path]:
        if not self.root.is_dir():
            return []
        oldest = datetime.fromtimestamp(now - self.late_window_s, tz=timezone.utc) - timedelta(hours=1)
        floor = (oldest.strftime("%Y-%m-%d"), oldest.strftime("%H"))
        partitions = []
        for date_dir in sorted(self.root.glob("date=*")):
            day = date_dir.name.removeprefix("date=")
            if day < floor[0]:
                continue
            for hour_dir in sorted(date_dir.glob("hour=*")):
                if (day, hour_dir.name.removeprefix("hour=")) >= floor:
                    partitions.append(hour_dir)
        live = set(partitions)
        self._dir_mtimes = {d: m for d, m in self._dir_mtimes.items() if d in live}
        return partitions


# A span file without these is no span file at all; every other column may be missing (read as null).
_REQUIRED = ("trace_id", "span_id", "start_time")
_warned: set[str] = set()
# A span file with more rows than this is skipped by live scoring: reading it would hold them all at once (a
# small file of 30 million dictionary-encoded rows took 2.2 GB). The collector's files have 500,000 at most
# by default, a compacted hour's about a million; `tracevals score` (a batch, in bounded groups) reads any.
MAX_FILE_ROWS = 4_000_000


class Unreadable(ValueError):
    """A file in the spans folder that live scoring cannot read as span rows (why, in the message)."""


def read_span_files(paths: Sequence[Path], max_rows: int = MAX_FILE_ROWS) -> pa.Table:
    """Span rows of these files with the columns the views expect (`date`, `hour`, `source_file`).

    A file that cannot be read as span rows (corrupt, not under a `date=YYYY-MM-DD/hour=HH` folder, no
    span columns, a column of another type) is left where it is and skipped with one warning: the
    other files' sessions are scored all the same (a file removed by a compaction since it was listed
    is skipped silently: its rows are in another file), and so is one of more than `max_rows` rows."""
    tables = []
    for path in paths:
        try:
            tables.append(_span_rows(path, max_rows))
        except FileNotFoundError:
            continue
        except Unreadable as exc:
            _quarantine(path, str(exc))
    if not tables:
        return empty_spans()
    return pa.concat_tables(tables, promote_options="default")


def _span_rows(path: Path, max_rows: int = MAX_FILE_ROWS) -> pa.Table:
    parts = dict(p.split("=", 1) for p in (path.parent.parent.name, path.parent.name) if "=" in p)
    try:
        day = datetime.strptime(parts.get("date", "1970-01-01"), "%Y-%m-%d").date()
        hour = int(parts.get("hour", "0"))
        if not 0 <= hour <= 23:
            raise ValueError(hour)
    except ValueError:
        raise Unreadable(
            f"not in a date=YYYY-MM-DD/hour=HH folder ({path.parent.parent.name}/{path.parent.name})"
        ) from None
    try:
        rows = pq.read_metadata(path).num_rows  # the footer only: the size before anything is read
        if rows > max_rows:
            raise Unreadable(
                f"{rows:,} rows, over the {max_rows:,} live scoring reads from one file (--max-file-rows); "
                "score it with `tracevals score` (a batch, in bounded memory)"
            )
        table = pq.read_table(path)
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as exc:
        if not path.exists():
            raise FileNotFoundError(path) from exc
        raise Unreadable(f"not a readable Parquet file ({str(exc).splitlines()[0]})") from None
    missing = [name for name in _REQUIRED if name not in table.column_names]
    if missing:
        raise Unreadable(f"no span columns (no {', '.join(missing)}): not a span file")
    columns = []
    for f in SPAN_SCHEMA:
        if f.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, f.type))
            continue
        column = table.column(f.name)
        try:
            columns.append(column if column.type == f.type else column.cast(f.type))
        except (pa.ArrowException, ValueError):
            raise Unreadable(f"column {f.name} is {column.type}, not {f.type}") from None
    table = pa.Table.from_arrays(columns, schema=SPAN_SCHEMA)
    n = table.num_rows
    table = table.append_column("date", pa.array([day] * n, pa.date32()))
    table = table.append_column("hour", pa.array([hour] * n, pa.int64()))
    return table.append_column("source_file", pa.array([str(path)] * n, pa.string()))


def _quarantine(path: Path, why: str) -> None:
    if str(path) not in _warned:  # one line per file, however often it is listed
        _warned.add(str(path))
        _log.warning("tracevals: skipping %s: %s (left in the lake; fix or move it)", path, why)


def empty_spans() -> pa.Table:
    return (
        SPAN_SCHEMA.empty_table()
        .append_column("date", pa.array([], pa.date32()))
        .append_column("hour", pa.array([], pa.int64()))
        .append_column("source_file", pa.array([], pa.string()))
    )


def connection_for_spans(spans: pa.Table) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with every view of `queries/views/` over these span rows."""
    con = duckdb.connect(":memory:")
    logs = (
        LOG_SCHEMA.empty_table()
        .append_column("date", pa.array([], pa.date32()))
        .append_column("hour", pa.array([], pa.int64()))
        .append_column("source_file", pa.array([], pa.string()))
    )
    scores = SCORE_SCHEMA.empty_table().append_column("source_file", pa.array([], pa.string()))
    steps = STEP_RELIABILITY_SCHEMA.empty_table().append_column("source_file", pa.array([], pa.string()))
    bases = (("raw_spans", spans), ("raw_logs", logs), ("raw_scores", scores), ("raw_step_reliability", steps))
    for name, table in bases:
        con.register(f"{name}_arrow", table)
        con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {name}_arrow")
    # The views price model calls from `model_prices`; `open_lake` fills it the same way.
    register_prices(con, default_prices())
    for _, sql in view_sql():
        con.execute(sql)
    return con
