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

import glob
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import duckdb

from tracevals.lake.sampling import bucket_sql, sampled_sql
from tracevals.queries.lake import restrict_snapshots
from tracevals.queries.views import query_sql


@dataclass(frozen=True)
class Selection:
    since: datetime | None = None
    until: datetime | None = None
    fraction: float | None = None  # None: every session
    seed: int = 0
    trace_ids: tuple[str, ...] | None = None  # only these traces' sessions (live scoring)
    runs: tuple[str, ...] = ()  # only the attempts of these harness runs (and their sessions' other traces)
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
        return "run_id IN (" + ", ".join("'" + r.replace("'", "''") + "'" for r in self.runs) + ")"

    def sql_condition(self) -> str:
        """The condition on `s` (columns `sid`, `session_start`) this selection keeps."""
        parts = ["TRUE"]
        if self.since is not None and self.late:
            late = (self.since - self.late).isoformat()
            parts.append(
                f"(s.session_start >= TIMESTAMPTZ '{self.since.isoformat()}' OR (s.session_start >= TIMESTAMPTZ "
                f"'{late}' AND s.sid IN (SELECT u.sid FROM t AS u WHERE u.trace_id NOT IN "
                "(SELECT trace_id FROM raw_scores WHERE trace_id IS NOT NULL))))"
            )
        elif self.since is not None:
            parts.append(f"s.session_start >= TIMESTAMPTZ '{self.since.isoformat()}'")
        if self.until is not None:
            parts.append(f"s.session_start < TIMESTAMPTZ '{self.until.isoformat()}'")
        if self.fraction is not None:
            parts.append(sampled_sql("s.sid", self.fraction, self.seed))
        return " AND ".join(parts)


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
            _shadow_raw(self.con, traces, copy=False, source="temp.main.tv_{raw}" if self.copied else None)
            self._narrowed_by_view = True

    def reapply(self) -> None:
        if self._narrowed_by_view and self.copied:  # the copy is intact: read it whole again
            for raw in ("raw_spans", "raw_logs"):
                self.con.execute(f"CREATE OR REPLACE TEMP VIEW {raw} AS SELECT * FROM tv_{raw}")
            restrict_snapshots(self.con, self.traces)
        else:
            _shadow_raw(self.con, self.traces)
        self._narrowed_by_view = False

    def undo(self) -> None:
        for raw in ("raw_spans", "raw_logs"):
            self.con.execute(f"DROP VIEW IF EXISTS temp.main.{raw}")
            self.con.execute(f"DROP TABLE IF EXISTS temp.main.tv_{raw}")
        restrict_snapshots(self.con, None)


def select_sessions(con: duckdb.DuckDBPyConnection, selection: Selection) -> Restriction:
    """Restrict this connection's views to the selected sessions (the restriction holds how many traces)."""
    only = ""
    if selection.trace_ids is not None:
        con.execute("CREATE OR REPLACE TEMP TABLE tv_wanted (trace_id VARCHAR)")
        if selection.trace_ids:
            con.executemany("INSERT INTO tv_wanted VALUES (?)", [(t,) for t in selection.trace_ids])
        only = " AND s.sid IN (SELECT t.sid FROM t JOIN tv_wanted USING (trace_id))"
    if selection.runs:
        only += (
            " AND s.sid IN (SELECT t.sid FROM t WHERE t.trace_id IN (SELECT trace_id FROM attempts WHERE "
            f"{selection.trace_condition()}))"
        )
    con.execute(query_sql("select_sessions").format(condition=selection.sql_condition(), only=only))
    restriction = restrict_to(con, "tv_traces")
    [(count,)] = con.execute("SELECT count(*) FROM tv_traces").fetchall()
    restriction.count = int(count)
    return restriction


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
        con.execute(
            "CREATE OR REPLACE TEMP TABLE tv_chunked AS "
            "SELECT trace_id, coalesce(max(session_id), trace_id) AS sid FROM raw_spans GROUP BY trace_id"
        )
    try:
        [(sessions,)] = con.execute(f"SELECT count(DISTINCT sid) FROM {source}").fetchall()
        count = -(-int(sessions) // max(1, max_sessions))
        if count <= 1:
            yield 0
            return
        bucket = bucket_sql("chunk:", "sid")
        chunked = within if within is not None else Restriction(con, source, copied=False)
        try:
            for chunk in range(count):
                con.execute(
                    "CREATE OR REPLACE TEMP TABLE tv_chunk AS "
                    f"SELECT trace_id FROM {source} WHERE {bucket} % {count} = {chunk}"
                )
                chunked.narrow("tv_chunk", copy=copy)
                yield chunk
        finally:
            if within is not None:
                within.reapply()
            else:
                chunked.undo()
            con.execute("DROP TABLE IF EXISTS temp.main.tv_chunk")
    finally:
        con.execute("DROP TABLE IF EXISTS temp.main.tv_chunked")


def restrict_to(con: duckdb.DuckDBPyConnection, traces: str) -> Restriction:
    """Make every view of this connection read only the traces listed in table `traces` (column `trace_id`)."""
    _shadow_raw(con, traces)
    return Restriction(con, traces)


def _shadow_raw(con: duckdb.DuckDBPyConnection, traces: str, copy: bool = True, source: str | None = None) -> None:
    # the lake's own relation, named with its database: a bare `main.raw_spans` would find the temporary
    # view of an earlier restriction first, and narrow that instead of the lake. source: another relation
    # to filter (`{raw}` in it stands for raw_spans / raw_logs), with copy=False only.
    [(catalog,)] = con.execute("SELECT current_database()").fetchall()
    for raw in ("raw_spans", "raw_logs"):
        rows = f"SELECT * FROM {(source or '{catalog}.main.{raw}').format(catalog=catalog, raw=raw)} "
        rows += f"WHERE trace_id IN (SELECT trace_id FROM {traces})"
        if copy:
            con.execute(f"CREATE OR REPLACE TEMP TABLE tv_{raw} AS {rows}")
            rows = f"SELECT * FROM tv_{raw}"
        con.execute(f"CREATE OR REPLACE TEMP VIEW {raw} AS {rows}")
    restrict_snapshots(con, traces)  # a small lake's views computed at open: narrowed alike


def is_restricted(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether a `Restriction` narrows this connection's views (for checks and tests; code passes the
    restriction itself)."""
    [(count,)] = con.execute(
        "SELECT count(*) FROM duckdb_views() WHERE view_name = 'raw_spans' AND temporary"
    ).fetchall()
    return bool(count)


# ---------------------------------------------------------------- a big lake, a group of whole sessions at a time

# Span and log rows one group reads at most (about: a group is cut between files, and a session is never
# split); memory follows this, not the lake. See `plan_groups`.
GROUP_ROWS = 150_000


@dataclass(frozen=True)
class Group:
    """Whole sessions read together: the span and log files they lie in, and which of their traces.

    A group of files (`crossing` False) keeps every trace of its files but those listed in the plan's
    crossing table; a crossing group keeps only the traces the table lists under its `index`, read from
    the files of every block of files they lie in."""

    index: int
    spans: tuple[str, ...]
    logs: tuple[str, ...]
    rows: int  # span and log rows of its files (a crossing group: of the traces it keeps)
    crossing: bool = False


@dataclass
class GroupPlan:
    """The groups a lake is read in (`plan_groups`), and where the crossing traces are listed."""

    lake: str
    groups: list[Group]
    crossing: str | None = None  # Parquet file of (trace_id, grp): the traces of the crossing groups
    crossing_traces: int = 0
    blocks: int = 0  # groups of files (the first groups)
    max_rows: int = GROUP_ROWS


@dataclass(frozen=True)
class _File:
    path: str
    sub: str
    rows: int


def _partitions(lake: str, since: datetime | None) -> list[tuple[tuple[str, int], list[_File]]] | None:
    """The lake's `date=/hour=` partitions from `since`'s hour on (as `open_lake(since=)` reads them), in
    time order, with their readable span and log files and their row counts (from the Parquet footers);
    None when a file lies outside any partition (the lake is then read whole)."""
    import pyarrow.parquet as pq

    from tracevals.lake.paths import partition_globs
    from tracevals.lake.schema import LOGS_DIR, SPANS_DIR
    from tracevals.queries.sources import _readable_globs

    found: dict[tuple[str, int], list[_File]] = {}
    for sub in (SPANS_DIR, LOGS_DIR):
        root = Path(lake) / sub
        if not root.is_dir():
            continue
        for path in root.rglob("*.parquet"):
            date, hour = path.parent.parent.name, path.parent.name
            if not (date.startswith("date=") and hour.startswith("hour=") and path.parent.parent.parent == root):
                return None
        globs = (
            partition_globs(lake, sub, since, None)
            if since is not None
            else [f"{d}/*.parquet" for d in sorted(root.glob("date=*/hour=*")) if any(d.glob("*.parquet"))]
        )
        readable = _readable_globs(lake, sub, globs)  # unreadable files: skipped with a warning, as open_lake does
        files = sorted(glob.glob(g) for g in readable) if readable is not None else []
        for path_str in sorted(p for group in files for p in group):
            path = Path(path_str)
            try:
                key = (path.parent.parent.name[5:], int(path.parent.name[5:]))
            except ValueError:
                return None
            found.setdefault(key, []).append(_File(path_str, sub, pq.read_metadata(path).num_rows))
    return sorted(found.items())


def _blocks(partitions: list[tuple[tuple[str, int], list[_File]]], max_rows: int) -> list[list[_File]]:
    """Consecutive partitions, cut once a block holds `max_rows` rows; an hour is cut between its files
    only when it alone holds more."""
    blocks: list[list[_File]] = [[]]
    size = 0
    for _, files in partitions:
        rows = sum(f.rows for f in files)
        if blocks[-1] and size + rows > max_rows:
            blocks.append([])
            size = 0
        for f in files:
            if rows > max_rows and blocks[-1] and size + f.rows > max_rows:
                blocks.append([])
                size = 0
            blocks[-1].append(f)
            size += f.rows
    return [b for b in blocks if b]


def plan_groups(lake: str, since: datetime | None = None, max_rows: int = GROUP_ROWS) -> GroupPlan | None:
    """Cut the lake's files into blocks of about `max_rows` span and log rows, one group each; then
    `find_crossing` adds the groups of the sessions that cross blocks.

    The lake is already cut by time (`date=/hour=` partitions, by span start), and a session nearly
    always lies in a few consecutive hours: the partitions from `since` on (None: all; as `open_lake(since=)`
    reads them) are cut into blocks of consecutive files (an hour is cut between its files only when it
    alone holds more than `max_rows` rows). Nothing is read but the Parquet footers.

    None when the lake is remote, holds no files in range, or a file lies outside any partition (open it
    whole then: `open_lake`).
    """
    from tracevals.lake.paths import is_remote

    if is_remote(lake):
        return None
    partitions = _partitions(lake, since)
    if partitions is None:
        return None
    blocks = _blocks(partitions, max_rows)
    if not blocks:
        return None
    groups = [
        Group(
            i,
            tuple(f.path for f in block if f.sub == "spans"),
            tuple(f.path for f in block if f.sub == "logs"),
            sum(f.rows for f in block),
        )
        for i, block in enumerate(blocks)
    ]
    return GroupPlan(lake, groups, blocks=len(blocks), max_rows=max_rows)


def find_crossing(
    plan: GroupPlan, workdir: str | os.PathLike[str], memory_limit: str | None = None, threads: int | None = None
) -> None:
    """Find the sessions whose rows lie in more than one block (a session that ran over the hour, a late
    turn, a log record filed elsewhere) by one pass over the blocks' trace ids, session ids and block
    numbers; take their traces out of their blocks' groups, and add crossing groups of about
    `max_rows` rows of them, in the order of their blocks, each read from the blocks its sessions lie
    in and filtered to their traces (listed in `workdir/crossing.parquet`). Nothing to do for one block.

    A session is every trace of one session id (`spans.session_id`; a trace without one is its own): the
    pass keys a trace by its largest session id, as `select_sessions` does after de-duplicating its spans.
    Two cases where de-duplication could give another answer are joined into one key first: a trace
    with several session ids, and a trace whose id is another trace's session id. Each group then holds
    whole sessions, and each session is selected, rebuilt and scored in its group as in the whole lake.
    """
    if plan.blocks <= 1:
        return
    con = duckdb.connect()
    try:
        if memory_limit:
            con.execute("SET memory_limit = ?", [memory_limit])
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        con.execute("SET temp_directory = ?", [os.fspath(workdir)])
        con.execute("SET enable_progress_bar = false")
        _find_crossing(con, plan, Path(workdir))
    finally:
        con.close()


def _rows_sql(con: duckdb.DuckDBPyConnection, lake: str, groups: list[Group], logs: bool = True) -> str:
    """Every span (and, with `logs`, log) row of these groups' files as (trace_id, session_id, block)."""
    from tracevals.lake.schema import LOGS_DIR, SPANS_DIR
    from tracevals.queries.sources import files_sql

    parts = []
    for g in groups:
        if g.spans:
            spans = files_sql(con, lake, SPANS_DIR, list(g.spans))
            parts.append(f"SELECT trace_id, session_id, {g.index} AS block FROM ({spans})")
        if g.logs and logs:
            records = files_sql(con, lake, LOGS_DIR, list(g.logs))
            parts.append(
                f"SELECT trace_id, CAST(NULL AS VARCHAR) AS session_id, {g.index} AS block "
                f"FROM ({records}) WHERE trace_id IS NOT NULL"
            )
    return " UNION ALL ".join(parts)


def _find_crossing(con: duckdb.DuckDBPyConnection, plan: GroupPlan, workdir: Path) -> None:
    """Append the crossing groups to `plan` and list their traces (see `find_crossing`)."""
    blocks = plan.groups[: plan.blocks]
    con.execute(query_sql("session_blocks").format(rows=_rows_sql(con, plan.lake, blocks)))
    # Keys to join: a trace with several session ids (de-duplication keeps the copies it keeps, so its
    # session could be any of them), and a trace whose own id is some trace's session id (a trace
    # without one is the session of its id: de-duplication could leave it none).
    edges: list[tuple[str, str]] = []
    [(several,)] = con.execute("SELECT count(*) FROM tv_trace_blocks WHERE low <> key").fetchall()
    if several:
        spans_only = [g for g in blocks if g.spans]
        edges += con.execute(
            "SELECT DISTINCT t.key, r.session_id FROM (" + _rows_sql(con, plan.lake, spans_only, logs=False) + ") "
            "AS r JOIN tv_trace_blocks AS t USING (trace_id) WHERE t.low <> t.key AND r.session_id IS NOT NULL"
        ).fetchall()
    values = "SELECT key FROM tv_trace_blocks" + (" UNION SELECT b FROM tv_edges" if edges else "")
    con.execute("CREATE OR REPLACE TEMP TABLE tv_edges (a VARCHAR, b VARCHAR)")
    if edges:
        con.executemany("INSERT INTO tv_edges VALUES (?, ?)", edges)
    edges += con.execute(
        f"SELECT trace_id, key FROM tv_trace_blocks WHERE trace_id <> key AND trace_id IN ({values})"
    ).fetchall()
    con.execute("CREATE OR REPLACE TEMP TABLE tv_joined (node VARCHAR, root VARCHAR)")
    if edges:
        con.executemany("INSERT INTO tv_joined VALUES (?, ?)", sorted(_components(edges).items()))
    con.execute(query_sql("session_crossing").format(max_rows=int(plan.max_rows)))
    [(count,)] = con.execute("SELECT count(*) FROM tv_crossing").fetchall()
    plan.crossing_traces = int(count)
    if not count:
        return
    path = workdir / "crossing.parquet"
    if "'" in str(path):
        raise ValueError(f"work directory {workdir} contains a quote")
    first = len(blocks)
    con.execute(f"COPY (SELECT trace_id, {first} + bucket AS grp FROM tv_crossing) TO '{path}' (FORMAT parquet)")
    plan.crossing = str(path)
    ranges = con.execute(
        "SELECT bucket, min(first_block), max(last_block), sum(rows) FROM tv_crossing_units "
        "GROUP BY bucket ORDER BY bucket"
    ).fetchall()
    for bucket, low, high, rows in ranges:
        spread = blocks[int(low) : int(high) + 1]
        plan.groups.append(
            Group(
                first + int(bucket),
                tuple(p for g in spread for p in g.spans),
                tuple(p for g in spread for p in g.logs),
                int(rows),
                crossing=True,
            )
        )


def _components(edges: list[tuple[str, str]]) -> dict[str, str]:
    """Union-find over the keys `edges` join: every key of an edge -> the smallest key of its component."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {x: find(x) for x in parent}


def read_group(con: duckdb.DuckDBPyConnection, plan: GroupPlan, group: Group, copy: bool = False) -> None:
    """Point this connection's `raw_spans` / `raw_logs` (an `open_lake(read_spans=False)` connection's)
    at the rows of `group`; `release_group` points them back at nothing. copy: read the rows into
    temporary tables once (the views then read them from memory; `select_sessions` makes such a copy of
    the sessions it keeps, so copy only when scoring the group whole). The crossing traces are read into
    `tv_crossing` once per connection."""
    from tracevals.lake.schema import LOGS_DIR, SPANS_DIR
    from tracevals.queries.sources import files_sql

    if plan.crossing is not None and not _has_table(con, "tv_crossing"):
        con.execute(f"CREATE TEMP TABLE tv_crossing AS SELECT trace_id, grp FROM '{plan.crossing}'")
    [(catalog,)] = con.execute("SELECT current_database()").fetchall()
    for raw, sub, files in (("raw_spans", SPANS_DIR, group.spans), ("raw_logs", LOGS_DIR, group.logs)):
        select = files_sql(con, plan.lake, sub, list(files)) if files else f"SELECT * FROM {raw}_empty"
        if group.crossing:
            where = f"WHERE r.trace_id IN (SELECT trace_id FROM tv_crossing WHERE grp = {group.index})"
        elif plan.crossing is not None:
            where = "WHERE NOT EXISTS (SELECT 1 FROM tv_crossing AS c WHERE c.trace_id = r.trace_id)"
        else:
            where = ""
        rows = f"SELECT r.* FROM ({select}) AS r {where}"
        if copy:
            con.execute(f"CREATE OR REPLACE TEMP TABLE tv_group_{raw} AS {rows}")
            rows = f"SELECT * FROM temp.main.tv_group_{raw}"
        con.execute(f"CREATE OR REPLACE VIEW {catalog}.main.{raw} AS {rows}")


def release_group(con: duckdb.DuckDBPyConnection) -> None:
    """Undo `read_group` (and every restriction of the group's scoring): the raw relations read no rows."""
    [(catalog,)] = con.execute("SELECT current_database()").fetchall()
    statements = []
    for raw in ("raw_spans", "raw_logs"):
        statements += [
            f"DROP VIEW IF EXISTS temp.main.{raw}",
            f"DROP TABLE IF EXISTS temp.main.tv_{raw}",
            f"CREATE OR REPLACE VIEW {catalog}.main.{raw} AS SELECT * FROM {raw}_empty",
            f"DROP TABLE IF EXISTS temp.main.tv_group_{raw}",
        ]
    for table in ("tv_traces", "tv_wanted", "tv_batch", "tv_scope", "tv_chunk", "tv_chunked"):
        statements.append(f"DROP TABLE IF EXISTS temp.main.{table}")
    con.execute(";".join(statements))


def _has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    [(count,)] = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [name]).fetchall()
    return bool(count)
