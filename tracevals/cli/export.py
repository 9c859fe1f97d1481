"""`tracevals export`: every row of a per-trace view, written to Parquet a group of hours at a time."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tracevals.cli.shared.output import (
    format_option,
    lake_option,
    memory_limit_option,
    messages,
    print_rows,
    progress_bar,
    say,
)
from tracevals.queries import LakeError
from tracevals.queries.export import MAX_SPANS, PER_TRACE_VIEWS, export_view

if TYPE_CHECKING:
    from tracevals.lake.lake import Lake


@click.command()
@lake_option("The lake: a directory (holds spans/, logs/, scores/) or an s3:// prefix.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="A new (or empty) directory for the part-NNNNN.parquet files.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=os.cpu_count() or 1,
    show_default="the number of cores",
    help="Groups computed at once, each in a process with one DuckDB thread.",
)
@click.option(
    "--max-spans",
    type=click.IntRange(min=1),
    default=MAX_SPANS,
    show_default=True,
    help="About how many spans one group of hours holds (an hour is never split).",
)
@memory_limit_option("DuckDB memory_limit of each worker, e.g. 4GB.")
@format_option()
@click.argument("view", type=click.Choice(sorted(PER_TRACE_VIEWS)))
def export(lake: Lake, out: Path, workers: int, max_spans: int, memory_limit: str | None, fmt: str, view: str) -> None:
    """Write every row of VIEW (a view computed per trace) to Parquet files in --out.

    \b
    The lake is read a group of consecutive hours at a time, so memory follows the
    group, not the lake; traces with spans in two groups are written last. The files
    hold the rows of `tracevals sql "SELECT * FROM VIEW"`, in no particular order.
    Examples:
      tracevals export trajectories --lake lake --out nightly/trajectories
      tracevals export steps --lake lake --out steps --workers 4 --memory-limit 4GB
      duckdb -c "SELECT count(*) FROM 'nightly/trajectories/*.parquet'"
    """
    console = messages()
    try:
        with progress_bar(console) as progress:
            bar = progress.add_task(view, total=None)
            result = export_view(
                lake,
                view,
                out,
                max_spans=max_spans,
                workers=workers,
                memory_limit=memory_limit,
                progress=lambda done, total: progress.update(bar, completed=done, total=total),
            )
    except LakeError as exc:
        raise click.ClickException(str(exc)) from None
    rows = [(str(path), view) for path in result.files]
    print_rows(["file", "view"], rows, fmt)
    say(
        console,
        f"{result.rows} rows in {len(result.files)} files ({result.groups} groups of hours, "
        f"{result.crossing_traces} traces across groups) in {result.seconds:.1f} s",
    )
