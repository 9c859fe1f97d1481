"""A query a person typed (`tracevals sql`, `tracevals ui`'s SQL page): the views it reads, from DuckDB's parse tree
(`views_read_by`), the connection `tracevals sql` opens for it (`open_for_query`: those views, what they would
compute twice or more computed once at open, `connection.computed_for`), and the same computed around it on a
connection kept for every view (`query_views_computed`, the UI's).

>>> con = open_for_query("demo-out/lake", "select count(*) from sessions")
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from tracevals.lake.lake import LakeLike, When
from tracevals.model import json_text
from tracevals.queries.binding import shadow, unshadow
from tracevals.queries.catalog import VIEW_NAMES
from tracevals.queries.connection import computed_for, open_lake
from tracevals.queries.interrupts import connect

# What makes a query read the catalog rather than views (`information_schema.columns`, `duckdb_views()`,
# `show tables`, a bare `describe`): such a query needs every view defined.
_CATALOG = re.compile(r"\b(information_schema|pg_catalog|sqlite_master|duckdb_\w+|pragma_\w+)\b", re.I)
_LIST_TABLES = re.compile(r"\s*(show|describe)(\s+(all\s+)?(tables|databases))?\s*;?\s*", re.I)


def views_read_by(query: str, con: duckdb.DuckDBPyConnection | None = None) -> tuple[str, ...] | None:
    """The views a query reads, or None when it reads the catalog and needs all of them defined: the relations
    its statements name, from DuckDB's parse tree (`json_serialize_sql`: a column, an alias or a string of a
    view's name names none, and each view named costs what its open computes once); for a statement the
    parser does not serialise (an EXPLAIN), or SQL text run as a query (`query(...)`), every word of it that is
    a view's name. con: a connection to parse on (a new one costs 20 ms; no lake is read)."""
    if _CATALOG.search(query) or _LIST_TABLES.fullmatch(query):
        return None
    named = _relations_named(query, con)
    if named is None:
        named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", query))
    lowered = {n.lower() for n in named}
    return tuple(n for n in VIEW_NAMES if n in lowered)


# Table functions that run SQL text they are given: the relations that text names are not in the parse tree.
_RUNS_TEXT = frozenset({"query", "query_table"})


def _relations_named(query: str, con: duckdb.DuckDBPyConnection | None) -> set[str] | None:
    """The names of the relations (tables, views, common table expressions) the statements of `query` read,
    from DuckDB's parse tree; None when it does not serialise one (not only SELECTs, or no parse) or a
    statement runs SQL text of its own."""
    parser = con or duckdb.connect()
    try:
        [(text,)] = parser.execute("SELECT json_serialize_sql(?::VARCHAR)", [query]).fetchall()
    except duckdb.Error:
        return None
    finally:
        if con is None:
            parser.close()
    try:  # a query nested past the parser's depth is read by its words
        tree = json_text.loads(text)
    except ValueError:
        return None
    if not isinstance(tree, dict) or tree.get("error"):
        return None
    names: set[str] = set()
    todo: list[object] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            kind = node.get("type")
            if kind == "BASE_TABLE" and isinstance(node.get("table_name"), str):
                names.add(node["table_name"])
            elif kind == "TABLE_FUNCTION" and _function_name(node) in _RUNS_TEXT:
                return None
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return names


def _function_name(node: dict[str, object]) -> str:
    function = node.get("function")
    name = function.get("function_name") if isinstance(function, dict) else None
    return name.lower() if isinstance(name, str) else ""


def open_for_query(
    lake: LakeLike,
    query: str,
    con: duckdb.DuckDBPyConnection | None = None,
    since: When = None,
    until: When = None,
) -> duckdb.DuckDBPyConnection:
    """The connection `tracevals sql` runs a query a person typed on: the views it names and those they read
    (`views_read_by`), the views it would compute twice or more computed once at open (`open_lake`'s "auto",
    `computed_for`, on a lake of any size), read-only and sandboxed to the lake. con: a connection to open it on
    (the one the query was checked on). `tracevals ui`'s SQL page keeps one connection for every view instead
    and computes the same around each query (`query_views_computed`)."""
    con = con or connect()
    return open_lake(lake, con, since=since, until=until, read_only=True, views=views_read_by(query, con))


@contextmanager
def query_views_computed(con: duckdb.DuckDBPyConnection, query: str) -> Iterator[None]:
    """On a connection for every view read live (a lake larger than a snapshot: `tracevals ui`'s for the SQL
    page, kept until the lake changes), what `open_for_query` would compute once at open for `query` is computed
    once for the block (temporary tables the views read instead), and dropped after; on a snapshot, whose
    shared views were computed at open, nothing."""
    views = views_read_by(query, con)
    [(snapshots,)] = con.execute("SELECT getvariable('tracevals_snapshots')").fetchall()
    if not views or snapshots:
        yield
        return
    once = computed_for(views, small=False)
    made = [name for name in VIEW_NAMES if name in once]  # bottom-up: each reads those made before it
    try:
        for name in made:
            shadow(con, name, f"SELECT * FROM {name}", table=f"tv_q_{name}")
        yield
    finally:
        unshadow(con, *reversed(made), tables=[f"tv_q_{n}" for n in reversed(made)])
