"""The UI's one long-lived, read-only connection to a lake, every query on it bounded in time and rows.

A DuckDB connection's view snapshot (and its temporary tables) is connection-local, so the UI keeps one
connection per lake, opened sandboxed (`open_lake(read_only=True)`: it reads the lake and nothing else)
and used by one request at a time. A watcher thread lists the lake every few seconds; when files land
(a run writing, a collector rotating, a score job storing) it opens a new connection beside the old one
and swaps it in, so that no request waits for a reopen and none sees half of one.

Every query runs under a time limit (a timer calls `interrupt()` on the connection) and returns at most
a row cap, read batch by batch: a query that would return a million rows reads the first cap + 1.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pyarrow as pa

from tracevals.queries import is_remote, open_lake

__all__ = ["QUERY_SECONDS", "ROW_CAP", "LakeReader", "QueryLimit", "lake_fingerprint"]

QUERY_SECONDS = 10.0  # TRACEVALS_UI_QUERY_SECONDS: the time limit of one query
ROW_CAP = 10_000  # TRACEVALS_UI_ROW_CAP: the most rows a query returns to a page

T = TypeVar("T")


class QueryLimit(Exception):
    """A query ran past its time limit (it was interrupted); the message says which limit."""


@dataclass(frozen=True)
class Rows:
    """A bounded result: the columns, at most `cap` rows, and whether more were left unread."""

    columns: list[str]
    table: pa.Table
    truncated: bool
    seconds: float


def lake_fingerprint(lake: str) -> tuple[Any, ...]:
    """What changes when files land in a lake: every Parquet file's path, size and mtime (a local lake),
    or its listing (object storage: one LIST request per 1,000 files)."""
    if is_remote(lake):
        from tracevals.lake.storage import list_parquet

        return tuple(sorted((i.path, i.size, i.mtime_ns) for sub in _TABLES for i in list_parquet(lake, sub)))
    seen = []
    for sub in _TABLES:
        for root, _dirs, files in os.walk(Path(lake) / sub):
            for name in files:
                if name.endswith(".parquet"):
                    try:
                        st = os.stat(os.path.join(root, name))
                    except OSError:
                        continue  # compacted away meanwhile
                    seen.append((root, name, st.st_size, st.st_mtime_ns))
    for name in ("run_cases", "prices.json"):
        path = Path(lake) / name
        if path.exists():
            seen.append((str(path), "", 0, path.stat().st_mtime_ns))
    return tuple(sorted(seen))


_TABLES = ("spans", "logs", "scores", "step_reliability")


class LakeReader:
    """One sandboxed connection to `lake`, reopened in the background when its files change.

    >>> reader = LakeReader("demo-out/lake")
    >>> reader.rows("select count(*) as n from runs").table.to_pylist()
    """

    def __init__(
        self,
        lake: str,
        *,
        query_seconds: float = QUERY_SECONDS,
        row_cap: int = ROW_CAP,
        poll_seconds: float | None = None,
        on_reopen: Callable[[int], None] | None = None,
    ) -> None:
        self.lake = lake
        self.query_seconds = query_seconds
        self.row_cap = row_cap
        self.poll_seconds = poll_seconds if poll_seconds is not None else (30.0 if is_remote(lake) else 2.0)
        self.on_reopen = on_reopen
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self.fingerprint = lake_fingerprint(lake)
        self._con = self._open()
        self.generation = 1  # raised at every reopen: caches keyed on it know the lake moved on
        self.opened_at = time.time()
        self._watcher: threading.Thread | None = None

    def _open(self) -> duckdb.DuckDBPyConnection:
        return open_lake(self.lake, read_only=True)

    def start(self) -> None:
        """Watch the lake for new files (a daemon thread; `close` stops it)."""
        if self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, name="tracevals-ui-watch", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            try:
                self.refresh()
            except Exception as exc:  # a lake being written can list oddly for a moment: try again later
                print(f"tracevals ui: could not reopen {self.lake}: {str(exc).splitlines()[0]}", flush=True)

    def refresh(self) -> bool:
        """Reopen when the lake's files changed since the last open; True when it did."""
        now = lake_fingerprint(self.lake)
        if now == self.fingerprint:
            return False
        fresh = self._open()  # beside the old connection: requests go on meanwhile
        with self._lock:
            old, self._con = self._con, fresh
            self.fingerprint = now
            self.generation += 1
            self.opened_at = time.time()
            generation = self.generation
        old.close()
        if self.on_reopen is not None:
            self.on_reopen(generation)
        return True

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self._con.close()

    @contextmanager
    def connection(self, seconds: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """The connection, for one request at a time, interrupted after `seconds` (default: the time limit)."""
        limit = self.query_seconds if seconds is None else seconds
        with self._lock:
            con = self._con
            timer = threading.Timer(limit, con.interrupt)
            timer.daemon = True
            timer.start()
            try:
                yield con
            except duckdb.InterruptException as exc:
                raise QueryLimit(f"the query ran past the time limit of {limit:g} s and was stopped") from exc
            finally:
                timer.cancel()

    def run(self, work: Callable[[duckdb.DuckDBPyConnection], T], seconds: float | None = None) -> T:
        """`work(connection)` under the time limit."""
        with self.connection(seconds) as con:
            return work(con)

    def rows(self, sql: str, params: Sequence[Any] = (), cap: int | None = None, seconds: float | None = None) -> Rows:
        """At most `cap` rows of `sql` (default: the row cap), read batch by batch, under the time limit."""
        limit = self.row_cap if cap is None else cap
        started = time.perf_counter()
        with self.connection(seconds) as con:
            relation = con.sql(sql, params=list(params)) if params else con.sql(sql)
            if relation is None:  # a statement without a result
                return Rows([], pa.table({}), False, time.perf_counter() - started)
            reader = relation.to_arrow_reader(min(limit + 1, 100_000))
            batches, count = [], 0
            for batch in reader:
                batches.append(batch)
                count += batch.num_rows
                if count > limit:
                    break
            table = pa.Table.from_batches(batches, schema=reader.schema)
        truncated = table.num_rows > limit
        return Rows(list(table.column_names), table.slice(0, limit), truncated, time.perf_counter() - started)
