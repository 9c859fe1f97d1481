"""Compute the views a loader reads once, as temporary tables, for the duration of a load.

The views are a deep tree (`trajectories` reads `steps`, which reads `tool_calls`, `model_calls`, ...):
DuckDB plans and computes the whole tree again for every query that names one of them, which costs
seconds of planning even on an empty lake and repeats the work on a large one. `materialized(con,
names)` computes each needed view once, bottom-up in the order of the view files, and shadows it with a
temporary view over the result; on exit the temporary objects are dropped, so the connection's own
views are back as they were. The dependencies are read from the view files' SQL, so new views and
changed ones need no change here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import cache

import duckdb

from tracevals.queries.binding import has_table, shadow, unshadow, work_table
from tracevals.queries.catalog import view_bodies, view_sql

# What in a view's SQL names no relation it reads: comments, string literals, a word after AS (an alias of a
# column, a relation or a subquery, a type: `count(*) AS model_calls`) and one after a dot (a qualified
# column: `c.model_calls`). Read as relations, those made `environments` read `model_calls` and `injections`
# (and every report define their trees for nothing). A bare column named like a view is still read as one
# (`sessions` lists its `turns`): a view too many, never one too few.
_NOT_READ = re.compile(r"--[^\n]*|'[^']*'|\bAS\s+\w+|\.\w+", re.IGNORECASE)


@cache
def view_graph() -> tuple[tuple[str, frozenset[str]], ...]:
    """(view, the views its SQL names) for every view of the view files, in the order they are defined: the
    words of its SQL that name a view, but for those `_NOT_READ` finds. They hold every relation DuckDB's
    parser finds in it (`tests/test_queries_snapshot.py`; parsing each view costs more than a small command's
    start)."""
    pieces = [piece for _, sql in view_sql() for piece in view_bodies(sql)]
    names = {name for name, _ in pieces}
    graph = []
    for name, body in pieces:
        words = set(re.findall(r"\b\w+\b", _NOT_READ.sub(" ", body)))
        graph.append((name, frozenset((words & names) - {name})))
    return tuple(graph)


def closure(names: Iterable[str]) -> list[str]:
    """`names` and every view they read, directly or not, in definition order."""
    deps = dict(view_graph())
    wanted: set[str] = set()
    todo = [n for n in names if n in deps]
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo += deps[name]
    return [name for name, _ in view_graph() if name in wanted]


def readers(names: Iterable[str]) -> dict[str, int]:
    """For each view of `names`, how many views of `names` read it (other names are left out)."""
    deps = dict(view_graph())
    views = [n for n in names if n in deps]
    return {name: sum(name in deps[other] for other in views) for name in views}


# Views that only filter or project one other relation: computed into a table they copy every row and
# column once more, where their readers, left to read the view, get only the columns they use.
PASS_THROUGH = frozenset({"call_spans"})


def worth_computing(names: Iterable[str], compute_asked: bool = True) -> list[str]:
    """The views of `closure(names)` to compute once, in definition order: `names` themselves (unless
    not `compute_asked`: a caller that reads each of them once), and every other view that two or more
    views of the closure read (a view read by one other is computed inside that one, which keeps its
    wide columns out of a copy), pass-through views excepted."""
    asked = set(names)
    wanted = closure(asked)
    read_by = readers(wanted)
    return [n for n in wanted if (compute_asked if n in asked else n not in PASS_THROUGH and read_by[n] >= 2)]


# A caller's rule for views it knows to be empty once a view is computed (see `materialized`).
KnownEmpty = Callable[[duckdb.DuckDBPyConnection, str], Iterable[str]]


@contextmanager
def materialized(
    con: duckdb.DuckDBPyConnection,
    names: Iterable[str],
    compute_asked: bool = True,
    known_empty: KnownEmpty | None = None,
) -> Iterator[None]:
    """Within the block, `names` (and the views they read that are worth it) are computed tables on this
    connection; with compute_asked=False only the views beneath them, for a caller that reads each of
    `names` once.

    known_empty(con, name), called after each view is computed, names views that the rows at hand
    leave empty (e.g. no message content in a session: no message parts): until the block ends they
    read as an empty table of their columns, which costs nothing to bind, instead of their SQL."""
    created: list[str] = []
    emptied: list[str] = []
    computing = worth_computing(names, compute_asked)
    defined = _defined(con)
    if not set(computing) <= defined:  # a view the connection inlined (`connection.inlined`): define it now
        from tracevals.queries.connection import define_views

        define_views(con, [n for n in computing if n not in defined])
        defined = _defined(con)
    try:
        for name in computing:
            if name in emptied:
                continue
            shadow(con, name, f"SELECT * FROM {name}", table=f"tv_m_{name}")
            created.append(name)
            for empty in known_empty(con, name) if known_empty is not None else ():
                # a view inlined into its reader (`connection.inlined`) is not defined: nothing to shadow
                if empty not in created and empty not in emptied and empty in defined:
                    _read_as_empty(con, empty)
                    emptied.append(empty)
        yield
    finally:
        unshadow(con, *reversed(emptied), *reversed(created), tables=[f"tv_m_{n}" for n in reversed(created)])


def _defined(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The views the connection defines (its own, and temporary ones)."""
    return {name for (name,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}


def _read_as_empty(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Shadow view `name` with an empty table of its columns, made once per connection (binding the view
    to learn its columns is the cost this saves) and kept: `tv_empty_<name>`."""
    if not has_table(con, f"tv_empty_{name}"):  # the first time on this connection
        work_table(con, f"tv_empty_{name}", f"SELECT * FROM {name} LIMIT 0")
    shadow(con, name, f"SELECT * FROM tv_empty_{name}")
