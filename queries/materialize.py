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
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import cache

import duckdb

from tracevals.queries.binding import has_table, shadow, unshadow, work_table
from tracevals.queries.catalog import view_bodies, view_sql

# What in a view's SQL is not query text: comments and string literals.
_NOT_QUERY = re.compile(r"--[^\n]*|'[^']*'")
# A relation a query scans: the word after FROM or JOIN (a table, a view or a common table expression).
# What DuckDB's parser finds in every view (`tests/test_queries_snapshot.py`); a column or an alias named
# like a view (`sessions` lists its `turns`, `count(*) AS model_calls`) is not one.
_RELATION = re.compile(r"\b(?:FROM|JOIN)\s+(\w+)", re.IGNORECASE)
# A common table expression's head, `name AS [[NOT] MATERIALIZED] (`, after WITH or a comma.
_CTE = re.compile(r"(?:\bWITH|,)\s*(\w+)\s+AS\s+(NOT\s+)?(MATERIALIZED\s+)?\(", re.IGNORECASE)


_PARENTHESIS = re.compile(r"[()]")


def _closing(text: str, start: int) -> int:
    """The index just past the parenthesis that closes the one before `start`."""
    depth = 1
    for match in _PARENTHESIS.finditer(text, start):
        depth += 1 if match.group() == "(" else -1
        if depth == 0:
            return match.end()
    return len(text)


def scans(query: str) -> Counter[str]:
    """How many times `query` computes each relation it reads: a common table expression marked
    `MATERIALIZED` once, any other one where it is named (DuckDB writes out a simple one named three times
    three times, as it does a view written into its reader as a `NOT MATERIALIZED` one,
    `connection.inlined`). An upper bound: DuckDB computes some unmarked ones named twice once."""
    text = _NOT_QUERY.sub(" ", query)
    spans: list[tuple[str, int, int]] = []  # (name, body start, body end) of each CTE, in order
    once: set[str] = set()  # the CTEs marked MATERIALIZED
    for match in _CTE.finditer(text):
        spans.append((match.group(1), match.end(), _closing(text, match.end())))
        if match.group(3) and not match.group(2):
            once.add(match.group(1))

    def own_text(start: int, end: int) -> str:  # text[start:end] without the CTEs defined inside it
        inner = sorted((s, e) for _, s, e in spans if start <= s and e <= end and (s, e) != (start, end))
        kept, at = [], start
        for s, e in inner:
            if s >= at:
                kept.append(text[at:s])
                at = e
        return " ".join([*kept, text[at:end]])

    bodies = {name: own_text(s, e) for name, s, e in spans}
    done: dict[str, Counter[str]] = {}
    reached: dict[str, None] = {}  # the MATERIALIZED CTEs the query reads, each computed once

    def expand(segment: str, seen: frozenset[str]) -> Counter[str]:
        found: Counter[str] = Counter()
        for word in _RELATION.findall(segment):
            if word in once:
                reached.setdefault(word)
            elif word in bodies and word not in seen:
                if word not in done:
                    done[word] = expand(bodies[word], seen | {word})
                found.update(done[word])
            else:
                found[word] += 1
        return found

    total = expand(own_text(0, len(text)), frozenset())
    counted: set[str] = set()
    while len(counted) < len(reached):  # a MATERIALIZED CTE may read another
        name = next(n for n in reached if n not in counted)
        counted.add(name)
        total.update(expand(bodies[name], frozenset({name})))
    return total


@cache
def view_scans() -> tuple[tuple[str, Counter[str]], ...]:
    """(view, how many times its query scans each other view: `scans`) for every view of the view files, in
    the order they are defined."""
    pieces = [piece for _, sql in view_sql() for piece in view_bodies(sql)]
    names = {name for name, _ in pieces}
    return tuple(
        (name, Counter({v: n for v, n in scans(body).items() if v in names and v != name})) for name, body in pieces
    )


@cache
def view_graph() -> tuple[tuple[str, frozenset[str]], ...]:
    """(view, the views it reads) for every view of the view files, in the order they are defined."""
    return tuple((name, frozenset(read)) for name, read in view_scans())


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


def computations(
    names: Iterable[str], asked: Iterable[str] = (), left: Iterable[str] = (), tables: Iterable[str] = ()
) -> dict[str, int]:
    """For each view of `closure(names)`, how many times DuckDB computes it for one query of each view of
    `asked` (and of each view nothing else in the closure reads), once the views worth it are tables
    (`computed_once`): a table counts 1; a view, the sum over the views that read it of how often each is
    computed times how many times it computes it (`view_scans`). Decided from the readers down: a view that
    would be computed two or more times, not `asked` and not `left` (views kept as views: pass-through
    views, the price table), becomes a table, computed once, and the views it reads count it once.
    `tables`: views the caller computes into tables itself (a load's asked views, a connection's snapshot)."""
    return _plan(names, asked, left, tables)[1]


def computed_once(
    names: Iterable[str], asked: Iterable[str] = (), left: Iterable[str] = (), tables: Iterable[str] = ()
) -> list[str]:
    """The views of `closure(names)` to compute once into tables, in definition order (see `computations`):
    the one rule for what a snapshot (`connection.open_lake`) and a load (`materialized`) compute."""
    return _plan(names, asked, left, tables)[0]


def _plan(
    names: Iterable[str], asked: Iterable[str], left: Iterable[str], tables: Iterable[str]
) -> tuple[list[str], dict[str, int]]:
    roots, kept, computed = set(asked), set(left), set(tables)
    wanted = closure([*names, *roots])
    deps = dict(view_scans())
    counts: dict[str, int] = dict.fromkeys(roots, 1)
    chosen: set[str] = set()
    for name in reversed(wanted):  # every view that reads `name` is defined after it
        count = counts.setdefault(name, 1)  # read by none of the closure: a query's own view
        if count >= 2 and name not in roots and name not in kept:
            chosen.add(name)
        if name in chosen or name in computed:
            counts[name] = count = 1
        for read, times in deps[name].items():
            counts[read] = counts.get(read, 0) + count * times
    return [n for n in wanted if n in chosen], counts


# Views that only filter or project one other relation: computed into a table they copy every row and
# column once more, where their readers, left to read the view, get only the columns they use.
PASS_THROUGH = frozenset({"call_spans"})


def worth_computing(names: Iterable[str], compute_asked: bool = True) -> list[str]:
    """The views of `closure(names)` to compute once, in definition order: `names` themselves (unless
    not `compute_asked`: a caller that reads each of them once), and every other view DuckDB would compute
    two or more times (`computed_once`: a view computed once is computed inside its reader, which keeps its
    wide columns out of a copy), pass-through views excepted."""
    asked = set(names)
    once = computed_once(asked, asked, PASS_THROUGH, asked if compute_asked else ())
    return [n for n in closure(asked) if (compute_asked if n in asked else n in once)]


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
