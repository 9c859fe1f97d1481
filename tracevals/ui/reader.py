"""The UI's long-lived, read-only connections to a lake, every query on them bounded in time and rows.

A DuckDB connection's view snapshot (and its temporary tables) is connection-local, so the UI keeps one
connection for its pages, opened once (in the background: the first page is served before it is
ready), sandboxed to the lake (`queries.connection.sandbox`: it reads the lake and nothing else) and used by
one request at a time. The SQL page runs what a person types on a second one, locked as `tracevals sql`
locks its own (`open_lake(read_only=True)`: no setting can change), kept until the lake changes: a small
lake's snapshot serves every query, and on a larger one what `tracevals sql` computes once for a query at
open is computed once around it (`queries.user_query.query_views_computed`). The page connection is not
locked, because the per-trace lookup turns off optimizer passes that cost more than they save on a few rows. A
watcher thread lists the lake every few seconds; when files land (a run writing, a collector rotating,
a score job storing) it opens a new connection beside the old one and swaps it in, so that no request
waits for a reopen and none sees half of one.

Every query runs under a time limit (a timer calls `interrupt()` on the connection) and returns at most
a row cap, read batch by batch: a query that would return a million rows reads the first cap + 1.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs

from tracevals.lake.lake import Lake
from tracevals.lake.unreadable import error_line
from tracevals.queries import open_lake
from tracevals.queries.connection import sandbox
from tracevals.queries.user_query import query_views_computed

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


def lake_fingerprint(lake: Lake) -> tuple[Any, ...]:
    """What changes when files land in a lake: every Parquet file's path, size and modification time, and the
    kept cases and prices (the lake's listing: on object storage one LIST request per 1,000 files)."""
    seen = [(i.path, i.size, i.mtime_ns) for sub in _TABLES for i in lake.list_parquet(sub)]
    seen += [(f"run_cases/{n}", 0, 0) for n in lake.list_names("run_cases")]
    prices = lake.filesystem.get_file_info(lake.path("prices.json"))
    if prices.type == pafs.FileType.File:
        seen.append((prices.path, prices.size, prices.mtime_ns))
    return tuple(sorted(seen))


_TABLES = ("spans", "logs", "scores", "step_reliability")


class LakeReader:
    """The connections to `lake`, reopened in the background when its files change.

    >>> reader = LakeReader("demo-out/lake"); reader.start()
    >>> reader.rows("select count(*) as n from runs").table.to_pylist()
    """

    def __init__(
        self,
        lake: Lake,
        *,
        query_seconds: float = QUERY_SECONDS,
        row_cap: int = ROW_CAP,
        poll_seconds: float | None = None,
        on_reopen: Callable[[int], None] | None = None,
    ) -> None:
        self.lake = lake
        self.query_seconds = query_seconds
        self.row_cap = row_cap
        self.poll_seconds = (
            poll_seconds if poll_seconds is not None else (2.0 if lake.local_folder is not None else 30.0)
        )
        self.on_reopen = on_reopen
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._open_error: str | None = None
        self.fingerprint = lake_fingerprint(lake)
        self._con: duckdb.DuckDBPyConnection | None = None
        self._sql_con: duckdb.DuckDBPyConnection | None = None
        self.generation = 1  # raised at every reopen: caches keyed on it know the lake moved on
        self.opened_at = time.time()
        self._watcher: threading.Thread | None = None

    def _open(self) -> duckdb.DuckDBPyConnection:
        con = open_lake(self.lake)
        sandbox(con, self.lake, lock=False)
        return con

    def start(self) -> None:
        """Open the page connection, then watch the lake for new files (a daemon thread; `close` stops it)."""
        if self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, name="tracevals-ui-watch", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        try:
            con = self._open()
            with self._lock:
                self._con = con
        except Exception as exc:  # said by every page that needs the connection
            self._open_error = f"cannot open the lake {self.lake}: {error_line(exc)}"
        self._ready.set()
        while not self._stop.wait(self.poll_seconds):
            try:
                self.refresh()
            except Exception as exc:  # a lake being written can list oddly for a moment: try again later
                print(f"tracevals ui: could not reopen {self.lake}: {error_line(exc)}", flush=True)

    def refresh(self) -> bool:
        """Reopen when the lake's files changed since the last open; True when it did."""
        now = lake_fingerprint(self.lake)
        if now == self.fingerprint:
            return False
        fresh = self._open()  # beside the old connection: requests go on meanwhile
        with self._lock:
            old, self._con = self._con, fresh
            sql, self._sql_con = self._sql_con, None  # the SQL page's reopens at its next query
            self.fingerprint = now
            self.generation += 1
            self.opened_at = time.time()
            self._open_error = None
            generation = self.generation
        self._ready.set()
        for con in (old, sql):
            if con is not None:
                con.close()
        if self.on_reopen is not None:
            self.on_reopen(generation)
        return True

    def close(self, wait_s: float = 10.0) -> None:
        """Stop watching and close the connections. The watcher is waited for (at most `wait_s`): a daemon
        thread still inside DuckDB or Arrow when the process exits ends it with SIGABRT ("terminate called …
        FATAL: exception not rethrown") instead of its exit status."""
        self._stop.set()
        if self._watcher is not None and self._watcher.is_alive() and self._watcher is not threading.current_thread():
            self._watcher.join(wait_s)
        with self._lock:
            for con in (self._con, self._sql_con):
                if con is not None:
                    con.close()

    def _page_connection(self, limit: float) -> duckdb.DuckDBPyConnection:
        if not self._ready.wait(limit):
            raise QueryLimit(f"the lake is still opening (more than {limit:g} s so far); try again in a moment")
        if self._con is None:
            raise QueryLimit(self._open_error or f"cannot open the lake {self.lake}")
        return self._con

    @contextmanager
    def connection(
        self, seconds: float | None = None, user_sql: bool = False, query: str = ""
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one request at a time, interrupted after `seconds` (default: the time limit): the
        pages' own, or (user_sql) the locked sandbox of `tracevals sql` that runs `query`, what a person typed,
        with what `tracevals sql` would compute once for it computed once (within the limit)."""
        limit = self.query_seconds if seconds is None else seconds
        self._page_connection(limit)  # waits for the first open
        with self._lock:
            if user_sql:
                if self._sql_con is None:
                    self._sql_con = open_lake(self.lake, read_only=True)
                con = self._sql_con
            else:
                con = self._page_connection(limit)
            stopped = threading.Event()

            def stop() -> None:
                stopped.set()
                con.interrupt()

            timer = threading.Timer(limit, stop)
            timer.daemon = True
            timer.start()
            try:
                with query_views_computed(con, query) if user_sql else contextlib.nullcontext():
                    if stopped.is_set():  # the limit came between two statements, where no interrupt lands
                        raise duckdb.InterruptException("interrupted while the query's views were computed")
                    yield con
            except Exception as exc:
                if stopped.is_set() or isinstance(exc, duckdb.InterruptException):
                    raise QueryLimit(f"the query ran past the time limit of {limit:g} s and was stopped") from exc
                raise
            finally:
                timer.cancel()

    def run(self, work: Callable[[duckdb.DuckDBPyConnection], T], seconds: float | None = None) -> T:
        """`work(page connection)` under the time limit."""
        with self.connection(seconds) as con:
            return work(con)

    def rows(
        self,
        sql: str,
        params: Sequence[Any] = (),
        cap: int | None = None,
        seconds: float | None = None,
        user_sql: bool = False,
    ) -> Rows:
        """At most `cap` rows of `sql` (default: the row cap), read batch by batch, under the time limit."""
        limit = self.row_cap if cap is None else cap
        started = time.perf_counter()
        with self.connection(seconds, user_sql, sql) as con:
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
