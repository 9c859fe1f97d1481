"""`tracevals run`: run a task set k times against your agent; every attempt one trace in the lake."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
from rich.console import Console

from tracevals.cli.output import format_option, lake_option, print_rows, progress_bar
from tracevals.harness import AgentLoadError, load_agent, run_cases
from tracevals.harness.attacks import InjectionError, load_injections
from tracevals.harness.cassettes import CassetteMiss
from tracevals.harness.environment import harness_capture
from tracevals.harness.faults import FaultProfileError, load_fault_profile
from tracevals.harness.interceptor import plan_from_options
from tracevals.instrumentation import instrument
from tracevals.lake.run_cases import RunCasesConflict, write_run_cases
from tracevals.model.tasks import TaskFileError, load_cases
from tracevals.scoring.runs import completed_attempts, score_run
from tracevals.stats import summarize
from tracevals.stats.outcomes import outcomes


@click.command()
@click.option(
    "--tasks",
    "tasks_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="Task cases, JSONL.",
)
@click.option("--agent", "agent_ref", required=True, help="The agent under test, as module:function.")
@click.option("-k", "k", type=click.IntRange(1, 1000), default=5, show_default=True, help="Attempts per case.")
@click.option("--variant", default="default", show_default=True, help="Name of what is under test.")
@click.option(
    "--concurrency", type=click.IntRange(1, 256), default=4, show_default=True, help="Attempts in flight at once."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Base seed of the attempts.")
@lake_option("Where spans and scores go.", default="lake")
@click.option("--run-id", default=None, help="Name of the run; re-running an existing id resumes it.")
@click.option(
    "--setting",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A setting passed to the agent in ctx.settings (repeatable).",
)
@click.option(
    "--capture-content/--no-capture-content",
    default=None,
    help="Record message content (prompts, tool arguments and results) on the attempts' spans. Default: on, "
    "since test runs are test data and argument checks need it, unless "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT says otherwise. Secrets are redacted either way.",
)
@click.option(
    "--faults",
    "faults_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Fault profile (YAML or JSON): which tool calls fail, and how.",
)
@click.option(
    "--injections",
    "injections_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Prompt injections (YAML or JSON): attack payloads planted in tool results.",
)
@click.option(
    "--cassettes",
    "cassette_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of tool-call cassettes, with --record, --replay or --record-new.",
)
@click.option("--record", "cassette_mode", flag_value="record", help="Run tools live and record them.")
@click.option("--replay", "cassette_mode", flag_value="replay", help="Replay recorded tool calls; run none live.")
@click.option(
    "--record-new", "cassette_mode", flag_value="record-new", help="Replay what is recorded, record the rest."
)
@format_option()
def run(
    tasks_file: Path,
    agent_ref: str,
    k: int,
    variant: str,
    concurrency: int,
    seed: int,
    lake: str,
    run_id: str | None,
    settings: tuple[str, ...],
    capture_content: bool | None,
    faults_file: Path | None,
    injections_file: Path | None,
    cassette_dir: Path | None,
    cassette_mode: str | None,
    fmt: str,
) -> None:
    """Run every case of TASKS k times with AGENT, score the attempts, print the statistics.

    The agent is a function `agent(input: str, ctx: tracevals.AttemptContext) -> str` (sync or
    async). Each attempt is one trace whose root carries the run id, task id, attempt, variant,
    commit and lock hash; it is flushed to the lake as it finishes, so re-running a killed run
    with the same --run-id completes it without repeating finished attempts.

    \b
    Examples:
      tracevals run --tasks cases.jsonl --agent my_agent:run -k 5 --variant prompt-v2
      tracevals run --tasks cases.jsonl --agent my_agent:run --run-id nightly-42   # resumes
      tracevals run --tasks cases.jsonl --agent my_agent:run --setting model=gpt-4o --format json
      tracevals run --tasks cases.jsonl --agent my_agent:run --faults faults.yaml
      tracevals run --tasks cases.jsonl --agent my_agent:run --cassettes tapes --record
      tracevals run --tasks cases.jsonl --agent my_agent:run --cassettes tapes --replay
    """
    try:
        cases = load_cases(tasks_file)
        agent = load_agent(agent_ref)
        plan = plan_from_options(
            faults=load_fault_profile(faults_file) if faults_file else (),
            injections=load_injections(injections_file) if injections_file else (),
            cassette_dir=cassette_dir,
            cassette_mode=cassette_mode,
        )
        for case in cases:
            if plan.is_active(case):
                plan.interceptor(case, 0)  # a bad fault or injection, or a missing cassette, fails now
    except (TaskFileError, AgentLoadError, FaultProfileError, InjectionError, CassetteMiss) as exc:
        raise click.ClickException(str(exc)) from None
    if (cassette_dir is None) != (cassette_mode is None):
        raise click.ClickException("--cassettes DIR goes with one of --record, --replay, --record-new")
    extra: dict[str, str] = {}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.ClickException(f"--setting {item!r} must look like KEY=VALUE")
        extra[key] = value
    run_id = run_id or f"run-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{variant}"
    try:  # the run keeps its cases in the lake: later commands score its attempts against exactly these
        write_run_cases(lake, run_id, tasks_file.read_bytes(), str(tasks_file))
    except RunCasesConflict as exc:
        raise click.ClickException(str(exc)) from None
    done = completed_attempts(lake, run_id)
    console = Console(stderr=True)
    if done:
        console.print(f"resuming run {run_id}: {len(done)} attempts already in the lake are skipped")
    Path(lake).mkdir(parents=True, exist_ok=True)
    telemetry = instrument(lake=lake, capture_content=harness_capture(capture_content))
    try:
        todo = len(cases) * k - sum(1 for key in done if key[0] == variant)
        with progress_bar(console) as progress:
            bar = progress.add_task(variant, total=max(0, todo))

            def finished(_result: object) -> None:
                progress.advance(bar)

            run_cases(
                agent,
                cases,
                k=k,
                run_id=run_id,
                variant=variant,
                seed=seed,
                concurrency=concurrency,
                settings=extra,
                on_done=finished,
                skip=done,
                flush=telemetry.force_flush,  # each attempt in the lake as it finishes
                plan=plan,
            )
    finally:
        telemetry.shutdown()
    result = score_run(lake, run_id, cases)
    summaries = summarize(outcomes(result.trajectories, result.scores), k=k)
    rows = [
        {
            "variant": s.variant,
            "runs": s.runs,
            "pass_at_1": round(s.pass_at_1, 4),
            "wilson_low": round(s.wilson[0], 4),
            "wilson_high": round(s.wilson[1], 4),
            "k": s.k,
            "pass_hat_k": round(s.pass_hat_k_headline, 4),
            "worst_task": s.worst_task.task_id if s.worst_task else None,
            "handoffs": s.handoffs,
        }
        for s in summaries.values()
    ]
    if fmt == "json":
        click.echo(json.dumps({"run_id": run_id, "lake": lake, "variants": rows}))
        return
    print_rows(
        list(rows[0]) if rows else ["variant"],
        [list(r.values()) for r in rows],
        fmt,
        title=f"run {run_id}: {len(cases)} cases x {k} attempts",
    )
    if fmt == "table":
        click.echo(f"lake: {lake}   (tracevals sql --lake {lake} \"select * from runs where run_id = '{run_id}'\")")
