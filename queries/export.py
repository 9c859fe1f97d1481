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
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from tracevals.lake.columns import LOGS_DIR, SPANS_DIR
from tracevals.lake.lake import Lake, LakeLike, partition_key
from tracevals.lake.paths import LakeError, pattern
from tracevals.model.quoting import sql_string
from tracevals.queries.binding import RAW, drop_tables, own, shadow, unshadow, work_table
from tracevals.queries.catalog import VIEW_NAMES
from tracevals.queries.connection import keep_footers, open_lake
from tracevals.queries.interrupts import connect
from tracevals.queries.materialize import materialized
from tracevals.queries.sources import files_sql, register_source

# The views whose rows each belong to one trace and are computed from that trace's spans (and log
# records) alone: exporting them a group of traces at a time gives the rows of the whole-lake query.
# Every view but these: `logs` (records, not traces), `scores` (newest verdicts), `runs` (joins the
# scores), `turns` and `sessions` (a session's traces together), `model_prices` (a table).
PER_TRACE_VIEWS = frozenset(VIEW_NAMES) - {"logs", "scores", "runs", "turns", "sessions", "model_prices"}

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
    hour: int
    spans: int  # rows in its span files
    files: tuple[tuple[str, str], ...]  # (table, file as `source_file` names it)

    def named(self, sub: str) -> list[str]:
        return [name for table, name in self.files if table == sub]


def _hours(lake: Lake) -> list[_Hour] | None:
    """Every `date=/hour=` partition of the spans and logs, in time order, with its files and its span row
    count (from the Parquet footers: nothing is read but metadata); None when a file lies outside any
    partition (the lake is then read whole)."""
    found: dict[tuple[str, int], tuple[int, list[tuple[str, str]]]] = {}
    for sub in (SPANS_DIR, LOGS_DIR):
        listed = lake.list_parquet(sub)
        if any(partition_key(i.path) is None for i in listed):
            return None
        for info, rows in lake.row_counts(listed):
            date, hour = partition_key(info.path) or (None, 0)
            count, files = found.setdefault((str(date), hour), (0, []))
            files.append((sub, lake.name_of(info.path)))
            found[(str(date), hour)] = (count + (rows if sub == SPANS_DIR else 0), files)
    return [_Hour(d, h, rows, tuple(files)) for (d, h), (rows, files) in sorted(found.items())]


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


def _shadow(con: duckdb.DuckDBPyConnection, raw: str, select: str | None, condition: str) -> None:
    """Point this connection's `raw` (raw_spans / raw_logs) at `select` (None: no rows), filtered."""
    source = select or f"SELECT * FROM {own(con, raw)} WHERE FALSE"
    where = f" WHERE {condition}" if condition else ""
    shadow(con, raw, f"SELECT * FROM ({source}){where}")


@dataclass(frozen=True)
class _Task:
    """One part file: the traces of a group of hours (but the crossing ones), the crossing traces (group
    None), or the whole lake (neither group nor crossing)."""

    lake: Lake
    view: str
    path: Path
    group: list[_Hour] | None
    crossing: Path | None  # the crossing trace ids, as Parquet; None: there are none


def _source(con: duckdb.DuckDBPyConnection, lake: Lake, sub: str, names: list[str] | None = None) -> str:
    """The SELECT over `sub`'s files (those named, else all): a typed empty table where there are none."""
    return files_sql(con, lake, sub, names)


def _write_part(con: duckdb.DuckDBPyConnection, task: _Task) -> int:
    """Compute `task`'s part on `con` (open_lake over the lake, read_spans=False: the task points raw_spans
    and raw_logs at its files); its row count. A group of hours' task reads files no other task reads: the
    connection keeps none of their footers (`keep_footers`)."""
    keep_footers(con, task.group is None)
    if task.crossing is not None:
        work_table(con, "tv_crossing", f"SELECT trace_id FROM read_parquet({sql_string(pattern(task.crossing))})")
    try:
        if task.group is None and task.crossing is None:
            for raw, sub in (("raw_spans", SPANS_DIR), ("raw_logs", LOGS_DIR)):
                _shadow(con, raw, _source(con, task.lake, sub), "")
        elif task.group is None:
            for raw, sub in (("raw_spans", SPANS_DIR), ("raw_logs", LOGS_DIR)):
                _shadow(con, raw, _source(con, task.lake, sub), "trace_id IN (SELECT trace_id FROM tv_crossing)")
        else:
            apart = "NOT EXISTS (SELECT 1 FROM tv_crossing AS c WHERE c.trace_id = r.trace_id)"
            for raw, sub in (("raw_spans", SPANS_DIR), ("raw_logs", LOGS_DIR)):
                select = _source(con, task.lake, sub, [n for h in task.group for n in h.named(sub)])
                if select and task.crossing is not None:
                    select = f"SELECT * FROM ({select}) AS r WHERE {apart}"
                _shadow(con, raw, select, "")
        with materialized(con, [task.view], compute_asked=False):
            con.execute(f"COPY (SELECT * FROM {task.view}) TO {sql_string(str(task.path))} (FORMAT parquet)")
    finally:
        unshadow(con, *RAW)
        drop_tables(con, "tv_crossing")
    return pq.read_metadata(task.path).num_rows


# A worker process's own connection (open_lake, one DuckDB thread), opened once by _start_worker.
_WORKER: dict[str, duckdb.DuckDBPyConnection] = {}


def _start_worker(lake: Lake, view: str, memory_limit: str | None) -> None:
    _WORKER["con"] = open_lake(lake, memory_limit=memory_limit, threads=1, read_spans=False, views=(view,))


def _ready() -> None:
    """A task that only makes the pool start a worker."""


def _run_in_worker(task: _Task) -> tuple[Path, int]:
    return task.path, _write_part(_WORKER["con"], task)


def _check_export(lake: Lake, view: str, target: Path, workers: int) -> None:
    """A `LakeError` of one line unless `view` can be exported trace by trace from `lake` into `target`."""
    if view not in VIEW_NAMES:
        raise LakeError(f"unknown view {view!r} (choose from {', '.join(VIEW_NAMES)})")
    if view not in PER_TRACE_VIEWS:
        per_trace = ", ".join(sorted(PER_TRACE_VIEWS))
        raise LakeError(
            f"{view} is not computed trace by trace (a session's traces span hours); export it with one query "
            f'(tracevals sql "SELECT * FROM {view}" --format parquet) or choose from {per_trace}'
        )
    if lake.contains(target):
        raise LakeError(f"{target} is inside the lake {lake}; write the export elsewhere")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise LakeError(f"{target} exists and is not an empty directory; choose a new output directory")
    if workers < 1:
        raise LakeError(f"workers must be at least 1, not {workers}")


def export_view(
    lake: LakeLike,
    view: str,
    out: str | os.PathLike[str],
    *,
    max_spans: int = MAX_SPANS,
    workers: int = 1,
    memory_limit: str | None = None,
    threads: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Export:
    """Write every row of the per-trace `view` to `out/part-NNNNN.parquet`, one file per group of about
    `max_spans` spans (see the module's docstring); `progress(done, total)` after each file.

    workers: groups computed at once, each in a process of its own with one DuckDB thread (a group's
    joins and aggregations gain less from a second thread than from a second group); memory_limit is
    each worker's. With workers=1 the groups run one after another on this process, with `threads`.
    The files hold the rows `SELECT * FROM view` returns over the whole lake, in no particular order
    (sort on read, as for any query without ORDER BY). `out` must be empty or not exist yet.
    """
    lake, target = Lake.open(lake), Path(out)
    _check_export(lake, view, target, workers)
    started = time.perf_counter()
    target.mkdir(parents=True, exist_ok=True)
    result = Export(view)
    hours = _hours(lake)
    groups = _groups(hours, max_spans) if hours is not None else []
    if len(groups) <= 1:  # one group: the plain query over the whole lake
        tasks = [_Task(lake, view, target / "part-00000.parquet", None, None)]
        workers = 1
    else:
        tasks = [_Task(lake, view, target / f"part-{i:05d}.parquet", g, None) for i, g in enumerate(groups)]
    pool = None
    if workers > 1:
        count = min(workers, len(tasks) + 1)
        pool = ProcessPoolExecutor(
            count, multiprocessing.get_context("spawn"), _start_worker, (lake, view, memory_limit)
        )
        for _ in range(count):  # the workers start (import, open the lake) while this process finds the crossing traces
            pool.submit(_ready)
    try:
        if len(groups) > 1:
            crossing = target / ".crossing.parquet"
            result.crossing_traces = _find_crossing(lake, groups, crossing)
            tasks = [replace(t, crossing=crossing if result.crossing_traces else None) for t in tasks]
            if result.crossing_traces:
                tasks.append(_Task(lake, view, target / f"part-{len(groups):05d}.parquet", None, crossing))
        result.groups = max(1, len(groups))
        done: list[tuple[Path, int]] = []
        if pool is not None:
            try:
                for future in as_completed([pool.submit(_run_in_worker, task) for task in tasks]):
                    done.append(future.result())
                    if progress is not None:
                        progress(len(done), len(tasks))
            except BrokenProcessPool:
                raise LakeError(
                    "a worker process of export_view died before it could start; a script that calls it with "
                    'workers > 1 must do so under `if __name__ == "__main__":` (worker processes import the '
                    "script again), and each worker needs memory for one group (--memory-limit, --max-spans)"
                ) from None
        else:
            con = open_lake(lake, memory_limit=memory_limit, threads=threads, read_spans=False, views=(view,))
            try:
                for task in tasks:
                    done.append((task.path, _write_part(con, task)))
                    if progress is not None:
                        progress(len(done), len(tasks))
            finally:
                con.close()
        result.files = sorted(path for path, _ in done)
        result.rows = sum(rows for _, rows in done)
        return result
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        (target / ".crossing.parquet").unlink(missing_ok=True)
        result.seconds = time.perf_counter() - started


def _find_crossing(lake: Lake, groups: list[list[_Hour]], path: Path) -> int:
    """Write the ids of the traces with spans or log records in more than one group of hours to `path`
    (Parquet); how many there are."""
    con = connect()
    try:
        register_source(con, "raw_spans", lake, SPANS_DIR, True)
        register_source(con, "raw_logs", lake, LOGS_DIR, True)
        _mark_crossing(con, groups)
        con.execute(f"COPY tv_crossing TO {sql_string(str(path))} (FORMAT parquet)")
        [(count,)] = con.execute("SELECT count(*) FROM tv_crossing").fetchall()
        return int(count)
    finally:
        con.close()


def _mark_crossing(con: duckdb.DuckDBPyConnection, groups: list[list[_Hour]]) -> None:
    """tv_crossing: the traces with spans or log records in more than one group of hours."""
    work_table(con, "tv_hour_group", columns="date DATE, hour BIGINT, grp INTEGER")
    con.executemany(
        "INSERT INTO tv_hour_group VALUES (?, ?, ?)",
        [(dt.date.fromisoformat(h.date), int(h.hour), i) for i, group in enumerate(groups) for h in group],
    )
    work_table(
        con,
        "tv_crossing",
        """
        SELECT r.trace_id
        FROM (
            SELECT trace_id, date, hour FROM raw_spans
            UNION ALL
            SELECT trace_id, date, hour FROM raw_logs WHERE trace_id IS NOT NULL
        ) AS r
        JOIN tv_hour_group AS g ON g.date = r.date AND g.hour = r.hour
        GROUP BY r.trace_id
        HAVING min(g.grp) <> max(g.grp)
        """,
    )
