"""`tracevals compact`: rewrite the closed hours of a lake as a few large files, sorted by session."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click
from rich.console import Console

from tracevals import env
from tracevals.cli.shared.output import format_option, lake_option, messages, print_rows, progress_bar, say
from tracevals.collector.config_schema import duration
from tracevals.lake.compact import GROUP_BYTES, MIN_AGE_S, CompactError
from tracevals.lake.compact import compact as compact_lake
from tracevals.lake.retention import RETENTION_S

if TYPE_CHECKING:
    from rich.progress import Progress

    from tracevals.lake.lake import Lake


def _derive(lake: Lake, ended_before: float, console: Console, progress: Progress) -> None:
    """The derived tables of the closed hours (`queries.derived`: what the nightly job reads instead of
    rebuilding them through the views), with a bar of their own. A failure is a warning: readers then use the
    views, nothing is lost."""
    from tracevals.queries.derived_write import derive_or_warn

    bar = progress.add_task("derive frames", total=None)
    started = time.monotonic()
    written, warning = derive_or_warn(
        lake, ended_before, progress=lambda done, total: progress.update(bar, completed=done, total=total)
    )
    if warning:
        say(console, f"tracevals: warning: {warning}")
    elif written:
        hours = "1 closed hour" if len(written) == 1 else f"{len(written)} closed hours"
        say(console, f"derived the frames of {hours} in {time.monotonic() - started:.1f} s")


def _seconds(text: str, option: str = "--min-age") -> float:
    """A duration as otel-config.yaml writes one (`90s`, `30m`, `2h`, a number of seconds), or days (`1d`)."""
    value = text.strip()
    try:
        if value[-1:].lower() == "d":
            return float(value[:-1]) * 86400
        return duration(value, option)
    except ValueError:  # config_schema.ConfigError is one
        raise click.BadParameter(f"{text!r} is not a duration (e.g. 90s, 30m, 2h, 1d)") from None


@click.command()
@lake_option("The lake directory (holds spans/ and logs/).", reads=False)
@click.option(
    "--min-age",
    default=f"{int(MIN_AGE_S // 3600)}h",
    show_default=True,
    help="Compact only the hours that ended at least this long ago (90s, 30m, 2h, 1d; 0 for every hour).",
)
@click.option(
    "--group-mib",
    type=click.IntRange(min=1),
    default=GROUP_BYTES // 1024**2,
    show_default=True,
    help="Uncompressed MiB of rows rewritten into one file; peak memory is about four times this.",
)
@click.option(
    "--retention",
    envvar=env.COMPACT_RETENTION,
    default=f"{int(RETENTION_S // 60)}m",
    show_default=True,
    help="How long the files an hour had stay after it is merged, for readers that listed them (90s, 10m, 2h; "
    "0 deletes them at once). A later run deletes them.",
)
@click.option("--dry-run", is_flag=True, help="List the partitions that would be compacted; change nothing.")
@format_option()
def compact(lake: Lake, min_age: str, group_mib: int, retention: str, dry_run: bool, fmt: str) -> None:
    """Rewrite each closed hour of a lake as one file sorted by session (or a few,
    --group-mib each), so that a session's lookup reads one row group of it.

    \b
    Every row is kept. The files an hour had stay for --retention once the new file
    is in place (a query that listed them still reads them; the views count each row
    once), then a later run deletes them; a crash in between leaves the same state.
    Files that arrive meanwhile wait for the next run: run it from cron, e.g. hourly.
    Examples:
      tracevals compact --lake lake
      tracevals compact --lake lake --min-age 0 --dry-run
      tracevals compact --lake lake --format json
    """
    console = messages()
    try:
        with progress_bar(console, transient=True) as progress:
            bar = progress.add_task("compact", total=None)
            result = compact_lake(
                lake,
                min_age_s=_seconds(min_age),
                retention_s=_seconds(retention, "--retention"),
                group_bytes=group_mib * 1024**2,
                dry_run=dry_run,
                progress=lambda done, total: progress.update(bar, completed=done, total=total),
                then=lambda: _derive(lake, time.time() - _seconds(min_age), console, progress),
            )
    except CompactError as exc:
        raise click.ClickException(str(exc)) from None
    rows = [
        (p.table, p.partition, p.files_in, p.files_out, p.rows, p.bytes_in, p.bytes_out, p.leftovers_removed, p.error)
        for p in result.partitions
    ]
    columns = ["table", "partition", "files_in", "files_out", "rows", "bytes_in", "bytes_out", "leftovers", "error"]
    print_rows(columns, rows, fmt)
    verb = "would compact" if dry_run else "compacted"
    kept = f"; {result.kept_for_readers} merged files kept for readers (--retention {retention})"
    say(
        console,
        f"{verb} {result.files_in} files into {result.files_out} in {len(result.partitions)} partitions "
        f"in {result.seconds:.1f} s" + (kept if result.kept_for_readers else ""),
    )
    if result.too_young:  # an hour still being written (or younger than --min-age) is never rewritten
        say(
            console,
            f"left {len(result.too_young)} partitions that ended less than --min-age {min_age} ago (an hour is "
            f"compacted once it has ended): {', '.join(result.too_young[:3])}"
            + (f" +{len(result.too_young) - 3} more" if len(result.too_young) > 3 else ""),
        )
    failed = [p for p in result.partitions if p.error]
    if failed:
        raise click.ClickException(f"{len(failed)} partitions left as they were; first: {failed[0].error}")
