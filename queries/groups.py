"""A big lake, a group of whole sessions at a time: `plan_groups` cuts the lake's files into blocks of
about `GROUP_ROWS` span and log rows (reading nothing but Parquet footers), `find_crossing` adds groups for
the sessions that cross blocks, and `read_group` points a connection's raw relations at one group. Memory
then follows the group, not the lake; the rows scored are those of one pass over the whole lake.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb

from tracevals.lake.lake import Lake
from tracevals.lake.paths import pattern
from tracevals.model.quoting import sql_string
from tracevals.queries.binding import (
    RAW,
    bind,
    bind_statement,
    drop_tables,
    has_table,
    release,
    work_table,
)
from tracevals.queries.catalog import query_sql
from tracevals.queries.connection import keep_footers
from tracevals.queries.derived import HourFiles
from tracevals.queries.interrupts import connect

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

    lake: Lake
    groups: list[Group]
    crossing: str | None = None  # Parquet file of (trace_id, grp): the traces of the crossing groups
    crossing_traces: int = 0
    blocks: int = 0  # groups of files (the first groups)
    max_rows: int = GROUP_ROWS
    derived: dict[tuple[str, int], HourFiles] = field(default_factory=dict)  # hours whose frames are written


@dataclass(frozen=True)
class _File:
    path: str
    sub: str
    rows: int


def _partitions(lake: Lake, since: datetime | None) -> list[tuple[tuple[str, int], list[_File]]] | None:
    """The lake's `date=/hour=` partitions from `since`'s hour on (as `open_lake(since=)` reads them), in
    time order, with their readable span and log files (named as `source_file` names them) and their row
    counts (from the Parquet footers); None when a file lies outside any partition (the lake is then read
    whole)."""
    from tracevals.lake.lake import partition_key
    from tracevals.lake.schema import LOGS_DIR, SPANS_DIR

    found: dict[tuple[str, int], list[_File]] = {}
    for sub in (SPANS_DIR, LOGS_DIR):
        listed = lake.list_parquet(sub)
        if any(partition_key(i.path) is None for i in listed):
            return None
        in_range = lake.partition_files(sub, since, None) if since is not None else listed
        for info, rows in lake.row_counts(in_range):  # unreadable files: skipped with a warning, as open_lake does
            date, hour = partition_key(info.path) or (None, 0)
            found.setdefault((str(date), hour), []).append(_File(lake.name_of(info.path), sub, rows))
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


def plan_groups(lake: Lake, since: datetime | None = None, max_rows: int = GROUP_ROWS) -> GroupPlan | None:
    """Cut the lake's files into blocks of about `max_rows` span and log rows, one group each; then
    `find_crossing` adds the groups of the sessions that cross blocks.

    The lake is already cut by time (`date=/hour=` partitions, by span start), and a session nearly
    always lies in a few consecutive hours: the partitions from `since` on (None: all; as `open_lake(since=)`
    reads them) are cut into blocks of consecutive files (an hour is cut between its files only when it
    alone holds more than `max_rows` rows). Nothing is read but the Parquet footers.

    None when the lake holds no files in range, or a file lies outside any partition (open it whole then:
    `open_lake`).
    """
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
    con = connect()
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


def _rows_sql(con: duckdb.DuckDBPyConnection, lake: Lake, groups: list[Group], logs: bool = True) -> str:
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
    con.execute(query_sql("session_blocks", rows=_rows_sql(con, plan.lake, blocks)))
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
    work_table(con, "tv_edges", columns="a VARCHAR, b VARCHAR")
    if edges:
        con.executemany("INSERT INTO tv_edges VALUES (?, ?)", edges)
    edges += con.execute(
        f"SELECT trace_id, key FROM tv_trace_blocks WHERE trace_id <> key AND trace_id IN ({values})"
    ).fetchall()
    work_table(con, "tv_joined", columns="node VARCHAR, root VARCHAR")
    if edges:
        con.executemany("INSERT INTO tv_joined VALUES (?, ?)", sorted(components(edges).items()))
    con.execute(query_sql("session_crossing", max_rows=int(plan.max_rows)))
    [(count,)] = con.execute("SELECT count(*) FROM tv_crossing").fetchall()
    plan.crossing_traces = int(count)
    if not count:
        return
    path = workdir / "crossing.parquet"
    first = len(blocks)
    select = f"SELECT trace_id, {first} + bucket AS grp FROM tv_crossing"
    con.execute(f"COPY ({select}) TO {sql_string(str(path))} (FORMAT parquet)")
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


def components(edges: list[tuple[str, str]]) -> dict[str, str]:
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
    `tv_crossing` once per connection. A group of files reads files no other group of files reads: the
    connection keeps none of their footers (`keep_footers`); a crossing group, which reads every block's files,
    keeps them."""
    from tracevals.lake.schema import LOGS_DIR, SPANS_DIR
    from tracevals.queries.sources import files_sql

    keep_footers(con, group.crossing)
    if plan.crossing is not None and not has_table(con, "tv_crossing"):
        work_table(con, "tv_crossing", f"SELECT trace_id, grp FROM read_parquet({sql_string(pattern(plan.crossing))})")
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
            work_table(con, _group_copy(raw), rows)
            rows = f"SELECT * FROM temp.main.{_group_copy(raw)}"
        bind(con, raw, rows)


def _group_copy(raw: str) -> str:
    return f"tv_group_{raw}"


def release_group(con: duckdb.DuckDBPyConnection) -> None:
    """Undo `read_group` (and every restriction of the group's scoring): the raw relations read no rows."""
    release(con)
    con.execute(";".join(bind_statement(con, raw, f"SELECT * FROM {raw}_empty") for raw in RAW))
    drop_tables(con, *(_group_copy(raw) for raw in RAW))
