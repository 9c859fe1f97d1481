"""`tracevals score`: run the evaluators over a lake (offline, sampled, or live) and store the scores."""

from __future__ import annotations

import json
import math
import os
import signal
import sys
from datetime import datetime
from typing import Any

import click
import polars as pl
from rich.console import Console

from tracevals import env
from tracevals.cli.output import format_option, lake_option, print_rows
from tracevals.cli.times import time_range_options

COLUMNS = ["session_id", "trace_id", "task_id", "attempt", "variant", "evaluator", "passed", "score", "reason"]


@click.command()
@lake_option("The lake to score (scores go to LAKE/scores/).", default="lake")
@click.option("--tasks", "tasks_file", type=click.Path(dir_okay=False), envvar=env.TASKS, help="Task cases, JSONL.")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    envvar=env.SCORING_CONFIG,
    help="Scoring config, YAML or JSON.",
)
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
    type=click.Choice(["local", "ray", "spark"]),
    default="local",
    show_default=True,
    help="Where the offline job runs: this machine's processes, or Ray Data / Spark over the same Parquet "
    "(RAY_ADDRESS: a Ray cluster); the same rows (docs/scale.md).",
)
@format_option()
def score(
    lake: str,
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
    from tracevals.evaluators.registry import UnknownEvaluatorError, instances
    from tracevals.lake.paths import check_lake_dir, has_spans
    from tracevals.model.tasks import TaskFileError, load_cases
    from tracevals.queries.lake import LakeError
    from tracevals.scoring.config import ConfigError, ScoringConfig, load_config
    from tracevals.scoring.runs import RunCasesConflict, kept_cases

    try:
        check_lake_dir(lake)
    except LakeError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        # without --tasks, the cases the lake's harness runs kept (none for production traffic)
        tasks = load_cases(tasks_file) if tasks_file else (kept_cases(lake).cases or None)
        config = load_config(config_file) if config_file else ScoringConfig()
        names = [n.strip() for n in evaluator_names.split(",") if n.strip()] if evaluator_names else config.evaluators
        evaluators = instances(names)
    except (TaskFileError, ConfigError, UnknownEvaluatorError, RunCasesConflict) as exc:
        raise click.ClickException(str(exc)) from None
    if engine != "local" and (follow or emit_otlp):
        raise click.ClickException(
            f"--engine {engine} scores offline and writes scores/; --follow and --emit-otlp run locally"
        )
    emitter = _emitter() if emit_otlp else None
    try:
        if follow:
            _follow(lake, tasks, config, evaluators, idle, interval, sample, seed, emitter, not no_write, fmt,
                    max_file_rows)  # fmt: skip
            return
        from tracevals.queries.selection import Selection
        from tracevals.scoring.offline import score_lake

        selection = Selection(
            since=since,
            until=until,
            fraction=sample,
            seed=seed,
        )
        try:
            if engine != "local":
                run = _score_on_engine(engine, lake, tasks, config, evaluators, selection, not no_write, not summary,
                                       workers or _cores())  # fmt: skip
            else:
                run = score_lake(
                    lake,
                    tasks=tasks,
                    config=config,
                    evaluators=evaluators,
                    selection=selection,
                    write=not no_write,
                    sinks=[emitter] if emitter is not None else [],  # a group of sessions at a time
                    keep_scores=not summary,
                    workers=workers or _cores(),
                )
        except LakeError as exc:
            raise click.ClickException(str(exc)) from None
        if run.traces == 0 and not has_spans(lake):
            raise click.ClickException(
                f"the lake {lake} holds no spans: nothing to score (is the agent or collector writing to another "
                "folder? see OTEL_EXPORTER_OTLP_ENDPOINT and --lake)"
            )
        if summary:
            table = run.summary()
            print_rows(table.columns, [list(r) for r in table.iter_rows()], fmt, title="scores per evaluator")
        else:
            _print(run.scores, fmt, summary)
        where = f"; written to {run.written}" if run.written else ""
        if len(run.files) > 1:
            where = f"; written to {len(run.files)} files in {run.written.parent if run.written else lake}"
        console = Console(stderr=True)
        if run.traces == 0:
            console.print(f"warning: no trace of {lake} is in the selection ({_range(since, until)})", highlight=False)
        console.print(f"{run.sessions} sessions, {run.traces} traces, {run.score_count} scores{where}", highlight=False)
    finally:
        if emitter is not None:
            emitter.shutdown()


def _score_on_engine(
    engine: str,
    lake: str,
    tasks: Any,
    config: Any,
    evaluators: Any,
    selection: Any,
    write: bool,
    keep_scores: bool,
    workers: int,
) -> Any:
    """`score_lake` on Ray or Spark (imported only when chosen; a missing package is one line)."""
    from tracevals.scoring.engine import EngineMissing

    if engine == "ray":
        from tracevals.scoring.engine_ray import score_lake_ray as run_on
    else:
        from tracevals.scoring.engine_spark import score_lake_spark as run_on
    try:
        return run_on(lake, tasks=tasks, config=config, evaluators=evaluators, selection=selection, write=write,
                      keep_scores=keep_scores, workers=workers)  # fmt: skip
    except EngineMissing as exc:
        raise click.ClickException(str(exc)) from None


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _range(since: datetime | None, until: datetime | None) -> str:
    def text(t: datetime | None, none: str) -> str:
        return none if t is None else t.isoformat(timespec="minutes").replace("+00:00", "Z")

    return f"since {text(since, 'the start')}, until {text(until, 'now')}"


def _emitter() -> Any:
    from tracevals.scoring.emit import EvaluationEmitter

    return EvaluationEmitter()


def _follow(
    lake: str,
    tasks: Any,
    config: Any,
    evaluators: Any,
    idle: float,
    interval: float,
    sample: float | None,
    seed: int,
    emitter: Any,
    write: bool,
    fmt: str,
    max_file_rows: int | None = None,
) -> None:
    from tracevals.queries.lake import LakeError
    from tracevals.scoring.live import Follower

    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)

    header = [fmt == "csv"]

    def show(scores: pl.DataFrame, _roots: dict[str, str]) -> None:
        if scores.height == 0:
            return
        if fmt == "json":  # one object per line: a stream has no end to close an array at
            click.echo("\n".join(json_lines(scores)))
        elif fmt == "csv":
            _print_csv(scores, header[0])
            header[0] = False
        elif scores.height <= RICH_ROWS:
            _print(scores, "table", summary=False)
        else:
            click.echo(plain_table(scores))
        sys.stdout.flush()

    sinks: list[Any] = [show] + ([emitter] if emitter is not None else [])
    try:
        follower = Follower(
            lake,
            tasks=tasks,
            config=config,
            evaluators=evaluators,
            idle_s=idle,
            sample=(sample, seed) if sample is not None else None,
            write=write,
            sinks=sinks,
        )
    except LakeError as exc:  # a lake --follow cannot follow (object storage): one line
        raise click.ClickException(str(exc)) from None
    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    if max_file_rows:
        follower.max_file_rows = max_file_rows
    follower.prepare()
    Console(stderr=True).print(f"following {lake} (idle {idle:g}s); Ctrl-C to stop", highlight=False)
    try:
        follower.run(interval_s=interval, stop=lambda: bool(stopping))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# --follow, table format: a round of more scores than this prints as plain aligned columns, not as a rich
# table (which takes about a millisecond a row: 100,000 sessions' scores would take minutes to print).
RICH_ROWS = 500


def json_lines(scores: pl.DataFrame) -> list[str]:
    """Each row as `json.dumps(dict(zip(COLUMNS, row)), ensure_ascii=False, default=str)` writes it, a column
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
        else:  # floats (json writes finite ones as repr does) and anything else
            encode = json.JSONEncoder(ensure_ascii=False, default=str).encode
            text = [float.__repr__(v) if type(v) is float and math.isfinite(v) else encode(v) for v in values]
        columns.append([f'"{name}": {t}' for t in text])
    return ["{" + ", ".join(fields) + "}" for fields in zip(*columns, strict=True)]


def plain_table(scores: pl.DataFrame) -> str:
    """The rows as columns aligned with spaces, a header above, the reason (the last column) unpadded."""
    columns = []
    for name in COLUMNS:
        text = [name, *("" if v is None else str(v) for v in scores.get_column(name).to_list())]
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
    click.echo(buffer.getvalue(), nl=False)


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
