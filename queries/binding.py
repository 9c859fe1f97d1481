"""What the views read, decided in one place: every relation a view can find by name on a connection is
created (and undone) here, and nowhere else (`tests/test_binding_seam.py` holds every other module of
`queries/` and `tracevals/scoring/` to it).

A view names the relations it reads (`raw_spans`, `span_facts`, `tool_calls` …); DuckDB looks a name up
in the temporary schema first, then in the connection's own catalog. So there are three kinds of object:

- a **binding**: a base relation in the connection's own catalog, what the views read unless something
  shadows it (`bind`): the lake's files in range (`sources`), one group's files (`groups.read_group`),
  the rows of a live round (`live_source`), a snapshot of a small lake (`connection.open_lake`);
- a **shadow**: a temporary view of the same name as a base relation or a view, for as long as a job
  needs it (`shadow`, `unshadow`): the rows of some sessions (`selection.Restriction`), of one session
  (`lookup`), of a group of hours (`export`), a view computed once into a table (`materialize`); with
  `table`, its rows are copied once into that temporary table, which the shadow reads;
- a **work table**: a temporary table of ids or rows a query joins with (`tv_traces`, `tv_batch`,
  `tv_crossing` …): `work_table`, `drop_tables`.

Undoing is by name and never fails on what is not there, so that a `finally` can undo whatever part of a
job ran (`release`: every shadow and work table a scoring job leaves).

Every table made here is computed by `computed`: on a connection whose memory limit is tracevals' own
default (`default_memory_limit`, not one the user asked for), a statement that runs out of it runs again
without a limit, and the limit holds again after it; the job goes on from there instead of starting over.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import duckdb

RAW = ("raw_spans", "raw_logs")  # the base relations of the lake's span and log rows
# The work tables a scoring job (selection, chunks, the loader) leaves on a connection: `release` drops them.
JOB_TABLES = (
    *("tv_traces", "tv_wanted", "tv_batch", "tv_scope", "tv_chunk", "tv_chunked", "tv_trajectories"),
    *("tv_derived_hours", "tv_taken", "tv_rest"),  # `derived.take_derived`
)


def catalog(con: duckdb.DuckDBPyConnection) -> str:
    """The connection's own catalog (where `bind` puts base relations, beneath any shadow). Asked once per
    connection (every `bind` names it, and each question is a round trip): tracevals never changes a
    connection's current database (no `USE`)."""
    name = _CATALOGS.get(con)
    if name is None:
        [(found,)] = con.execute("SELECT current_database()").fetchall()
        name = _CATALOGS[con] = str(found)
    return name


_CATALOGS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, str] = weakref.WeakKeyDictionary()


def own(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """`name` as bound in the connection's own catalog, whatever shadows it: a bare `main.raw_spans` would
    find the temporary view of an earlier shadow first."""
    return f"{catalog(con)}.main.{name}"


def bind(con: duckdb.DuckDBPyConnection, name: str, select: str) -> None:
    """The connection's own relation `name` reads `select` (until bound again)."""
    con.execute(f"CREATE OR REPLACE VIEW {own(con, name)} AS {select}")


def bind_statement(con: duckdb.DuckDBPyConnection, name: str, select: str) -> str:
    """`bind` as a statement, for a caller that sends several in one call (each call is a round trip)."""
    return f"CREATE OR REPLACE VIEW {own(con, name)} AS {select}"


def default_memory_limit(con: duckdb.DuckDBPyConnection, limit: str) -> None:
    """Bound the memory of `con`'s work by `limit` (DuckDB's units: "160MB"), a default of tracevals' own
    choosing, beyond the temporary tables the connection holds: before each statement of `computed` the
    limit is `limit` plus what they take (`_held`). The rows a job copies to work on (a group's, a
    selection's) are held by design, and bounded by what it chose to copy; within a fixed limit a group of
    fat rows (model calls with their conversations) left no room for the work, and every view spilled them
    to disk and read them back (`tracevals score` of 10,000 ADK sessions: 8.0 CPU-s, 6.2 with room). A
    statement that runs out of the limit runs again without one (`computed`). A limit the user gives is set
    as it is: it holds, tables included."""
    _DEFAULTS[con] = _Default(limit_bytes(limit))
    _make_room(con)


@dataclass
class _Default:
    """A connection's default limit: the work's share (bytes), the limit last set on it (so that an unchanged
    one costs no round trip), and whether a job runs without it (`without_default_limit`)."""

    work: int
    applied: int | None = None
    suspended: bool = False


_DEFAULTS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, _Default] = weakref.WeakKeyDictionary()
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS |= {"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}


def limit_bytes(limit: str) -> int:
    """A memory limit in DuckDB's units ("160MB", "4GB", "512MiB") as bytes; ValueError for anything else."""
    text = limit.strip()
    number = text.rstrip("bBiIkKmMgGtT ")
    try:
        size = int(float(number) * _UNITS[text[len(number) :].strip().upper()])
    except (ValueError, KeyError):
        size = 0
    if size <= 0:
        raise ValueError(f"{limit!r} is not a memory size: a number and a unit, e.g. 4GB or 512MiB")
    return size


def _held(con: duckdb.DuckDBPyConnection) -> int:
    """Bytes the connection's tables take, in memory or spilled to its temporary directory."""
    [(held,)] = con.execute(
        "SELECT coalesce(sum(memory_usage_bytes + temporary_storage_bytes), 0)::BIGINT FROM duckdb_memory() "
        "WHERE tag = 'IN_MEMORY_TABLE'"
    ).fetchall()
    return int(held)


def _make_room(con: duckdb.DuckDBPyConnection) -> None:
    """The default limit (`default_memory_limit`) as it stands now: the work's share plus the tables held."""
    default = _DEFAULTS.get(con)
    if default is None or default.suspended:
        return
    limit = default.work + _held(con)
    if default.applied != limit:  # each statement is a round trip: none when the limit stands
        con.execute(f"SET memory_limit = '{limit}B'")
        default.applied = limit


@contextmanager
def without_default_limit(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """`con` without its default limit (DuckDB's own: most of the machine's memory) for a job that ran out of
    it; the default holds again after."""
    default = _DEFAULTS[con]
    default.suspended, default.applied = True, None
    con.execute("RESET memory_limit")
    try:
        yield
    finally:
        default.suspended = False
        _make_room(con)


def computed(con: duckdb.DuckDBPyConnection, statement: str) -> None:
    """Run `statement` (one that computes a table); beyond a `default_memory_limit`, once more without any.
    A view's query can need more memory than the table it makes (DuckDB holds each JSON function's parsed
    documents of a whole vector of rows, so a model call's long conversation weighs more than a lake of
    many short ones); running that one statement again costs less than the job over."""
    _make_room(con)
    try:
        con.execute(statement)
    except duckdb.OutOfMemoryException:
        default = _DEFAULTS.get(con)
        if default is None or default.suspended:
            raise
        with without_default_limit(con):
            con.execute(statement)


def shadow(con: duckdb.DuckDBPyConnection, name: str, select: str, table: str | None = None) -> None:
    """Every query on `con` that names `name` reads `select` instead, until `unshadow`. table: copy the rows
    of `select` once into that temporary table (`computed`), and read them from there."""
    if table is not None:
        computed(con, f"CREATE OR REPLACE TEMP TABLE {table} AS {select}")
        select = f"SELECT * FROM temp.main.{table}"
    con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {select}")


def unshadow(con: duckdb.DuckDBPyConnection, *names: str, tables: Iterable[str] = ()) -> None:
    """Drop the shadows `names` (and the temporary tables they read, `tables`): the names read what is
    bound beneath again. Missing ones are ignored."""
    statements = [f"DROP VIEW IF EXISTS temp.main.{n}" for n in names]
    statements += [f"DROP TABLE IF EXISTS temp.main.{t}" for t in tables]
    if statements:  # one call: each statement costs a round trip
        con.execute(";".join(statements))


def is_shadowed(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    [(count,)] = con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = ? AND temporary", [name]).fetchall()
    return bool(count)


def work_table(con: duckdb.DuckDBPyConnection, name: str, select: str | None = None, columns: str = "") -> None:
    """The temporary table `name`: the rows of `select`, or empty with `columns` (e.g. "trace_id VARCHAR")."""
    if select is None:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name} ({columns})")
    else:
        computed(con, f"CREATE OR REPLACE TEMP TABLE {name} AS {select}")


def drop_tables(con: duckdb.DuckDBPyConnection, *names: str) -> None:
    if names:
        con.execute(";".join(f"DROP TABLE IF EXISTS temp.main.{n}" for n in names))


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    [(count,)] = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [name]).fetchall()
    return bool(count)


def shadow_copy(name: str) -> str:
    """The temporary table a shadow of the base relation `name` copies its rows into (`selection`)."""
    return f"tv_{name}"


def snapshot_view(con: duckdb.DuckDBPyConnection, name: str, schema: str, query: str) -> None:
    """Compute view `name` from its query (the view file's, not defined as a view first: that would bind the
    query twice) once into the table `<schema>.<name>_snapshot` (`temp`, or an attached file) and bind the
    name to it, so every view defined after it reads the table. It reads the table through a temporary view,
    `tv_read_<name>`, that a restriction to some sessions narrows (`narrow_snapshot`)."""
    temp = "TEMP " if schema == "temp" else ""
    computed(con, f"CREATE OR REPLACE {temp}TABLE {schema}.{name}_snapshot AS {query}")
    shadow(con, f"tv_read_{name}", f"SELECT * FROM {schema}.{name}_snapshot")
    bind(con, name, f"SELECT * FROM tv_read_{name}")


def snapshot_binding(con: duckdb.DuckDBPyConnection, name: str, schema: str) -> None:
    """Copy the rows the base relation `name` reads (the lake's files in range) once into the table
    `<schema>.<name>_snapshot` and bind the name to it: every view then reads memory, not the files again
    (a small lake's views scan the span files six times; each scan pays every file's open and footer)."""
    temp = "TEMP " if schema == "temp" else ""
    computed(con, f"CREATE OR REPLACE {temp}TABLE {schema}.{name}_snapshot AS SELECT * FROM {own(con, name)}")
    bind(con, name, f"SELECT * FROM {schema}.{name}_snapshot")


def narrow_snapshot(con: duckdb.DuckDBPyConnection, name: str, schema: str, traces: str | None) -> None:
    """The snapshot of `name` read only for the traces of table `traces` (None: all of them again); a
    snapshot without trace ids is left whole."""
    table = f"{schema}.{name}_snapshot"
    keyed = traces is not None and "trace_id" in {d[0] for d in con.execute(f"FROM {table} LIMIT 0").description}
    where = f" WHERE trace_id IN (SELECT trace_id FROM {traces})" if keyed else ""
    shadow(con, f"tv_read_{name}", f"SELECT * FROM {table}{where}")


def release(con: duckdb.DuckDBPyConnection) -> None:
    """Drop every shadow of the raw relations and every work table a scoring job left (`JOB_TABLES`), so
    that the views read what is bound again."""
    unshadow(con, *RAW, tables=[shadow_copy(r) for r in RAW])
    drop_tables(con, *JOB_TABLES)


@contextmanager
def stand_ins(con: duckdb.DuckDBPyConnection) -> Iterator[Callable[[Iterable[str]], None]]:
    """While views are defined: `stand_in(names)` shadows each relation of `names` (as it reads now) with an
    empty temporary table of its columns, so that DuckDB binds the next view against tables instead of the
    whole tree of views and files beneath (binding a view binds everything it reads, again for every view
    defined on top: defining every view over a lake of 109 files took 7.3 s, 0.17 s this way). A view keeps
    its SQL and is bound again when a query names it, so nothing of a stand-in stays; every stand-in is
    dropped on exit. A name that already has a temporary relation (a shadow) keeps it."""
    taken = {
        name
        for (name,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE temporary "
            "UNION ALL SELECT view_name FROM duckdb_views() WHERE temporary"
        ).fetchall()
    }
    made: list[str] = []

    def stand_in(names: Iterable[str]) -> None:
        for name in names:
            if name not in taken:
                con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM {own(con, name)} LIMIT 0")
                taken.add(name)
                made.append(name)

    try:
        yield stand_in
    finally:
        drop_tables(con, *made)
