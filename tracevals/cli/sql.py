"""`tracevals sql`: run a read-only SQL query over the lake's views."""

from __future__ import annotations

from pathlib import Path

import click
import duckdb

from tracevals.cli.output import format_option, print_rows
from tracevals.queries import LakeError, open_lake

_READ_ONLY = {"SELECT", "EXPLAIN"}


def check_read_only(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Reject anything but SELECT / EXPLAIN (no DROP, COPY … TO, INSTALL, ATTACH, SET …)."""
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise click.ClickException(f"the query does not parse: {str(exc).splitlines()[0]}") from exc
    if not statements:
        raise click.ClickException("the query is empty")
    for statement in statements:
        kind = statement.type.name
        if kind not in _READ_ONLY:
            raise click.ClickException(
                f"only SELECT queries may run over a lake (read-only); this one is a {kind} statement"
            )


@click.command()
@click.option(
    "--lake",
    type=click.Path(file_okay=False),
    envvar="TRACEVALS_LAKE",
    required=True,
    help="The lake directory (holds spans/ and scores/).",
)
@format_option()
@click.argument("query")
def sql(lake: str, fmt: str, query: str) -> None:
    """Run QUERY (SQL text, or a path to a .sql file) over the views of a lake.

    \b
    Views: spans, attempts, model_calls, tool_calls, steps, runs, trajectories, handoffs, scores.
    Examples:
      tracevals sql --lake demo-out/lake "select variant, count(*) from runs group by 1"
      tracevals sql --lake demo-out/lake --format json "select count(*) as n from tool_calls"
      tracevals sql --lake demo-out/lake queries/my_question.sql
    """
    if query.strip().lower().endswith(".sql") and Path(query.strip()).is_file():
        query = Path(query.strip()).read_text(encoding="utf-8")
    try:
        con = open_lake(lake)
    except LakeError as exc:
        raise click.ClickException(str(exc)) from exc
    check_read_only(con, query)
    try:
        result = con.execute(query)
        columns = [d[0] for d in result.description or []]
        rows = result.fetchall()
    except duckdb.Error as exc:
        raise click.ClickException(f"query failed: {str(exc).splitlines()[0]}") from exc
    print_rows(columns, rows, fmt)
