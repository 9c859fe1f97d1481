"""Printing rows as a table, CSV or JSON: the `--format` option every data command has, `--lake`, file options."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import math
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tracevals import env
from tracevals.lake.unreadable import error_line
from tracevals.model.display import ACTS_ON_A_TERMINAL
from tracevals.model.json_text import json_text
from tracevals.model.progress import Told, quiet

if TYPE_CHECKING:
    import pyarrow as pa
    from rich.progress import Progress

FORMATS = ("table", "csv", "json")


def shown(text: str) -> str:
    """`text` as a terminal may show it: each character it would act on instead (`ACTS_ON_A_TERMINAL`, the
    definition the UI's pages read too) written as its JSON escape (`\\u001b`, `\\u202e`). Every value read from
    a lake is untrusted: shown raw, `\\x1b]0;...` sets the window's title, `\\x1b[2J` clears the screen, OSC 52
    writes the clipboard, U+202E reverses what follows. The escape is valid inside a JSON string, so JSON on a
    terminal stays JSON."""
    return ACTS_ON_A_TERMINAL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def echo(text: str, nl: bool = True, err: bool = False) -> None:
    """Data or a report on stdout (stderr: `err`): exact into a pipe or a file, `shown` on a terminal.
    Not `click.echo` alone: into a pipe it strips whatever looks like a colour code, a value's text too
    (`--format csv > out.csv` lost the `\\x1b[1m` of a session id)."""
    stream = sys.stderr if err else sys.stdout
    click.echo(shown(text) if stream.isatty() else text, nl=nl, err=err, color=True)


def echo_prose(text: str) -> None:
    """A text for reading on stdout (a gate's verdict, a comparison's statement, a case under review): `shown`
    whether piped or not, as a table is (`print_rows`). It quotes span values (a tool's name, a task's id, what
    an agent said), and a CI log or a pager shows what it is sent; only data (`--format csv|json`) goes
    exact into a pipe (`echo`)."""
    click.echo(shown(text), color=True)


def format_option(default: str = "table") -> Any:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default=default,
        show_default=True,
        envvar=env.FORMAT,
        help="Output format.",
    )


def file_option(
    flag: str, name: str, help: str, *, required: bool = False, envvar: str | None = None, exists: bool = True
) -> Any:
    """An option naming a file, not a folder: one that must exist, given to the command as a `Path`, or (not
    `exists`) any such path as its text: a file to write, or one the command reads and reports on itself."""
    kind = click.Path(exists=True, dir_okay=False, path_type=Path) if exists else click.Path(dir_okay=False)
    return click.option(flag, name, type=kind, required=required, envvar=envvar, help=help)


def progress_bar(console: Console, transient: bool = False) -> Progress:
    """The progress bar of long work: each task's description, a bar, done / total, time elapsed."""
    # imported here: the commands that print data only (sql, gate) do not pay for it
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}", style="bold", markup=False),  # a variant's name is the user's text
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=transient,
    )


@contextmanager
def phase_bar(console: Console, command: str) -> Iterator[Told]:
    """A `Told` for `command`'s long work: on a terminal, a transient bar on `console` of the phase under way
    (how far, when the phase counts; the time it has taken), gone when the work is; elsewhere `quiet`."""
    if not console.is_terminal:
        yield quiet
        return
    with progress_bar(console, transient=True) as progress:
        shown: list[Any] = []  # the phase on the bar: (its words, its task)

        def told(phase: str, done: int, total: int | None) -> None:
            if shown and shown[0] == phase:
                progress.update(shown[1], completed=done, total=total)
                return
            if shown:  # a phase of its own, with its own total (a bar's total cannot be unset) and its own time
                progress.update(shown[1], visible=False)
            shown[:] = [phase, progress.add_task(f"{command}: {phase}", total=total, completed=done)]

        yield told


class LakeType(click.ParamType):
    """`--lake` as a `Lake` (`Lake.open`): the one place the CLI turns the text into the value every
    command passes on. A path that is a file is a usage error; a URL that cannot be opened, an error of one
    line (exit 1)."""

    name = "lake"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from tracevals.lake.lake import Lake
        from tracevals.lake.paths import LakeError

        if not isinstance(value, str) and hasattr(value, "location"):
            return value  # a Lake already (a default, or a test's)
        try:
            lake = Lake.open(value)
        except LakeError as exc:  # not a usage error: the lake cannot be reached (exit 1, as a command's own)
            raise click.ClickException(str(exc)) from None
        if lake.local_folder is not None and lake.local_folder.is_file():
            self.fail(f"{value!r} is a file; pass the folder that holds spans/", param, ctx)
        return lake


@contextmanager
def lake_errors(lake: object, errors: tuple[type[Exception], ...], first_line: bool = False) -> Iterator[None]:
    """A command's reading of `lake`: its user errors (`errors`; `first_line`: only the message's first
    line) and a lake whose files or views do not read, each one `click.ClickException` line."""
    import duckdb

    try:
        yield
    except errors as exc:
        raise click.ClickException(str(exc).splitlines()[0] if first_line else str(exc)) from None
    except duckdb.Error as exc:
        raise click.ClickException(f"cannot read the lake {lake}: {error_line(exc)}") from exc


def messages() -> Console:
    """The console of a command's messages (stderr): no markup and no highlighting, so that what a message
    holds of the user's or of the lake's (a lake under "runs [old]/", a run id, a rule's id) prints as it is,
    never read as rich's markup (which dropped "[old]" from the path)."""
    return Console(stderr=True, markup=False, highlight=False)


def say(console: Console, text: str) -> None:
    """One line (or paragraph) to the user, as it is (`shown`, never markup): wrapped by the terminal, not
    by rich."""
    console.print(shown(text), highlight=False, soft_wrap=True, markup=False)


class MemorySize(click.ParamType):
    """A memory size in DuckDB's units ("4GB", "512MiB"), checked before any work (DuckDB's own error came
    from a worker, after the job had started) and passed on as bytes ("4000000000B"): what was checked is
    what DuckDB reads."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from tracevals.queries.binding import limit_bytes  # imported only when the option is given

        try:
            return f"{limit_bytes(str(value))}B"
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def memory_limit_option(help: str) -> Any:
    """`--memory-limit` (env TRACEVALS_MEMORY_LIMIT): DuckDB's memory_limit of each of the command's workers."""
    return click.option("--memory-limit", type=MemorySize(), envvar=env.MEMORY_LIMIT, help=help)


def lake_option(help: str, default: str | None = None, reads: bool = True) -> Any:
    """`--lake` (env TRACEVALS_LAKE): required unless a default is given. `reads`: the command reads the
    lake's files, so it also takes `--strict` (env TRACEVALS_STRICT): an unreadable file fails the command
    instead of being skipped with a warning (`queries.sources`)."""
    # No `default=None` for a required option: click (8.3+) takes an explicit None as a value given, so a
    # missing --lake reached the command as None (a TypeError traceback) instead of "Missing option".
    given: dict[str, Any] = {} if default is None else {"default": default, "show_default": True}
    lake = click.option("--lake", type=LakeType(), envvar=env.LAKE, required=default is None, help=help, **given)
    if not reads:
        return lake

    def strict(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        from tracevals.lake import paths  # light: no DuckDB

        paths.strict_files = value  # read where the lake is opened, however deep; each invocation decides

    strict_option = click.option(
        "--strict",
        is_flag=True,
        envvar=env.STRICT,
        expose_value=False,
        callback=strict,
        help="Fail on an unreadable lake file (default: skip it with a warning naming it).",
    )

    def decorate(func: Any) -> Any:
        return lake(strict_option(func))

    return decorate


def _without_nanoseconds(t: pa.DataType) -> pa.DataType:
    """`t` with every timestamp (at any depth) as text: Python's datetime stops at microseconds."""
    import pyarrow as pa

    if pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        return pa.string()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_without_nanoseconds(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _without_nanoseconds(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_without_nanoseconds(t.key_type), _without_nanoseconds(t.item_type))
    return t


def table_rows(table: pa.Table | pa.RecordBatch) -> tuple[list[str], list[tuple[Any, ...]]]:
    """A query result's (or one batch of it) column names and rows as Python values, every column type
    printable: timestamps (nanoseconds, at any depth) as their full text, `2026-11-02 09:00:00.123456789+0000`."""
    columns = table.column_names
    arrays = []
    for name in columns:
        column = table.column(name)
        target = _without_nanoseconds(column.type)
        arrays.append((column.cast(target) if target != column.type else column).to_pylist())
    return columns, list(zip(*arrays, strict=True)) if columns else []


def _plain(value: Any) -> Any:
    """A result's value as every format prints it (one definition: a table's text, a CSV cell and a JSON value
    say the same): a float that is no number is its name (strict JSON has none), a whole number a float cannot
    hold stays whole, bytes are hex, an interval is DuckDB's text of it."""
    if type(value) is float and not math.isfinite(value):
        return _NON_FINITE[repr(value)]
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):  # HUGEINT reaches Python as a Decimal of scale 0: kept whole
        return int(value) if value.is_finite() and value == value.to_integral_value() else float(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if type(value).__name__ == "MonthDayNano":  # pyarrow's interval, a named tuple: not three numbers
        return interval_text(*value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}  # as PostgreSQL's to_json writes them


def interval_text(months: int, days: int, nanoseconds: int) -> str:
    """An interval as DuckDB prints it: `1 year 2 months 3 days 04:05:06.5`, `-1 day -00:00:01`, `00:00:00`."""
    years = int(months / 12)  # C's division, toward zero, as DuckDB's
    counts = ((years, "year"), (months - years * 12, "month"), (days, "day"))
    parts = [f"{n} {unit}{'' if abs(n) == 1 else 's'}" for n, unit in counts if n]
    micros = int(nanoseconds / 1000)
    if micros or not parts:
        seconds, fraction = divmod(abs(micros), 1_000_000)
        text = f"{'-' if micros < 0 else ''}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        parts.append(text + (f".{fraction:06d}".rstrip("0") if fraction else ""))
    return " ".join(parts)


def csv_text(columns: Sequence[str], rows: Sequence[Sequence[Any]], header: bool = True) -> str:
    """Rows as CSV (`--format csv`, the UI's download): NULL empty, lists and structs as JSON; the header
    line first unless `header` is false (a later chunk of the same rows)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    if header:
        writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return buffer.getvalue()


def _cell(value: Any) -> Any:
    """A value as a CSV cell: NULL empty, a list or a struct as JSON, a scalar as `_plain` says."""
    if value is None:
        return ""
    plain = _plain(value)
    return json_text(plain, ensure_ascii=False) if isinstance(plain, (list, dict)) else plain


# The most rows a rich table holds: rich lays one out in memory, about a millisecond a row (50,000 rows of `sql`
# took 16 s and 350 MB against 0.5 s as CSV; a nightly lake's 819,757 score rows, minutes and 5 GB). A table
# (`--format table`, every command's default) is for reading: it shows this many, and counts the rest beneath
# (CSV and JSON print every row); `score --follow`, a live feed, prints a larger round as plain columns.
TABLE_ROWS = 500


def print_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str, title: str | None = None) -> None:
    print_row_chunks(columns, [rows], fmt, title)


def print_row_chunks(
    columns: Sequence[str], chunks: Iterable[Sequence[Sequence[Any]]], fmt: str, title: str | None = None
) -> int:
    """Rows in `fmt`, printed a chunk at a time as they come, so that memory follows a chunk and not the
    result (`sql` of a whole lake's spans as CSV); how many there were. JSON is one array, CSV has one header
    line; a table shows the first `TABLE_ROWS` and counts the rest beneath."""
    total = 0
    if fmt == "json":
        echo("[", nl=False)
        for rows in chunks:
            if rows:
                # the chunk's objects as json.dumps writes them in a list (its ", " between them), brackets off
                text = json_text([_object(columns, row) for row in rows], ensure_ascii=False)[1:-1]
                echo((", " if total else "") + text, nl=False)
                total += len(rows)
        echo("]")
        return total
    if fmt == "csv":
        headed = False
        for rows in chunks:
            if rows or not headed:
                echo(csv_text(columns, rows, header=not headed), nl=False)
                headed = True
            total += len(rows)
        if not headed:
            echo(csv_text(columns, []), nl=False)
        return total
    kept: list[Sequence[Any]] = []
    for rows in chunks:
        kept.extend(rows[: max(0, TABLE_ROWS - len(kept))])
        total += len(rows)
    table = Table(title=title, show_lines=False)
    for c in columns:
        table.add_column(c, overflow="fold")
    for row in kept:
        # Text, not str: rich would read "[a, b]" in a value as markup and drop it; `shown`: a table is
        # for reading, piped or not
        table.add_row(*[Text("" if v is None else shown(str(_cell(v)))) for v in row])
    # Piped or captured output has no terminal width: let the table be as wide as it needs
    # rather than fold headers and values at rich's default of 80 columns.
    width = Console().width if sys.stdout.isatty() else 240
    Console(file=sys.stdout, width=max(100, width)).print(table)
    if total > TABLE_ROWS:
        click.echo(f"{TABLE_ROWS:,} of {total:,} rows shown; --format csv or --format json prints every row")
    return total


def _object(columns: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    return {c: _plain(v) for c, v in zip(columns, row, strict=True)}
