"""Span and log files as they arrive, and the views over rows held in memory (for live scoring).

`NewFiles` lists the files of one lake table (`spans/`, `logs/`) in recent partitions that it has not
returned before, with bounded memory: a partition directory is listed again only when its mtime changed,
and a file is remembered only while its mtime is within `slack_s` of the newest one seen (files are renamed
into place, so a slow writer's file can arrive with an mtime a little older than files already seen).

`read_span_files` / `read_log_files` read such files as the rows the views expect, skipping (with one
warning each) the files that are no such rows; `trace_ids=` keeps only some traces' rows, file by file, so
that reading a day of files back for a few late sessions holds one file at a time, never the day.

`LiveConnection` defines the lake's views once over rows held in memory, then scores batch after batch of
them (`load(spans, logs)` swaps the rows under the views), so live scoring reads exactly what offline
scoring reads (the same SQL files, applied in order) without binding the tree of views again every round;
`connection_for_spans(table)` is the one-off form.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tracevals.lake.compact import COMPACTED_NAME, compacted_from
from tracevals.lake.schema import (
    LOG_SCHEMA,
    SCORE_SCHEMA,
    SPAN_SCHEMA,
    SPANS_DIR,
    STEP_RELIABILITY_SCHEMA,
    ColumnMismatch,
    conformed_columns,
    empty_table,
    python_array,
)
from tracevals.model.prices import default_prices
from tracevals.queries.binding import bind
from tracevals.queries.catalog import view_sql
from tracevals.queries.interrupts import connect
from tracevals.queries.sources import register_arrow, register_prices

_log = logging.getLogger(__name__)


class NewFiles:
    """The files of `folder/<sub>` (a local lake's folder; span files by default) not returned before, in
    partitions at most `late_window_s` old."""

    def __init__(
        self,
        folder: Path,
        late_window_s: float = 86400.0,
        slack_s: float = 120.0,
        sub: str = SPANS_DIR,
        skew_s: float = 300.0,
    ) -> None:
        self.root = folder / sub
        self.late_window_s = late_window_s
        # a partition whose hour starts after now + skew_s holds future-dated spans (a client's clock ahead):
        # not read, so never scored (tracevals.lake.clock); `future` names those seen
        self.skew_s = skew_s
        self.future: set[Path] = set()
        self.slack_s = slack_s
        self._dir_mtimes: dict[Path, float] = {}
        self._seen: dict[str, float] = {}
        self._newest = 0.0

    def poll(self, now: float | None = None) -> list[Path]:
        now = time.time() if now is None else now
        found: list[tuple[float, Path]] = []
        for directory in self._recent_partitions(now):
            try:
                mtime = directory.stat().st_mtime
            except FileNotFoundError:  # removed since it was listed
                continue
            if self._dir_mtimes.get(directory) == mtime:
                continue
            self._dir_mtimes[directory] = mtime
            with os.scandir(directory) as entries:
                for entry in entries:
                    if not entry.name.endswith(".parquet") or entry.name.startswith("."):
                        continue
                    try:
                        file_mtime = entry.stat().st_mtime
                    except FileNotFoundError:  # compacted away since the listing
                        continue
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
        # the reader's clock: the wall clock (or `now`, when a caller's clock is ahead of it)
        ahead = datetime.fromtimestamp(max(now, time.time()) + self.skew_s, tz=timezone.utc)
        ceiling = (ahead.strftime("%Y-%m-%d"), ahead.strftime("%H"))
        partitions = []
        for date_dir in sorted(self.root.glob("date=*")):
            day = date_dir.name.removeprefix("date=")
            if day < floor[0]:
                continue
            for hour_dir in sorted(date_dir.glob("hour=*")):
                key = (day, hour_dir.name.removeprefix("hour="))
                if key > ceiling:
                    self.future.add(hour_dir)
                elif key >= floor:
                    partitions.append(hour_dir)
        live = set(partitions)
        self._dir_mtimes = {d: m for d, m in self._dir_mtimes.items() if d in live}
        return partitions


# A span file without these is no span file at all; every other column may be missing (read as null).
_REQUIRED = ("trace_id", "span_id", "start_time")
_LOG_REQUIRED = ("trace_id", "time")
_warned: set[str] = set()
# A span file with more rows than this is skipped by live scoring: reading it would hold them all at once (a
# small file of 30 million dictionary-encoded rows took 2.2 GB). The collector's files have 500,000 at most
# by default, a compacted hour's about a million; `tracevals score` (a batch, in bounded groups) reads any.
MAX_FILE_ROWS = 4_000_000


class Unreadable(ValueError):
    """A file in the spans folder that live scoring cannot read as span rows (why, in the message)."""


def read_span_files(
    paths: Sequence[Path], max_rows: int = MAX_FILE_ROWS, trace_ids: pa.Array | None = None
) -> pa.Table:
    """Span rows of these files with the columns the views expect (`date`, `hour`, `source_file`); with
    `trace_ids`, only those traces' rows (filtered file by file).

    A file that cannot be read as span rows (corrupt, not under a `date=YYYY-MM-DD/hour=HH` folder, no
    span columns, a column of another type) is left where it is and skipped with one warning: the
    other files' sessions are scored all the same (a file removed by a compaction since it was listed
    is skipped silently: its rows are in another file), and so is one of more than `max_rows` rows."""
    return _read(paths, SPAN_SCHEMA, _REQUIRED, "span", max_rows, trace_ids)


def read_log_files(paths: Sequence[Path], max_rows: int = MAX_FILE_ROWS, trace_ids: pa.Array | None = None) -> pa.Table:
    """OTLP log records of these files as `raw_logs` holds them, by the rules of `read_span_files`; a
    record without a trace id belongs to no session and is left out."""
    table = _read(paths, LOG_SCHEMA, _LOG_REQUIRED, "log", max_rows, trace_ids)
    return table.filter(pc.is_valid(table.column("trace_id"))) if table.column("trace_id").null_count else table


def _read(
    paths: Sequence[Path],
    schema: pa.Schema,
    required: tuple[str, ...],
    what: str,
    max_rows: int,
    trace_ids: pa.Array | None,
) -> pa.Table:
    tables = []
    for path in paths:
        try:
            table = _rows(path, schema, required, what, max_rows)
        except FileNotFoundError:
            continue
        except Unreadable as exc:
            _quarantine(path, str(exc))
            continue
        if trace_ids is not None:
            table = table.filter(pc.is_in(table.column("trace_id"), value_set=trace_ids))
        tables.append(table)
    if not tables:
        return _empty(schema)
    return pa.concat_tables(tables, promote_options="default")


def _rows(path: Path, schema: pa.Schema, required: tuple[str, ...], what: str, max_rows: int) -> pa.Table:
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
        with pq.ParquetFile(path) as file:  # not `pq.read_table`: pyarrow.dataset imports pandas (~0.4 s)
            table = file.read()
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as exc:
        if not path.exists():
            raise FileNotFoundError(path) from exc
        raise Unreadable(f"not a readable Parquet file ({str(exc).splitlines()[0]})") from None
    missing = [name for name in required if name not in table.column_names]
    if missing:
        raise Unreadable(f"no {what} columns (no {', '.join(missing)}): not a {what} file")
    try:
        columns = conformed_columns(table, schema)
    except ColumnMismatch as exc:
        raise Unreadable(str(exc)) from None
    n = table.num_rows
    columns += [  # scalars from `python_array`: `pa.scalar` imports pandas (`score --follow`, live scoring)
        pa.repeat(python_array([value], type_)[0], n)
        for value, type_ in ((day, pa.date32()), (hour, pa.int64()), (str(path), pa.string()))
    ]
    return pa.Table.from_arrays(columns, schema=_with_file_columns(schema))


def _quarantine(path: Path, why: str) -> None:
    if str(path) not in _warned:  # one line per file, however often it is listed
        _warned.add(str(path))
        _log.warning("tracevals: skipping %s: %s (left in the lake; fix or move it)", path, why)


def _with_file_columns(schema: pa.Schema) -> pa.Schema:
    """`schema` with the columns `raw_spans` / `raw_logs` add to a file's: its partition and its path."""
    return pa.schema(
        [*schema, pa.field("date", pa.date32()), pa.field("hour", pa.int64()), pa.field("source_file", pa.string())],
        metadata=schema.metadata,
    )


def _empty(schema: pa.Schema) -> pa.Table:
    return empty_table(_with_file_columns(schema))


def empty_spans() -> pa.Table:
    return _empty(SPAN_SCHEMA)


def empty_logs() -> pa.Table:
    return _empty(LOG_SCHEMA)


class LiveConnection:
    """An in-memory DuckDB connection with every view of `queries/views/` over span and log rows that the
    caller holds: the views are defined once, and `load` puts other rows under them (a round of live
    scoring: binding the whole tree of views costs about two CPU seconds, every time)."""

    def __init__(
        self, prices: Mapping[str, tuple[float, float]] | None = None, memory_limit: str | None = None
    ) -> None:
        self.con = connect()
        if memory_limit is not None:  # the user's (`score --follow --memory-limit`): it holds
            self.con.execute("SET memory_limit = ?", [memory_limit])
        scores = empty_table(SCORE_SCHEMA).append_column("source_file", pa.nulls(0, pa.string()))
        steps = empty_table(STEP_RELIABILITY_SCHEMA).append_column("source_file", pa.nulls(0, pa.string()))
        bases = (("raw_spans", empty_spans()), ("raw_logs", empty_logs()), ("raw_scores", scores),
                 ("raw_step_reliability", steps))  # fmt: skip
        for name, table in bases:
            register_arrow(self.con, f"{name}_arrow", table)
            bind(self.con, name, f"SELECT * FROM {name}_arrow")
        self.prices(prices)
        for _, sql in view_sql():
            self.con.execute(sql)

    def prices(self, prices: Mapping[str, tuple[float, float]] | None) -> None:
        """Price model calls from these prices over the default table (`open_lake` does the same with the
        lake's `prices.json`)."""
        register_prices(self.con, {**default_prices(), **(prices or {})})

    def load(self, spans: pa.Table, logs: pa.Table | None = None) -> duckdb.DuckDBPyConnection:
        """The connection, its views over these rows (the `empty_spans()` / `empty_logs()` columns)."""
        register_arrow(self.con, "raw_spans_arrow", spans)
        register_arrow(self.con, "raw_logs_arrow", logs if logs is not None else empty_logs())
        return self.con

    def release(self) -> None:
        """Let go of the rows of the last `load` (the connection holds them until then)."""
        self.load(empty_spans(), empty_logs())

    def close(self) -> None:
        self.con.close()


def connection_for_spans(
    spans: pa.Table, logs: pa.Table | None = None, prices: Mapping[str, tuple[float, float]] | None = None
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with every view of `queries/views/` over these span (and log) rows."""
    return LiveConnection(prices).load(spans, logs)


def read_recent(root: Path, since: float, skip: set[str], read: Callable[[list[Path]], pa.Table]) -> pa.Table:
    """`read` of the Parquet files of the table folder `root` written since the time `since` (their
    modification time), but those named in `skip`. `tracevals compact` may replace files between the
    listing and the read (the new file holds their rows and keeps the newest one's time): then the folder
    is listed again, so that no row is missed."""
    for _ in range(5):
        recent, vanished = [], False
        for path in sorted(root.glob("date=*/hour=*/*.parquet")):
            try:
                if not path.name.startswith(".") and str(path) not in skip and path.stat().st_mtime >= since:
                    recent.append(path)
            except FileNotFoundError:
                vanished = True
        table = read(recent)
        if not (vanished or any(not path.exists() for path in recent)):
            break
    return table
