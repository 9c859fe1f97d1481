"""The view files of `queries/views/` (plain SQL, applied in file-name order) and their names.

`VIEW_NAMES` is derived from the files (every `CREATE OR REPLACE VIEW name`), plus `model_prices`, the one
relation registered from Python (the price table): a new view is a new `.sql` file and nothing else.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from tracevals.spans.views import render


@cache
def view_sql() -> tuple[tuple[str, str], ...]:
    """The view files, in the order they are applied: (file name, SQL text), their `/*@ ... @*/` markers
    replaced by the SQL the dialect declarations give (`tracevals.spans.views`)."""
    folder = resources.files("tracevals.queries").joinpath("views")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return tuple((f.name, render(_included(f.read_text(encoding="utf-8")), f.name)) for f in files)


_INCLUDE = re.compile(r"/\*@\s*include\((\w+)\)\s*@\*/")


def _included(sql: str) -> str:
    """A view file with each `/*@ include(NAME) @*/` replaced by `queries/sql/NAME.sql`: SQL two views share
    (the matching of tool-call requests to executions), written once."""
    return _INCLUDE.sub(lambda m: query_sql(m.group(1)).strip(), sql)


def query_sql(name: str, **values: object) -> str:
    """A loader's query from `queries/sql/NAME.sql` (the SQL that is not a view: the batch loader's, the
    session selection's); with `values`, its `{placeholders}` filled, its comment lines left out first: a
    value (a run id from a command line, a lake's) never lands in a comment, where a line break in it
    would end the comment and have the rest of the line read as SQL."""
    sql = _template(name)
    if not values:
        return sql
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--")).format(**values)


@cache
def _template(name: str) -> str:
    """The file's text, read once (the filled queries are not kept: their values vary without end), each
    `/*@ include(NAME) @*/` in it replaced and its declared markers rendered as in a view file (a loader's query
    shares SQL with a view)."""
    text = resources.files("tracevals.queries").joinpath("sql").joinpath(f"{name}.sql").read_text(encoding="utf-8")
    return render(_included(text), f"{name}.sql")


def views_in(sql: str) -> list[str]:
    """The views a file defines, in the order it defines them."""
    return [name for name, _ in view_bodies(sql)]


def defined_views(sql: str) -> set[str]:
    return set(views_in(sql))


_CREATE = re.compile(r"CREATE\s+OR\s+REPLACE\s+VIEW\s+(\w+)\s+AS", re.IGNORECASE)


def view_bodies(sql: str) -> list[tuple[str, str]]:
    """The views a file defines, in order: (name, its query as written, up to the next view's statement).
    A query keeps its closing `;` and the comments that introduce the next view."""
    starts = list(_CREATE.finditer(sql))
    return [
        (match.group(1), sql[match.end() : starts[i + 1].start() if i + 1 < len(starts) else len(sql)])
        for i, match in enumerate(starts)
    ]


PRICES_VIEW = "model_prices"  # registered from Python (`sources.register_prices`), read by the views
VIEW_NAMES: tuple[str, ...] = (*(name for _, sql in view_sql() for name in views_in(sql)), PRICES_VIEW)

# The views every call / step / trajectory view is built on; snapshotting them pays for deduplicating and
# un-nesting the spans once per connection instead of once per view that reads them.
MATERIALIZE = ("span_facts", "attempts", "message_parts")
