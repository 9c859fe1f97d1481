"""`tracevals sql`: run a read-only SQL query over the lake's views."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import redirect_stdout
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import duckdb

from tracevals import env
from tracevals.cli.shared.output import FORMATS, lake_option, print_row_chunks, table_rows
from tracevals.cli.shared.times import time_range_options
from tracevals.lake.unreadable import error_line
from tracevals.queries import LakeError
from tracevals.queries.catalog import VIEW_NAMES
from tracevals.queries.interrupts import connect
from tracevals.queries.user_query import open_for_query

if TYPE_CHECKING:
    import pyarrow as pa

    from tracevals.lake.lake import Lake

# What may run: a SELECT (WITH, FROM-first, VALUES, DESCRIBE, SUMMARIZE, SHOW parse as one), or an
# EXPLAIN [ANALYZE] of a SELECT. EXPLAIN ANALYZE runs its statement: of a COPY it would write.
_EXPLAIN = re.compile(r"^(?:\s+|--[^\n]*\n|/\*.*?\*/)*EXPLAIN\b(?:\s+ANALY[SZ]E\b)?(?:\s*\([^)]*\))?", re.I | re.S)


def check_read_only(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Reject anything but a SELECT or an EXPLAIN [ANALYZE] of one (no COPY … TO, EXPORT, ATTACH, INSTALL,
    CREATE, INSERT, SET, PRAGMA, CALL, …, whether alone, after a SELECT, or under EXPLAIN ANALYZE).

    The connection is also sandboxed to the lake (see `tracevals.queries.connection.sandbox`): it can read no
    file outside the lake and change no setting; what can write inside the lake is refused here, before
    anything runs.
    """
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise click.ClickException(f"the query does not parse: {str(exc).splitlines()[0]}") from exc
    if not statements:
        raise click.ClickException("the query is empty")
    for statement in statements:
        kind = statement.type.name
        if kind == "EXPLAIN":
            kind = _explained(con, statement.query)
        if kind != "SELECT":
            raise click.ClickException(
                f"only SELECT queries may run over a lake (read-only); this one is a {kind} statement"
            )
    if len(statements) > 1:  # DuckDB would run them all and give the last result alone: the others unseen
        raise click.ClickException(
            f"the query holds {len(statements)} statements and sql prints one result; run them one at a time"
        )


def _explained(con: duckdb.DuckDBPyConnection, text: str) -> str:
    """The kind of statement an EXPLAIN explains ("EXPLAIN of ..." when it is not one SELECT)."""
    head = _EXPLAIN.match(text)
    if head is None:
        return "EXPLAIN of an unrecognised statement"
    try:
        inner = con.extract_statements(text[head.end() :])
    except duckdb.Error:
        return "EXPLAIN of an unparsable statement"
    kinds = [s.type.name for s in inner]
    return "SELECT" if kinds == ["SELECT"] else f"EXPLAIN of {' + '.join(kinds) or 'nothing'}"


@click.command()
@lake_option("The lake: a directory (holds spans/, logs/, scores/) or an s3:// prefix.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice((*FORMATS, "parquet")),
    default="table",
    show_default=True,
    envvar=env.FORMAT,
    help="Output format; parquet needs --out.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the result to this file instead of printing it (outside the lake).",
)
@time_range_options("Only the hour partitions of spans starting")
@click.argument("query")
def sql(lake: Lake, fmt: str, out: Path | None, since: datetime | None, until: datetime | None, query: str) -> None:
    """Run QUERY (SQL text, or a path to a .sql file) over the views of a lake.

    \b
    Views: spans, genai_spans, model_calls, tool_calls, steps, trajectories, turns, sessions, runs,
    retries, handoffs, injections, scores (and more: see docs/queries.md). The lake is opened
    read-only: only SELECT runs, and the query can read no file outside the lake.
    --since / --until read only the date=/hour= partitions that overlap [since, until) (the other
    files are not opened); the grammar is every command's (2026-11-28, yesterday, 24h ...).
    Examples:
      tracevals sql --lake demo-out/lake "select variant, count(*) from runs group by 1"
      tracevals sql --lake demo-out/lake --format json "select count(*) as n from tool_calls"
      tracevals sql --lake demo-out/lake --since 2026-11-28 --until 2026-11-29 docs/queries/slowest.sql
      tracevals sql --lake demo-out/lake --format parquet --out steps.parquet "select * from steps"
    """
    text = query.strip()
    if text.lower().endswith(".sql"):
        if not Path(text).is_file():
            raise click.ClickException(f"{text}: no such .sql file")
        query = Path(text).read_text(encoding="utf-8")
    if fmt == "parquet" and out is None:
        raise click.ClickException("--format parquet writes a file: add --out FILE.parquet")
    if out is not None and lake.contains(out):
        raise click.ClickException(f"--out {out} is inside the lake; write the result somewhere else")
    # refused before the lake is opened: the open computes what the query's views share (seconds on a big lake)
    con = connect()
    check_read_only(con, query)
    try:
        # open_lake's bounds are inclusive hours: the last hour read is the one just before `until`
        last = None if until is None else until - timedelta(microseconds=1)
        # only the views the query names (and those they read) are defined: binding every view of the
        # lake costs seconds, and `select 1` needs none
        open_for_query(lake, query, con, since=since, until=last)
    except LakeError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        result = con.sql(query)
        if result is None:  # EXPLAIN of nothing, or a statement with no result
            return
        if fmt == "parquet":
            assert out is not None
            write_parquet(result.to_arrow_reader(CHUNK_ROWS), out)
            return
        columns = result.columns
        if all(str(t) in _PLAIN_TYPES or str(t).startswith("DECIMAL") for t in result.types):
            cursor = con.execute(query)  # the same query, read a chunk at a time without pyarrow
            chunks: Iterator[list[tuple[Any, ...]]] = iter(lambda: cursor.fetchmany(CHUNK_ROWS), [])
        else:
            chunks = (table_rows(batch)[1] for batch in result.to_arrow_reader(CHUNK_ROWS))
        print_result(columns, chunks, fmt, out)  # rows are fetched as they are printed: errors can come late
    except duckdb.CatalogException as exc:
        first = str(exc).splitlines()[0]
        hint = f"; the views are {', '.join(VIEW_NAMES)} (docs/queries.md)" if "does not exist" in first else ""
        raise click.ClickException(f"query failed: {first}{hint}") from exc
    except duckdb.Error as exc:
        raise click.ClickException(f"query failed: {error_line(exc)}") from exc


# Rows read and printed at a time: memory follows this many rows, not the result (2,000,000 rows of two
# columns took 625 MB as CSV and 1.1 GB as JSON when every row was fetched before the first was printed).
CHUNK_ROWS = 20_000


# Result types that DuckDB returns as the same Python values as Arrow's `to_pylist` (and DECIMAL(p, s)): a
# result of only these is printed without pyarrow, whose import alone is a third of a small query's time.
_PLAIN_TYPES = frozenset(
    {"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}
    | {"FLOAT", "DOUBLE", "VARCHAR", "DATE", '"NULL"'}
)


def render(table: pa.Table, fmt: str, out: Path | None = None) -> None:
    """Print (or write to `out`) a whole Arrow table as `sql` prints a result read through Arrow: table, csv,
    json or parquet; every column type prints (nanosecond timestamps at any depth, lists, structs, maps)."""
    if fmt == "parquet":
        assert out is not None
        write_parquet(table.to_reader(), out)
        return
    columns, rows = table_rows(table)
    print_result(columns, [rows], fmt, out)


def write_parquet(batches: pa.RecordBatchReader, out: Path) -> None:
    """A query's result into a Parquet file, a chunk at a time."""
    import pyarrow.parquet as pq

    rows = 0
    with pq.ParquetWriter(out, batches.schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
            rows += batch.num_rows
    click.echo(f"{rows} rows -> {out}", err=True)


def print_result(columns: list[str], chunks: Iterable[Sequence[Any]], fmt: str, out: Path | None) -> None:
    """Print rows (or write them to `out`) in `fmt`: table, csv or json, as they come."""
    if out is None:
        print_row_chunks(columns, chunks, fmt)
        return
    with open(out, "w", encoding="utf-8") as fh, redirect_stdout(fh):
        rows = print_row_chunks(columns, chunks, fmt)
    click.echo(f"{rows} rows -> {out}", err=True)
