"""Open a lake as a DuckDB connection with every view of `queries/views/` defined.

>>> con = open_lake("demo-out/lake")
>>> con.sql("select task_id, tools from trajectories limit 3").pl()      # a Polars DataFrame
>>> con.sql("select * from steps").arrow()                               # a pyarrow Table
>>> con.execute("select count(*) from sessions").fetchall()              # a list of tuples

DuckDB 2 relations (`con.sql(...)`) have `.pl()`, `.arrow()`, `.fetchall()` but no `fetchone()`: use
`con.execute(...)` for that, and for parameters (`con.execute("... where session_id = ?", [sid])`). A result
read with `fetchone()` stays open until fetched to the end: on a connection you keep using, use `fetchall()`.

The views are plain SQL files, applied in file-name order; each reads only views defined before it.

A lake is a directory or an object-store prefix (`s3://bucket/lake`: its files listed through `lake.objects`
and read as pyarrow datasets, no DuckDB extension; docs/lake.md, "Object storage"). `since` / `until` keep only
the `date=…/hour=…` partitions in range, so DuckDB never opens the other files (`Lake.partition_globs`). The
pieces: `views` (the view files and their names), `sources` (the base relations over the files), `lookup` (one
session), `user_query` (a query a person typed: the views it reads, the connection `tracevals sql` opens for it).
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable
from typing import Literal

import duckdb

from tracevals import env
from tracevals.lake.columns import LOGS_DIR, SCORES_DIR, SPANS_DIR, STEP_RELIABILITY_DIR
from tracevals.lake.lake import Lake, LakeLike, When
from tracevals.lake.paths import LakeError, pattern
from tracevals.lake.unreadable import vanished_file
from tracevals.model.prices import default_prices
from tracevals.model.signals import held_off
from tracevals.queries.binding import RAW, bind, narrow_snapshot, snapshot_binding, snapshot_view, stand_ins
from tracevals.queries.catalog import MATERIALIZE, PRICES_VIEW, VIEW_NAMES, defined_views, view_bodies, view_sql
from tracevals.queries.interrupts import connect
from tracevals.queries.materialize import PASS_THROUGH
from tracevals.queries.sources import PricesT, register_empty, register_prices, register_source


def sandbox(con: duckdb.DuckDBPyConnection, lake: Lake, lock: bool = True) -> None:
    """Let the connection read the lake and nothing else, for good (lock=False: until its owner's own code
    changes a setting, e.g. `tracevals ui`'s page connection, which runs no user SQL and tunes lookups).

    After this, even a SELECT cannot read or write a file outside the lake (`read_csv('/etc/passwd')`,
    `read_parquet('other/**')`), install or load an extension, or change a setting back. DuckDB's
    allowed directories are for reading and writing alike: a statement that writes (COPY … TO, EXPORT,
    ATTACH, or any of them under EXPLAIN ANALYZE) could still write inside the lake, so `tracevals sql`
    runs only what `tracevals.cli.sql.check_read_only` lets through (a SELECT, or an EXPLAIN of one).
    """
    # DuckDB adds its temporary directory to the allowed ones, and by default that is `.tmp` of the current
    # directory: a query could read whatever is there. A private, empty one of this process instead.
    con.execute("SET temp_directory = ?", [_private_temp_directory()])
    con.execute("SET allowed_directories = ?", [_allowed(lake)])
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    if lock:
        con.execute("SET lock_configuration = true")


def _allowed(lake: Lake) -> list[str]:
    """The directories a sandboxed connection may read: the lake's root, and the same path as a pattern
    (`pattern`) where the root holds a glob's characters, since the lake's files are named to DuckDB through
    patterns of it, and DuckDB checks the pattern as written. Not when a folder of that escaped name exists:
    DuckDB reads a pattern that matches nothing as a literal path, and that folder would become readable."""
    root = lake.sandbox_root()
    escaped = pattern(root)
    return [root] if escaped == root or os.path.lexists(escaped) else [root, escaped]


def keep_footers(con: duckdb.DuckDBPyConnection, keep: bool) -> None:
    """Whether `con` keeps the footers of the Parquet files it reads, from one query to the next (DuckDB's
    object cache). `open_lake` keeps them: its connection reads the same files query after query. Nothing
    empties that cache, so a connection that moves on to other files (a worker's next group of hours) keeps
    none: its native heap grew by every footer it had read, ~1.5 MB an hour file of 450,000 rows."""
    con.execute(f"SET parquet_metadata_cache = {'true' if keep else 'false'}")


@functools.cache
def _private_temp_directory() -> str:
    """Where sandboxed connections spill: a directory of this process's own, removed when it exits."""
    with held_off():  # a stop as it is made waits until its removal is registered
        path = tempfile.mkdtemp(prefix="tracevals-spill-")
        atexit.register(shutil.rmtree, path, True)
    return path


# Views a snapshot leaves as views: the price table (registered from Python), and views that only filter or project
# one other relation (a copy would be every row and column once more).
LEFT_AS_VIEWS = frozenset({PRICES_VIEW}) | PASS_THROUGH
# The views that are the lake's rows themselves, de-duplicated (every column of every span and log record): on a
# lake larger than a snapshot, computed once they would be held as its raw rows would (a `sql` of `handoffs` on
# 10^6 spans: 0.50 GB live, 1.23 GB so), and they stay live, as those do.
ROW_VIEWS = frozenset({"spans", "logs"})
SNAPSHOT_MB = 16  # TRACEVALS_SNAPSHOT_MB: the largest lake, in MB of span and log files, snapshotted at open
# A small lake's snapshot copies its span and log rows (every column) once on object storage, where each read is
# requests, and past this many local files, which each read opens; with fewer, each view that scans them reads the
# files (its columns only). `sql` of `count(*)` on the small bench lake (1 file), whole processes, 10 pairs: tool_calls
# 0.402 s against 0.475 copied; on a lake of 28 files `turns` took longer read (0.82 s in process against 0.72).
COPY_RAW_FILES = 8


def _bind_sources(con: duckdb.DuckDBPyConnection, lake: Lake, read_spans: bool, since: When, until: When) -> None:
    """The raw relations every view reads: spans and logs in range (none: not `read_spans`), scores, step rows."""
    for raw, sub in (("raw_spans", SPANS_DIR), ("raw_logs", LOGS_DIR)):
        if read_spans:
            register_source(con, raw, lake, sub, True, since, until)
        else:
            register_empty(con, raw, sub, True)
    register_source(con, "raw_scores", lake, SCORES_DIR, False)
    register_source(con, "raw_step_reliability", lake, STEP_RELIABILITY_DIR, False)


def _define_views(
    con: duckdb.DuckDBPyConnection,
    wanted: set[str] | None,
    snapshot: set[str],
    snapshot_path: str | os.PathLike[str] | None,
    inline: set[str],
    copy_raw: bool = True,
) -> str:
    """Define the view files (only those defining `wanted`, None: all), computing each view of `snapshot`
    once into a table that takes its name; the schema the snapshots are in (`temp`, or the attached file).
    inline: views defined nowhere, but written into the one view that reads them (`inlined`). copy_raw: with a
    snapshot, copy the span and log rows in range once too (a small lake's: see `open_lake`)."""
    unknown = snapshot - set(VIEW_NAMES)
    if unknown:
        raise LakeError(f"cannot materialize {sorted(unknown)}: not views (choose from {', '.join(VIEW_NAMES)})")
    schema = "temp"
    if snapshot and snapshot_path is not None:
        con.execute("ATTACH ? AS tv_snapshot", [os.fspath(snapshot_path)])
        schema = "tv_snapshot"
    if snapshot and copy_raw:  # the span and log rows read from their files once, not once per view that scans them
        for raw in RAW:
            snapshot_binding(con, raw, schema)
    files = [(f, sql) for f, sql in view_sql() if wanted is None or defined_views(sql) & wanted]
    bodies: dict[str, str] = {}  # an inlined view's query, with the views it inlines in turn
    with stand_ins(con) as stand_in:
        if not snapshot:  # a snapshot's views are bound against its tables already
            stand_in(_read_relations(con, " ".join(sql for _, sql in files)))
        for file_name, sql in files:
            _define_file(con, file_name, sql, snapshot, schema, stand_in, inline, bodies)
    return schema


def inlined(names: list[str], asked: set[str], snapshot: set[str]) -> set[str]:
    """The views of `names` (a closure: every view they read is in it) that a connection for the queries of
    `asked` need not define: each is computed once (`computations`), named once by one other view of
    `names`, which holds its query as a common table expression (`NOT MATERIALIZED`: expanded where it is
    named, as a view is). Defining a view binds its whole tree; one defined only to be read by one other is
    bound twice for nothing (a `sql` of `sessions` on a small lake binds nine such views). One the rule
    would compute twice or more (`computed_once`) is never inlined, whether or not `snapshot` holds it."""
    from tracevals.queries.materialize import computations, computed_once

    kept = asked | snapshot | LEFT_AS_VIEWS | set(computed_once(names, asked, LEFT_AS_VIEWS, snapshot))
    counts = computations(names, asked, LEFT_AS_VIEWS, snapshot)
    return {n for n, count in counts.items() if n not in kept and count == 1}


def _held(name: str, bodies: dict[str, str]) -> list[str]:
    """The inlined views (`bodies`) that view `name` reads: those its query holds."""
    if not bodies:
        return []
    from tracevals.queries.materialize import view_graph

    reads = dict(view_graph()).get(name, ())
    return [n for n in bodies if n in reads]


def _with_inlined(name: str, query: str, bodies: dict[str, str]) -> str:
    """View `name`'s query holding the inlined views it reads (`bodies`) as common table expressions."""
    held = _held(name, bodies)
    if not held:
        return query
    ctes = ", ".join(f"{n} AS NOT MATERIALIZED ({_subquery(bodies[n])}\n)" for n in held)
    return f"WITH {ctes} SELECT * FROM ({_subquery(query)}\n)"


def _subquery(query: str) -> str:
    """A view file's query without its closing `;` and the comment lines after it (a `;` left anywhere
    else fails as the view file's one-line error)."""
    lines = query.rstrip().splitlines()
    while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("--")):
        lines.pop()
    return "\n".join(lines).rstrip().removesuffix(";")


def _read_relations(con: duckdb.DuckDBPyConnection, sql: str) -> list[str]:
    """The relations of the connection's own catalog (the raw relations, views defined before) that `sql` names."""
    words = set(re.findall(r"\w+", sql))
    own_relations = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE NOT temporary AND database_name = current_database() "
        "UNION SELECT view_name FROM duckdb_views() WHERE NOT temporary AND NOT internal "
        "AND database_name = current_database()"
    ).fetchall()
    return sorted(name for (name,) in own_relations if name in words)


def _define_file(
    con: duckdb.DuckDBPyConnection,
    file_name: str,
    sql: str,
    snapshot: set[str],
    schema: str,
    stand_in: Callable[[Iterable[str]], None],
    inline: set[str],
    bodies: dict[str, str],
) -> None:
    """One view file's views, each computed into its snapshot when it is one, else stood in for (see
    `binding.stand_ins`) while the views after it are defined; a view of `inline` kept in `bodies`, for
    its reader to hold."""
    try:
        views = defined_views(sql)
        if not views & (snapshot | inline) and not any(_held(n, bodies) for n in views):
            con.execute(sql)
            if not snapshot:
                stand_in(sorted(views))
            return
        for name, query in view_bodies(sql):
            query = _with_inlined(name, query, bodies)
            if name in inline:
                bodies[name] = query
                continue
            if name not in snapshot:
                bind(con, name, query)
                continue
            # The snapshot takes the view's name, so every view defined after it reads the snapshot
            # (and binds against a table, not the whole tree of views beneath). It reads the table
            # through a temporary view, `tv_read_<name>`, that a restriction to some sessions narrows
            # (`restrict_snapshots`) as it narrows the raw files.
            snapshot_view(con, name, schema, query)
    except duckdb.Error as exc:
        raise LakeError(vanished_file(exc) or f"view file {file_name}: {str(exc).splitlines()[0]}") from exc


def define_views(con: duckdb.DuckDBPyConnection, views: tuple[str, ...] | list[str]) -> None:
    """Define `views` and those they read on a connection `open_lake` opened with fewer (`views=`), live
    (no snapshot); the view files already defined are not bound again (binding a tree of views costs
    DuckDB tenths of a second, whether or not a query then reads them)."""
    have = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT temporary").fetchall()}
    wanted = set(closure_of(views)) - {PRICES_VIEW}
    if not wanted <= have:
        _define_views(con, wanted - have, set(), None, set())


def is_small(lake: Lake, since: When = None, until: When = None) -> bool:
    """Whether the span and log files in range total at most TRACEVALS_SNAPSHOT_MB (`_small_files`)."""
    return _small_files(lake, since, until) is not None


def _small_files(lake: Lake, since: When, until: When) -> int | None:
    """How many span and log files are in range if they total at most TRACEVALS_SNAPSHOT_MB (default 16; 0 turns
    snapshots off), else None. From the lake's listing (on object storage one LIST request per 1,000 files)."""
    try:
        limit = float(os.environ.get(env.SNAPSHOT_MB, "") or SNAPSHOT_MB) * 1e6
    except ValueError:
        raise LakeError(
            f"{env.SNAPSHOT_MB}={os.environ[env.SNAPSHOT_MB]!r} is not a number of MB; unset it or set e.g. 16"
        ) from None
    total = files = 0
    for sub in (SPANS_DIR, LOGS_DIR):
        for info in lake.partition_files(sub, since, until):
            total += info.size or 0
            files += 1
            if total > limit:
                return None
    return files


def shared_views(names: tuple[str, ...] | list[str], asked: tuple[str, ...] = ()) -> set[str]:
    """The views of `names` (a closure) that DuckDB would compute two or more times for the queries of
    `asked` (`computed_once`: read by two views, or named twice by one): what a snapshot computes once. The
    rest stay views over those tables, computed when a query names them (binding one over tables costs
    milliseconds; a view no query names costs nothing)."""
    from tracevals.queries.materialize import computed_once

    return set(computed_once(names, asked, LEFT_AS_VIEWS))


def computed_for(views: tuple[str, ...], small: bool) -> set[str]:
    """What a connection for the queries of `views` computes once (`shared_views` of their closure): on a lake
    larger than a snapshot (not `small`), all but the lake's rows themselves (`ROW_VIEWS`), which stay live as
    its files do. `open_lake` computes them at open; a connection for every view computes those of each query
    around it (`user_query.query_views_computed`)."""
    shared = shared_views(closure_of(views), views)
    return shared if small else shared - ROW_VIEWS


def closure_of(views: tuple[str, ...] | list[str] | set[str]) -> list[str]:
    """`views`, every view they read, and the price table; a `LakeError` names an unknown view."""
    from tracevals.queries.materialize import closure

    unknown_views = set(views) - set(VIEW_NAMES)
    if unknown_views:
        raise LakeError(f"unknown views {sorted(unknown_views)} (choose from {', '.join(VIEW_NAMES)})")
    return [*closure(views), PRICES_VIEW]


def restrict_snapshots(con: duckdb.DuckDBPyConnection, traces: str | None) -> None:
    """Make this connection's snapshots (see `open_lake`'s materialize) read only the traces of table
    `traces` (column `trace_id`), or all of their rows again (`traces` None). A restriction to some
    sessions (`queries.selection`) calls it beside shadowing the raw files: a snapshot was computed from
    the whole lake, and its rows of other sessions must not reach the views that read it. Every view is
    computed per trace or per session, and a restriction holds whole sessions, so a snapshot narrowed to
    them gives the rows the views would compute from the narrowed files. A snapshot without trace ids
    is left whole."""
    [(names, schema)] = con.execute(
        "SELECT getvariable('tracevals_snapshots'), getvariable('tracevals_snapshot_schema')"
    ).fetchall()
    for name in names or ():
        narrow_snapshot(con, name, schema, traces)


def open_lake(
    lake: LakeLike,
    con: duckdb.DuckDBPyConnection | None = None,
    *,
    since: When = None,
    until: When = None,
    prices: PricesT | None = None,
    memory_limit: str | None = None,
    threads: int | None = None,
    read_only: bool = False,
    materialize: bool | tuple[str, ...] | Literal["auto"] = "auto",
    snapshot_path: str | os.PathLike[str] | None = None,
    read_spans: bool = True,
    views: tuple[str, ...] | None = None,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection whose views read the lake `lake` (a `Lake`, or a directory or `s3://` URL that
    `Lake.open` takes: this is one of the public entry points where a lake may be named by text).

    since / until: keep only the spans and log records whose start hour is in range (inclusive, UTC;
    a date, a datetime, or text `YYYY-MM-DD` / `YYYY-MM-DDTHH`). prices: USD per million tokens
    (input, output) by model name, for the `cost_usd` columns (default: the lake's own `prices.json` over the
    default table, `tracevals.model.prices`). memory_limit (e.g. "4GB") and threads
    bound DuckDB. read_only: sandbox the connection to the lake (see `sandbox`), as `tracevals sql` does.
    materialize: snapshot views into temporary tables once (True: the base views MATERIALIZE; a tuple:
    those names), so that a job running many queries over a big lake deduplicates and un-nests its spans
    once; the connection then no longer sees files that arrive later. "auto" (the default): a small lake
    (`is_small`: at most TRACEVALS_SNAPSHOT_MB, default 16, of span and log files in range) is snapshotted:
    every view DuckDB would compute two or more times (`shared_views`: spans, span_facts, attempts,
    message_parts, model_calls, tool_calls, steps ... for all views) is computed once at open, bottom-up,
    and the others read those tables. Planning the whole tree of views beneath a `sessions` query costs
    seconds; over tables, milliseconds. A larger lake opened for some views (`views=`, as `tracevals sql`
    opens one for its query) computes their shared views once too, but for its rows themselves (its span and log
    files, `ROW_VIEWS`), read where they are, as a small local lake's few files are (`COPY_RAW_FILES`); opened for
    every view, it is read live through the views. A snapshot does not see files written after it: reopen the
    lake. snapshot_path: keep those tables in a DuckDB file there (compressed, paged out under memory_limit)
    instead of in memory; the caller removes it.
    read_spans=False: `raw_spans` and `raw_logs` start empty (the views bind against no files, which is
    quicker), for a caller that points them at files of its own (`export.export_view`'s workers).
    views: define only these views and those they read (defining all of them binds every view's whole
    tree of views: most of the time it takes to open a small lake).
    """
    lake = Lake.open(lake)
    lake.check()
    con = con or connect()
    keep_footers(con, True)
    if memory_limit:
        con.execute("SET memory_limit = ?", [memory_limit])
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    _bind_sources(con, lake, read_spans, since, until)
    register_prices(con, {**default_prices(), **lake.prices()} if prices is None else prices)
    if materialize == "auto":
        files = _small_files(lake, since, until) if read_spans else None
        small = files is not None
        # A connection for some views (a query's: `tracevals sql`) computes the views its queries would compute
        # twice or more once, whatever the lake's size: live, DuckDB plans and computes such a view at every place
        # a view names it (`span_facts` 19 times in the plan of a `sessions` query). A larger lake's raw rows stay
        # in their files; a small one's are copied when that pays (`COPY_RAW_FILES`). A connection for every view
        # (`tracevals ui`'s, reopened whenever a file arrives) computes nothing up front on a larger lake.
        if small:
            snapshot = shared_views(VIEW_NAMES if views is None else closure_of(views), views or ())
        else:
            snapshot = computed_for(views, small=False) if read_spans and views is not None else set()
        copy_raw = files is not None and (lake.local_folder is None or files > COPY_RAW_FILES)
    else:
        snapshot = set(MATERIALIZE if materialize is True else materialize or ())
        copy_raw = True
    wanted = None if views is None else closure_of(views)
    inline = inlined(wanted, set(views or ()), snapshot) if snapshot and wanted is not None else set()
    schema = _define_views(
        con, None if wanted is None else set(wanted), snapshot, snapshot_path, inline, copy_raw=copy_raw
    )
    # for session_lookup: where the span files are, and which views are snapshots on this connection
    con.execute("SET VARIABLE tracevals_lake = ?", [lake.location if read_spans else None])
    con.execute("SET VARIABLE tracevals_snapshots = ?", [[n for n in VIEW_NAMES if n in snapshot]])
    con.execute("SET VARIABLE tracevals_snapshot_schema = ?", [schema])
    if read_only:
        sandbox(con, lake)
    return con
