"""`tracevals score`: run the evaluators over a lake (offline, sampled, or live) and store the scores."""

from __future__ import annotations

import json
import math
import os
import signal
import sys
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import click
import polars as pl
from rich.console import Console

from tracevals import env
from tracevals.cli.shared.output import (
    TABLE_ROWS,
    echo,
    file_option,
    format_option,
    lake_option,
    memory_limit_option,
    messages,
    phase_bar,
    print_rows,
    say,
    shown,
)
from tracevals.cli.shared.times import time_range_options
from tracevals.lake import clock
from tracevals.model.json_text import json_text
from tracevals.model.signals import taken_here
from tracevals.scoring.engines import DEFAULT_ENGINE, ENGINES

if TYPE_CHECKING:
    from tracevals.lake.lake import Lake

COLUMNS = ["session_id", "trace_id", "task_id", "attempt", "variant", "evaluator", "passed", "score", "reason"]


@click.command()
@lake_option("The lake to score (scores go to LAKE/scores/).", default="lake")
@file_option("--tasks", "tasks_file", "Task cases, JSONL.", envvar=env.TASKS, exists=False)
@file_option("--config", "config_file", "Scoring config, YAML or JSON.", envvar=env.SCORING_CONFIG, exists=False)
@click.option("--evaluators", "evaluator_names", envvar=env.EVALUATORS, help="Comma-separated evaluator names.")
@time_range_options()
@click.option("--sample", type=click.FloatRange(0, 1, min_open=True), envvar=env.SAMPLE, help="Fraction of sessions.")
@click.option("--seed", type=int, default=0, show_default=True, envvar=env.SEED, help="Seed of the sample.")
@click.option("--follow", is_flag=True, help="Keep running: score sessions as they finish.")
@click.option("--idle", type=click.FloatRange(0), default=30.0, show_default=True, envvar=env.IDLE,
              help="--follow: seconds of quiet after which a session whose roots ended is finished.")  # fmt: skip
@click.option(
    "--interval", type=click.FloatRange(0.01), default=1.0, show_default=True, help="--follow: seconds between polls."
)
@click.option(
    "--emit-otlp", is_flag=True, envvar=env.EMIT_OTLP, help="Also send gen_ai.evaluation.result events (OTLP)."
)
@click.option(
    "--max-file-rows",
    type=click.IntRange(1),
    help="--follow: skip (with one warning) a span file of more rows than this [default: 4000000]; a batch "
    "`score` reads any.",
)
@click.option("--no-write", is_flag=True, help="Print the scores without storing them.")
@click.option(
    "--summary",
    is_flag=True,
    help="Print a pass rate per evaluator instead of every score (then only counts are kept in memory).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Groups of whole sessions scored at once, each in a process of its own [default: the number of cores]; "
    "--engine ray|spark: the CPUs of a local Ray / Spark and the partitions of the shuffle.",
)
@click.option(
    "--engine",
    type=click.Choice(list(ENGINES)),
    default=DEFAULT_ENGINE,
    show_default=True,
    help="Where the offline job runs: this machine's processes, or Ray Data / Spark over the same Parquet "
    "(RAY_ADDRESS: a Ray cluster); the same rows (docs/scale.md).",
)
@memory_limit_option(
    "DuckDB memory_limit of each worker, e.g. 2GB; it holds, the rows a group of sessions holds included "
    "[default: 160MB for the work beyond those rows, given way to by a statement that needs more].",
)
@format_option()
def score(
    lake: Lake,
    tasks_file: str | None,
    config_file: str | None,
    evaluator_names: str | None,
    since: datetime | None,
    until: datetime | None,
    sample: float | None,
    seed: int,
    follow: bool,
    max_file_rows: int | None,
    idle: float,
    interval: float,
    emit_otlp: bool,
    no_write: bool,
    summary: bool,
    workers: int | None,
    engine: str,
    memory_limit: str | None,
    fmt: str,
) -> None:
    """Score the sessions of a lake with the evaluators; store the scores in LAKE/scores/ and print them.

    With --tasks, traces are matched to cases by tracevals.task.id, else by their (normalised) input
    text; without it, harness attempts are scored against the cases their run kept in the lake. Traffic
    with no case is scored by the generic evaluators (budgets and policy from --config, session
    completeness, retry discipline, injection). Every option also reads an environment
    variable (TRACEVALS_LAKE, TRACEVALS_TASKS, TRACEVALS_SCORING_CONFIG, TRACEVALS_SAMPLE, ...).

    \b
    Examples:
      tracevals score --lake lake --tasks cases.jsonl
      tracevals score --lake lake --config scoring.yaml --since yesterday --until today --sample 0.05 --seed 7
      tracevals score --lake lake --config scoring.yaml --follow --idle 30 --format json
    """
    from tracevals.queries.selection import Selection
    from tracevals.scoring.options import build_job

    lake.check()
    if engine != DEFAULT_ENGINE and (follow or emit_otlp):
        raise click.ClickException(
            f"--engine {engine} scores offline and writes scores/; --follow and --emit-otlp run on this machine"
        )
    if engine != DEFAULT_ENGINE and memory_limit is not None:
        raise click.ClickException(
            f"--memory-limit bounds this machine's workers; --engine {engine}'s take their memory from "
            f"{engine.capitalize()}'s own settings (unset TRACEVALS_MEMORY_LIMIT, or drop --memory-limit)"
        )
    emitter = _emitter() if emit_otlp else None
    try:
        now = clock.now()
        horizon = clock.horizon(now)
        late = timedelta(seconds=clock.late_seconds()) if since is not None and engine == DEFAULT_ENGINE else None
        selection = Selection(
            since=since,
            until=clock.capped(until, now),  # the reader's clock: nothing a skewed client stamped ahead
            fraction=sample,
            seed=seed,
            late=late,  # sessions of the day before `since` that arrived after the run that covered it
        )
        job = build_job(
            lake,
            tasks_file=tasks_file,
            config_file=config_file,
            evaluators=evaluator_names,
            selection=selection,
            write=not no_write,
            sinks=(emitter,) if emitter is not None else (),  # a group of sessions at a time
            keep_scores=not summary,
            workers=workers or _cores(),
            memory_limit=memory_limit,
        )
        if follow:
            _follow(job, idle, interval, fmt, max_file_rows)
            return
        run = _scored(job, engine)
        if run.traces == 0 and not lake.has_spans():
            raise click.ClickException(
                f"the lake {lake} holds no spans: nothing to score (is the agent or collector writing to another "
                "folder? see OTEL_EXPORTER_OTLP_ENDPOINT and --lake)"
            )
        _print_run(run, lake, fmt, summary, _range(since, until))
        if evaluator_names and run.traces:
            _say_idle_evaluators(job.chosen(), run, tasks_file is not None, messages())
        _say_odd_times(lake, horizon, since, messages())
    finally:
        if emitter is not None:
            emitter.shutdown()


def _scored(job: Any, engine: str) -> Any:
    """`job` scored on `engine`; on this machine's engine, a bar of the groups of sessions scored on stderr when
    it is a terminal (gone once they are)."""
    from tracevals.scoring.engines import score as score_on

    if engine != DEFAULT_ENGINE:
        return score_on(job, engine)
    with phase_bar(messages(), "score") as told:
        told(GROUPS_PHASE, 0, None)
        return score_on(replace(job, progress=lambda done, total: told(GROUPS_PHASE, done, total)), engine)


GROUPS_PHASE = "groups of sessions"


def _print_run(run: Any, lake: Lake, fmt: str, summary: bool, selected: str) -> None:
    """The run's rows (or its counts per evaluator, with --summary) on stdout; what was written, on stderr."""
    if summary:
        table = run.summary()
        print_rows(table.columns, [list(r) for r in table.iter_rows()], fmt, title="scores per evaluator")
    else:
        _print(run.scores, fmt, summary)
    where = f"; written to {run.written}" if run.written else ""
    if len(run.files) > 1:
        where = f"; written to {len(run.files)} files in {run.written.parent if run.written else lake}"
    console = messages()
    if run.traces == 0:
        say(console, f"warning: no trace of {lake} is in the selection ({selected})")
    say(console, f"{run.sessions} sessions, {run.traces} traces, {run.score_count} scores{where}")


def _say_idle_evaluators(chosen: Any, run: Any, tasks: bool, console: Console) -> None:
    """A warning for each evaluator the user named that scored none of the traces: it had nothing to judge in
    them (an evaluator that compares with a case scores only traces matched to one), not a silent 0."""
    scored = set(run.summary().get_column("evaluator").to_list())
    for evaluator in chosen:
        if evaluator.name not in scored:
            hint = "" if tasks else "; one that compares with a case needs the cases: --tasks"
            say(console, f"warning: {evaluator.name} scored none of the {run.traces} traces{hint}")


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _say_odd_times(lake: Lake, horizon: datetime, since: datetime | None, console: Console) -> None:
    """The data-quality finding of `lake.clock`: odd span times, counted, one warning line each."""
    from tracevals.queries.time_quality import lake_time_quality

    for finding in lake_time_quality(lake, horizon, since).findings:
        say(console, f"warning: data quality: {finding}")


def _range(since: datetime | None, until: datetime | None) -> str:
    def text(t: datetime | None, none: str) -> str:
        return none if t is None else t.isoformat(timespec="minutes").replace("+00:00", "Z")

    return f"since {text(since, 'the start')}, until {text(until, 'now')}"


def _emitter() -> Any:
    from tracevals.scoring.emit import EvaluationEmitter

    return EvaluationEmitter()


def _follow(job: Any, idle: float, interval: float, fmt: str, max_file_rows: int | None = None) -> None:
    from dataclasses import replace

    from tracevals.scoring.live import Follower

    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)

    header = [fmt == "csv"]

    def show(scores: pl.DataFrame, _roots: dict[str, str]) -> None:
        if scores.height == 0:
            return
        if fmt == "json":  # one object per line: a stream has no end to close an array at
            echo("\n".join(json_lines(scores)))
        elif fmt == "csv":
            _print_csv(scores, header[0])
            header[0] = False
        elif scores.height <= TABLE_ROWS:  # beyond: plain columns, not a rich table
            _print(scores, "table", summary=False)
        else:
            echo(plain_table(scores))
        sys.stdout.flush()

    follower = Follower(replace(job, sinks=(show, *job.sinks)), idle_s=idle)  # a lake on object storage: one line
    previous = {s: signal.signal(s, stop) for s in taken_here()}  # Ctrl-C, SIGTERM, SIGHUP
    if max_file_rows:
        follower.max_file_rows = max_file_rows

    def future(partitions: list[Any]) -> None:
        where = ", ".join(f"{p.parent.name}/{p.name}" for p in partitions[-3:])
        say(
            messages(),
            f"warning: data quality: {len(partitions)} more partitions hold spans that start after the reader's "
            f"clock plus the skew allowance ({where}): future-dated, not scored",
        )

    follower.on_future = future
    follower.prepare()
    say(messages(), f"following {job.lake} (idle {idle:g}s); Ctrl-C to stop")
    try:
        follower.run(interval_s=interval, stop=lambda: bool(stopping))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def json_lines(scores: pl.DataFrame) -> list[str]:
    """Each row as `json_text(dict(zip(COLUMNS, row)), ensure_ascii=False)` writes it, a column
    at a time (the same text, several times faster: a round can hold hundreds of thousands of rows)."""
    if scores.height == 0:
        return []
    from json.encoder import encode_basestring

    columns = []
    for name in COLUMNS:
        series = scores.get_column(name)
        values = series.to_list()
        if series.dtype == pl.String:
            text = ["null" if v is None else encode_basestring(v) for v in values]
        elif series.dtype == pl.Boolean:
            text = ["null" if v is None else "true" if v else "false" for v in values]
        elif series.dtype.is_integer():
            text = ["null" if v is None else int.__repr__(v) for v in values]
        else:  # floats (json writes finite ones as repr does; one that is no number is null: `json_text`)
            text = [
                float.__repr__(v) if type(v) is float and math.isfinite(v) else json_text(v, ensure_ascii=False)
                for v in values
            ]
        columns.append([f'"{name}": {t}' for t in text])
    return ["{" + ", ".join(fields) + "}" for fields in zip(*columns, strict=True)]


def plain_table(scores: pl.DataFrame) -> str:
    """The rows as columns aligned with spaces, a header above, the reason (the last column) unpadded; values
    `shown` (a table is for reading, piped or not)."""
    columns = []
    for name in COLUMNS:
        text = [name, *("" if v is None else shown(str(v)) for v in scores.get_column(name).to_list())]
        if name != COLUMNS[-1]:
            width = max(map(len, text))
            text = [t.ljust(width) for t in text]
        columns.append(text)
    return "\n".join("  ".join(fields) for fields in zip(*columns, strict=True))


def _rows(scores: pl.DataFrame) -> list[list[Any]]:
    return [list(r) for r in scores.select(COLUMNS).iter_rows()] if scores.height else []


def _print_csv(scores: pl.DataFrame, header: bool) -> None:
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    if header:
        writer.writerow(COLUMNS)
    writer.writerows(["" if v is None else v for v in row] for row in _rows(scores))
    echo(buffer.getvalue(), nl=False)


def _print(scores: pl.DataFrame, fmt: str, summary: bool) -> None:
    if summary:
        table = (
            scores.group_by("evaluator", maintain_order=True)
            .agg(scores=pl.len(), passed=pl.col("passed").sum(), pass_rate=pl.col("passed").mean().round(4))
            .sort("evaluator")
        )
        print_rows(table.columns, [list(r) for r in table.iter_rows()], fmt, title="scores per evaluator")
        return
    if fmt == "json":  # every score with its typed findings (`details.findings`), which the other surfaces read
        found = scores.get_column("details").str.json_path_match("$.findings").fill_null("[]").to_list()
        rows = [[*row, json.loads(f)] for row, f in zip(_rows(scores), found, strict=True)]
        print_rows([*COLUMNS, "findings"], rows, fmt, title="scores")
        return
    print_rows(COLUMNS, _rows(scores), fmt, title="scores")
