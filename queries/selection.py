"""Which sessions a scoring run reads: a time range and a deterministic sample, always whole sessions.

`select_sessions(con, ...)` filters the lake's raw span and log rows to the chosen sessions once, into
temporary tables that shadow `raw_spans` / `raw_logs` on this connection, so every view (`spans`,
`tool_calls`, `trajectories`, ...) reads only the selection; it returns that `Restriction`, which the
caller hands to `session_chunks` and `trajectories.load_batch` (nothing guesses from the connection).

- A session is every trace with the same session id (a trace without one is its own session); it is
  in the range when its first span starts in `[since, until)`, and then all its traces are read,
  late turns included.
- The sample keeps a session by the one sampling rule of `tracevals.lake.sampling` (md5 of the seed and
  the session id): the same sessions for the same seed on any machine, in any engine with md5, and in
  the collector's sampler; a sampled session is always whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb

from tracevals.lake.sampling import bucket_sql, sampled_sql
from tracevals.model.errors import UserError
from tracevals.model.quoting import sql_string
from tracevals.queries.binding import RAW, drop_tables, is_shadowed, own, shadow, shadow_copy, unshadow, work_table
from tracevals.queries.catalog import query_sql
from tracevals.queries.connection import restrict_snapshots


class SelectionError(UserError, ValueError):
    """The selection is impossible, matches nothing, or names something the lake does not hold; one line."""


@dataclass(frozen=True)
class Selection:
    """Which sessions a command reads, the one definition `score`, `report`, `gate`, the engines and `score
    --follow` share. Empty: every session (a report: the latest run).

    `since` is inclusive, `until` exclusive, on a session's first span; `fraction` keeps that share of
    sessions, chosen by a hash of `seed` and the session id (`tracevals.lake.sampling`: a session is all in
    or all out, and the choice never changes); `runs` / `variants` keep the attempts of those harness runs
    and variants (and their sessions' other traces); `trace_ids` the sessions of these traces (live
    scoring). A report's `fraction` None: the sample the stored scores record, if any.
    """

    since: datetime | None = None
    until: datetime | None = None
    fraction: float | None = None  # None: every session
    seed: int = 0
    trace_ids: tuple[str, ...] | None = None  # only these traces' sessions (live scoring)
    runs: tuple[str, ...] = ()  # only the attempts of these harness runs (and their sessions' other traces)
    variants: tuple[str, ...] = ()  # only these variants' attempts (a report's baseline and candidate)

    def __post_init__(self) -> None:
        if self.fraction is not None and not 0.0 < self.fraction <= 1.0:
            raise SelectionError(f"sample must be in (0, 1], got {self.fraction}")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise SelectionError(f"--since {self.since.isoformat()} is not before --until {self.until.isoformat()}")

    # also the sessions that started this long before `since` and have a trace with no stored score yet: late
    # arrivals the previous run (of the window before) could not see (`tracevals.lake.clock`)
    late: timedelta | None = None

    def read_from(self, margin: timedelta) -> datetime | None:
        """The earliest start a reader must read the partitions of: `since`, less the late window, less
        `margin` (where a session that started earlier may begin); None for no lower bound."""
        if self.since is None:
            return None
        return self.since - (self.late or timedelta(0)) - margin

    def trace_condition(self) -> str:
        """The condition on `trajectories` a loader applies on top (the attempts of `runs`); '' for none."""
        if not self.runs:
            return ""
        return "run_id IN (" + ", ".join(sql_string(r) for r in self.runs) + ")"

    def sql_condition(self) -> str:
        """The condition on `s` (columns `sid`, `session_start`) this selection keeps."""
        parts = ["TRUE"]
        if self.since is not None and self.late:
            parts.append(
                f"(s.session_start >= {_at(self.since)} OR (s.session_start >= {_at(self.since - self.late)} "
                "AND s.sid IN (SELECT u.sid FROM t AS u WHERE u.trace_id NOT IN "
                "(SELECT trace_id FROM raw_scores WHERE trace_id IS NOT NULL))))"
            )
        elif self.since is not None:
            parts.append(f"s.session_start >= {_at(self.since)}")
        if self.until is not None:
            parts.append(f"s.session_start < {_at(self.until)}")
        if self.fraction is not None:
            parts.append(sampled_sql("s.sid", self.fraction, self.seed))
        return " AND ".join(parts)


def _at(when: datetime) -> str:
    """A selection's bound as a SQL literal."""
    return f"TIMESTAMPTZ '{when.isoformat()}'"


@dataclass
class Restriction:
    """A connection's views narrowed to some traces (whole sessions, for all but a loader's own scope):
    the raw span and log rows filtered once, into temporary tables that shadow `raw_spans` / `raw_logs`.
    `traces` names the temporary table of the traces kept (`trace_id`, and `sid` where sessions matter).
    Pass it on (`session_chunks(within=)`, `trajectories.load_batch(within=)`); `undo()` lets the views
    read the whole lake again."""

    con: duckdb.DuckDBPyConnection
    traces: str
    count: int = 0
    copied: bool = True  # its rows are in tv_raw_spans / tv_raw_logs (else the views filter the lake's)
    _narrowed_by_view: bool = False

    def narrow(self, traces: str, copy: bool = True) -> None:
        """The views read only the traces of table `traces` (a subset of this restriction's): their rows
        copied from the lake's, or (copy=False) read through a filter on this restriction's copy, or on
        the lake's relation: less memory, for a connection whose rows are in memory already."""
        if copy:
            _shadow_raw(self.con, traces)
        else:
            _shadow_raw(
                self.con, traces, copy=False, source=f"temp.main.{shadow_copy('{raw}')}" if self.copied else None
            )
            self._narrowed_by_view = True

    def reapply(self) -> None:
        if self._narrowed_by_view and self.copied:  # the copy is intact: read it whole again
            for raw in RAW:
                shadow(self.con, raw, f"SELECT * FROM {shadow_copy(raw)}")
            restrict_snapshots(self.con, self.traces)
        else:
            _shadow_raw(self.con, self.traces)
        self._narrowed_by_view = False

    def undo(self) -> None:
        unshadow(self.con, *RAW, tables=[shadow_copy(raw) for raw in RAW])
        restrict_snapshots(self.con, None)


def select_sessions(con: duckdb.DuckDBPyConnection, selection: Selection) -> Restriction:
    """Restrict this connection's views to the selected sessions (the restriction holds how many traces)."""
    count = selected_traces(con, selection)
    restriction = restrict_to(con, "tv_traces")
    restriction.count = count
    return restriction


def selects_all(con: duckdb.DuckDBPyConnection, selection: Selection) -> bool:
    """Whether `selection` keeps every session of what `raw_spans` reads on `con`, so that there is nothing to
    select: no sample, runs, variants or traces, and every span (so every session's first) starting within
    `[since, until)` (a nightly job's `until` of now, on an hour closed long ago). One pass over one column."""
    if selection.fraction is not None or selection.trace_ids is not None or selection.runs or selection.variants:
        return False
    bounds = [f"min(start_time) >= {_at(selection.since)}"] if selection.since else []
    bounds += [f"max(start_time) < {_at(selection.until)}"] if selection.until else []
    if not bounds:
        return True
    [(inside,)] = con.execute(f"SELECT {' AND '.join(bounds)} FROM raw_spans").fetchall()
    return bool(inside)  # None (no spans): select as asked


def selected_traces(con: duckdb.DuckDBPyConnection, selection: Selection) -> int:
    """The traces of the selected sessions, into the work table `tv_traces` (trace_id, sid), restricting
    nothing; how many."""
    only = ""
    if selection.trace_ids is not None:
        work_table(con, "tv_wanted", columns="trace_id VARCHAR")
        if selection.trace_ids:
            con.executemany("INSERT INTO tv_wanted VALUES (?)", [(t,) for t in selection.trace_ids])
        only = " AND s.sid IN (SELECT t.sid FROM t JOIN tv_wanted USING (trace_id))"
    if selection.runs:  # read from `spans` alone (`t.run_id` is the attempts view's): no view to bind for it
        only += f" AND s.sid IN (SELECT t.sid FROM t WHERE t.{selection.trace_condition()})"
    work_table(con, "tv_traces", query_sql("select_sessions", condition=selection.sql_condition(), only=only))
    [(count,)] = con.execute("SELECT count(*) FROM tv_traces").fetchall()
    return int(count)


def session_chunks(
    con: duckdb.DuckDBPyConnection, max_sessions: int, within: Restriction | None = None, copy: bool = True
) -> Iterator[int]:
    """Read the connection's sessions (all, or those of the restriction `within`) a chunk at a time: yields
    once per chunk of at most about `max_sessions` whole sessions, the views restricted to it, so that a
    loader holds one chunk in memory, never the lake. Yields once, restricting nothing more, when
    everything fits in one chunk; afterwards the views read what they read before. copy=False: a chunk's
    rows are read through a filter (`Restriction.narrow`), not copied, for a connection whose rows are in
    memory already (a group of `read_group(copy=True)`, or the copy of `within`).

    Chunks are buckets of the same md5 hash as the sample (salted differently), so the same session
    always lands in the same chunk of a given count.
    """
    source = within.traces if within is not None else "tv_chunked"
    if within is None:
        work_table(
            con,
            "tv_chunked",
            "SELECT trace_id, coalesce(max(session_id), trace_id) AS sid FROM raw_spans GROUP BY trace_id",
        )
    try:
        [(sessions,)] = con.execute(f"SELECT count(DISTINCT sid) FROM {source}").fetchall()
        count = -(-int(sessions) // max(1, max_sessions))
        bucket = bucket_sql("chunk:", "sid")
        chunks = [f"{bucket} % {count} = {chunk}" for chunk in range(count)]
        yield from narrowed_chunks(con, source, chunks, within=within, copy=copy)
    finally:
        drop_tables(con, "tv_chunked")


def narrowed_chunks(
    con: duckdb.DuckDBPyConnection,
    source: str,
    chunks: list[str],
    within: Restriction | None = None,
    copy: bool = True,
) -> Iterator[int]:
    """The views narrowed to the traces of table `source` (`trace_id`, whole sessions) that meet each condition
    of `chunks` in turn (SQL over `source`'s columns): yields each chunk's index while they read it alone. One
    chunk (or none) yields once and narrows nothing; afterwards the views read what they read before (all of
    `within`, or the lake). `within` and `copy`: as `session_chunks` takes them."""
    if len(chunks) <= 1:
        yield 0
        return
    chunked = within if within is not None else Restriction(con, source, copied=False)
    try:
        for index, condition in enumerate(chunks):
            work_table(con, "tv_chunk", f"SELECT trace_id FROM {source} WHERE {condition}")
            chunked.narrow("tv_chunk", copy=copy)
            yield index
    finally:
        if within is not None:
            within.reapply()
        else:
            chunked.undo()
        drop_tables(con, "tv_chunk")


def restrict_to(con: duckdb.DuckDBPyConnection, traces: str) -> Restriction:
    """Make every view of this connection read only the traces listed in table `traces` (column `trace_id`)."""
    _shadow_raw(con, traces)
    return Restriction(con, traces)


def _shadow_raw(con: duckdb.DuckDBPyConnection, traces: str, copy: bool = True, source: str | None = None) -> None:
    # the lake's own relation (`binding.own`): a bare `main.raw_spans` would find the shadow of an earlier
    # restriction first, and narrow that instead of the lake. source: another relation to filter (`{raw}`
    # in it stands for raw_spans / raw_logs), with copy=False only.
    for raw in RAW:
        relation = source.format(raw=raw) if source is not None else own(con, raw)
        rows = f"SELECT * FROM {relation} WHERE trace_id IN (SELECT trace_id FROM {traces})"
        shadow(con, raw, rows, table=shadow_copy(raw) if copy else None)
    restrict_snapshots(con, traces)  # a small lake's views computed at open: narrowed alike


def is_restricted(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether a `Restriction` narrows this connection's views (for checks and tests; code passes the
    restriction itself)."""
    return is_shadowed(con, "raw_spans")
