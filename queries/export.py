"""Write a whole per-trace view (every trajectory, every step ...) to Parquet, a group of hours at a time.

>>> export_view("lake", "trajectories", "out/trajectories")     # out/trajectories/part-00000.parquet ...

One query over a big lake (`COPY (SELECT * FROM trajectories) TO ...`) builds hash tables over every
trace at once: its memory grows with the lake, and past a few million spans the time grows faster than
the lake does (the tables outgrow the CPU caches). The lake is already cut by time (`date=/hour=`
partitions, by span start), and a trace's spans nearly always fall in one hour, so `export_view` runs
the same views over one group of consecutive hours (about `max_spans` spans) at a time and writes one
Parquet file per group: memory follows the group, not the lake, and the rows are those of the one query.

The traces that do cross a group boundary (spans or log records in two groups: a turn that ran over the
hour, a late span) are set aside by one pass over the lake's trace ids and hours, left out of the groups,
and exported last, read from every file. Views computed per session rather than per trace (`sessions`,
`turns`, `runs`) need all of a session's traces at once, and a session spans hours: they are refused.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from tracevals.collector.schema import LOGS_DIR, SPANS_DIR
from tracevals.queries.lake import VIEW_NAMES, LakeError, is_remote, open_lake, source_sql
from tracevals.queries.materialize import materialized

# The views whose rows each belong to one trace and are computed from that trace's spans (and log
# records) alone: exporting them a group of traces at a time gives the rows of the whole-lake query.
PER_TRACE_VIEWS = frozenset(
    {
        "spans",
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
        "trajectories",
        "handoffs",
        "retries",
        "injections",
    }
)

MAX_SPANS = 1_000_000


@dataclass
class Export:
    """What `export_view` wrote."""

    view: str
    files: list[Path] = field(default_factory=list)
    rows: int = 0
    groups: int = 0  # groups of hours
    crossing_traces: int = 0  # traces in two groups, exported last
    seconds: float = 0.0


@dataclass(frozen=True)
class _Hour:
    date: str
    hour: str
    spans: int  # rows in its span files

    @property
    def key(self) -> tuple[str, str]:
        return self.date, self.hour


def _hours(lake: Path) -> list[_Hour]:
    """Every `date=/hour=` partition of the spans and logs, in time order, with its span row count (from
    the Parquet footers: nothing is read but metadata)."""
    found: dict[tuple[str, str], int] = {}
    for sub in (SPANS_DIR, LOGS_DIR):
        for directory in sorted((lake / sub).glob("date=*/hour=*")):
            files = sorted(directory.glob("*.parquet"))
            if not files:
                continue
            key = (directory.parent.name[5:], directory.name[5:])
            rows = sum(pq.read_metadata(f).num_rows for f in files) if sub == SPANS_DIR else 0
            found[key] = found.get(key, 0) + rows
    return [_Hour(date, hour, rows) for (date, hour), rows in sorted(found.items())]


def _all_partitioned(lake: Path, hours: list[_Hour]) -> bool:
    """Whether every span and log file lies in one of `hours`' partitions (else the lake is read whole)."""
    wanted = {(sub, h.date, h.hour) for h in hours for sub in (SPANS_DIR, LOGS_DIR)}
    for sub in (SPANS_DIR, LOGS_DIR):
        for path in (lake / sub).rglob("*.parquet"):
            date, hour = path.parent.parent.name, path.parent.name
            if not (date.startswith("date=") and hour.startswith("hour=")) or (sub, date[5:], hour[5:]) not in wanted:
                return False
    return True


def _groups(hours: list[_Hour], max_spans: int) -> list[list[_Hour]]:
    """Consecutive hours, cut once a group holds `max_spans` spans (an hour is never split)."""
    groups: list[list[_Hour]] = [[]]
    size = 0
    for hour in hours:
        if groups[-1] and size + hour.spans > max_spans:
            groups.append([])
            size = 0
        groups[-1].append(hour)
        size += hour.spans
    return [g for g in groups if g]


def _globs(lake: Path, sub: str, group: list[_Hour]) -> list[str]:
    globs = []
    for hour in group:
        directory = lake / sub / f"date={hour.date}" / f"hour={hour.hour}"
        if any(directory.glob("*.parquet")):
            globs.append(f"{directory}/*.parquet")
    return globs


def _shadow(con: duckdb.DuckDBPyConnection, raw: str, select: str | None, condition: str) -> None:
    """Point this connection's `raw` (raw_spans / raw_logs) at `select` (None: no rows), filtered."""
    [(catalog,)] = con.execute("SELECT current_database()").fetchall()
    source = select or f"SELECT * FROM {catalog}.main.{raw} WHERE FALSE"
    where = f" WHERE {condition}" if condition else ""
    con.execute(f"CREATE OR REPLACE TEMP VIEW {raw} AS SELECT * FROM ({source}){where}")


def _unshadow(con: duckdb.DuckDBPyConnection) -> None:
    for raw in ("raw_spans", "raw_logs"):
        con.execute(f"DROP VIEW IF EXISTS temp.main.{raw}")


def export_view(
    lake: str | os.PathLike[str],
    view: str,
    out: str | os.PathLike[str],
    *,
    max_spans: int = MAX_SPANS,
    memory_limit: str | None = None,
    threads: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Export:
    """Write every row of the per-trace `view` to `out/part-NNNNN.parquet`, one file per group of about
    `max_spans` spans (see the module's docstring); `progress(done, total)` after each group.

    The files hold the rows `SELECT * FROM view` returns over the whole lake, in no particular order
    (sort on read, as for any query without ORDER BY). `out` must be empty or not exist yet.
    """
    if view not in VIEW_NAMES:
        raise LakeError(f"unknown view {view!r} (choose from {', '.join(VIEW_NAMES)})")
    if view not in PER_TRACE_VIEWS:
        per_trace = ", ".join(sorted(PER_TRACE_VIEWS))
        raise LakeError(
            f"{view} is computed per session, across hours; export it with one query "
            f'(tracevals sql "SELECT * FROM {view}" --format parquet) or choose from {per_trace}'
        )
    lake_str = os.fspath(lake)
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise LakeError(f"{target} exists and is not an empty directory; choose a new output directory")
    started = time.perf_counter()
    con = open_lake(lake_str, memory_limit=memory_limit, threads=threads)
    target.mkdir(parents=True, exist_ok=True)
    result = Export(view)
    hours = [] if is_remote(lake_str) else _hours(Path(lake_str))
    groups = _groups(hours, max_spans) if _all_partitioned(Path(lake_str), hours) else []
    groups = groups if len(groups) > 1 else []
    total = len(groups) + 1

    def write() -> None:
        path = target / f"part-{len(result.files):05d}.parquet"
        with materialized(con, [view], compute_asked=False):
            con.execute(f"COPY (SELECT * FROM {view}) TO '{path}' (FORMAT parquet)")
        result.rows += pq.read_metadata(path).num_rows
        result.files.append(path)
        if progress is not None:
            progress(len(result.files), total)

    try:
        if not groups:  # one group: the plain query
            write()
            result.groups = 1
            return result
        _mark_crossing(con, groups)
        [(result.crossing_traces,)] = con.execute("SELECT count(*) FROM tv_crossing").fetchall()
        apart = "NOT EXISTS (SELECT 1 FROM tv_crossing AS c WHERE c.trace_id = r.trace_id)"
        for group in groups:
            for raw, sub in (("raw_spans", SPANS_DIR), ("raw_logs", LOGS_DIR)):
                globs = _globs(Path(lake_str), sub, group)
                select = source_sql(lake_str, sub, hive=True, globs=globs) if globs else None
                _shadow(con, raw, f"SELECT * FROM ({select}) AS r WHERE {apart}" if select else None, "")
            write()
            result.groups += 1
        if result.crossing_traces:
            [(catalog,)] = con.execute("SELECT current_database()").fetchall()
            for raw in ("raw_spans", "raw_logs"):
                _shadow(
                    con, raw, f"SELECT * FROM {catalog}.main.{raw}", "trace_id IN (SELECT trace_id FROM tv_crossing)"
                )
            write()
        elif progress is not None:
            progress(total, total)
        return result
    finally:
        _unshadow(con)
        con.close()
        result.seconds = time.perf_counter() - started


def _mark_crossing(con: duckdb.DuckDBPyConnection, groups: list[list[_Hour]]) -> None:
    """tv_crossing: the traces with spans or log records in more than one group of hours."""
    con.execute("CREATE OR REPLACE TEMP TABLE tv_hour_group (date DATE, hour BIGINT, grp INTEGER)")
    con.executemany(
        "INSERT INTO tv_hour_group VALUES (?, ?, ?)",
        [(dt.date.fromisoformat(h.date), int(h.hour), i) for i, group in enumerate(groups) for h in group],
    )
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE tv_crossing AS
        SELECT r.trace_id
        FROM (
            SELECT trace_id, date, hour FROM raw_spans
            UNION ALL
            SELECT trace_id, date, hour FROM raw_logs WHERE trace_id IS NOT NULL
        ) AS r
        JOIN tv_hour_group AS g ON g.date = r.date AND g.hour = r.hour
        GROUP BY r.trace_id
        HAVING min(g.grp) <> max(g.grp)
        """
    )
