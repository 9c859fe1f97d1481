"""`tracevals run`: run a task set k times against your agent; every attempt one trace in the lake."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from tracevals.cli.shared.output import file_option, format_option, lake_option, messages, print_rows, progress_bar, say
from tracevals.cli.shared.reports import report_from_lake
from tracevals.cli.shared.run_control import stoppable, stopped, take_run_lease
from tracevals.harness import AgentLoadError, load_agent, run_cases
from tracevals.harness.attacks import InjectionError, load_injections
from tracevals.harness.cassettes import CassetteError, CassetteMiss
from tracevals.harness.environment import file_digest, folder_digest, harness_capture
from tracevals.harness.faults import FaultProfileError, load_fault_profile
from tracevals.harness.interceptor import RunPlan, plan_from_options
from tracevals.instrumentation import instrument
from tracevals.lake.leases import Lease
from tracevals.lake.names import BadName, check_name, under
from tracevals.lake.paths import LakeError
from tracevals.lake.run_cases import RunCasesConflict, check_run_flags, write_run_cases
from tracevals.model.attempt import AttemptKey
from tracevals.model.case import Case
from tracevals.model.json_text import json_text
from tracevals.model.quoting import command_line, sql_string
from tracevals.model.tasks import TaskFileError, load_cases
from tracevals.queries.selection import Selection
from tracevals.report import summary_rows
from tracevals.report.json_report import attempt_rows
from tracevals.report.reliability import lake_rows
from tracevals.report.reliability_view import reliability_json
from tracevals.report.terminal import reliability_tables, summary_table
from tracevals.scoring.runs import compact_run, completed_attempts, score_run
from tracevals.scoring.store import write_step_reliability

if TYPE_CHECKING:
    from tracevals.lake.lake import Lake


@click.command()
@file_option("--tasks", "tasks_file", "Task cases, JSONL.", required=True)
@click.option(
    "--agent", "agent_ref", required=True, help="The agent under test, as module:function or path/to/file.py:function."
)
@click.option("-k", "k", type=click.IntRange(1, 1000), default=5, show_default=True, help="Attempts per case.")
@click.option("--variant", default="default", show_default=True, help="Name of what is under test.")
@click.option(
    "--concurrency", type=click.IntRange(1, 256), default=4, show_default=True, help="Attempts in flight at once."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Base seed of the attempts.")
@lake_option("Where spans and scores go.", default="lake")
@click.option("--run-id", default=None, help="Name of the run; re-running an existing id resumes it.")
@click.option(
    "--resume",
    is_flag=True,
    help="If the run id is in progress in another process, wait for it to end, then continue the run "
    "(without it, a run id in progress is refused).",
)
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
@file_option("--faults", "faults_file", "Fault profile (YAML or JSON): which tool calls fail, and how.")
@file_option(
    "--injections", "injections_file", "Prompt injections (YAML or JSON): attack payloads planted in tool results."
)
@click.option(
    "--cassettes",
    "cassette_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of tool-call cassettes, with --record, --replay or --record-new.",
)
@click.option("--record", "record", is_flag=True, help="Run tools live and record them.")
@click.option("--replay", "replay", is_flag=True, help="Replay recorded tool calls; run none live.")
@click.option("--record-new", "record_new", is_flag=True, help="Replay what is recorded, record the rest.")
@click.option(
    "--attribute-variance",
    is_flag=True,
    help="Run the tasks live, with the tools frozen and with tools and model frozen (cassettes of attempt 1 "
    "in --cassettes DIR, default LAKE/variance/RUN_ID) and say whose the flakiness is: the world's, the "
    "model's or the agent's own code.",
)
@format_option()
def run(**given: Any) -> None:
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
      tracevals run --tasks cases.jsonl --agent my_agent:run -k 5 --attribute-variance
    """
    o = RunOptions(**given)
    cassette_mode = o.cassette_mode()  # before anything is loaded: contradictory flags fail first
    cases, agent, plan = o.load(cassette_mode)
    extra = o.agent_settings()
    run_id = o.run_id or f"run-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{o.variant}"
    capture = harness_capture(o.capture_content)
    console = messages()
    lake = o.lake
    if lake.local_folder is None and o.attribute_variance and o.cassette_dir is None:
        raise click.ClickException(
            f"--attribute-variance on an object-store lake ({lake}) needs --cassettes DIR: a local folder "
            "for the cassettes of the frozen runs"
        )
    # one process per run id (a CI retry while the first job still runs is refused, or waits with --resume);
    # everything from here on, counting what is done included, happens under the lease
    lease = take_run_lease(lake, run_id, o.resume, console)
    try:
        done = _begin(o, run_id, o.flags(cassette_mode, extra, capture), cases, console)
        attempts = Attempts(agent, cases, o.k, run_id, o.variant, o.seed, o.concurrency, extra, plan,
                            o.environment(cassette_mode), done)  # fmt: skip
        if o.attribute_variance:
            from tracevals.cli.shared.variance import print_attribution, score_attribution

            # one folder in the lake, whatever the id (a local lake: checked above)
            work = o.cassette_dir or under(Path(lake.local_folder or ".") / "variance", run_id)
            _run_attempts(attempts, lake, capture, console, lease, work)
            print_attribution(score_attribution(lake, run_id, cases, o.variant, o.k), run_id, lake, o.variant, o.fmt)
            return
        _run_attempts(attempts, lake, capture, console, lease)
        for rule, why in plan.unfired_rules():  # a fault profile that injected nothing must say so
            say(console, f"warning: fault rule {rule.id} never fired: {why}")
        score_run(lake, run_id, cases)
        _print_run(lake, run_id, len(cases), o.k, plan, o.fmt, console)
    finally:
        lease.release()


@dataclass(frozen=True)
class RunOptions:
    """What `tracevals run` was given: its options, by the names of their parameters."""

    tasks_file: Path
    agent_ref: str
    k: int
    variant: str
    concurrency: int
    seed: int
    lake: Lake
    run_id: str | None
    resume: bool
    settings: tuple[str, ...]
    capture_content: bool | None
    faults_file: Path | None
    injections_file: Path | None
    cassette_dir: Path | None
    record: bool
    replay: bool
    record_new: bool
    attribute_variance: bool
    fmt: str

    def cassette_mode(self) -> str | None:
        """The one cassette mode asked for (None: none), after the names that become paths and lines of
        output are checked: what contradicts itself is refused in one line before anything runs."""
        try:
            check_name("--variant", self.variant)
            if self.run_id is not None:
                check_name("--run-id", self.run_id)
        except BadName as exc:
            raise click.ClickException(str(exc)) from None
        modes = [
            m for m, on in (("record", self.record), ("replay", self.replay), ("record-new", self.record_new)) if on
        ]
        if len(modes) > 1:
            raise click.ClickException(f"--{' and --'.join(modes)} contradict each other: pick one cassette mode")
        mode = modes[0] if modes else None
        if self.attribute_variance and mode is not None:
            raise click.ClickException(
                "--attribute-variance records and replays by itself: give --cassettes DIR (where to keep them) "
                f"without --{mode}"
            )
        if self.attribute_variance and self.k < 2:
            raise click.ClickException("--attribute-variance compares attempts of one task: use -k 2 or more")
        return mode

    def load(self, cassette_mode: str | None) -> tuple[list[Case], Any, RunPlan]:
        """The cases, the agent and what acts inside its tool calls; a bad fault or injection, or a missing
        cassette, fails now, in one line."""
        try:
            cases = load_cases(self.tasks_file)
            agent = load_agent(self.agent_ref)
            plan = plan_from_options(
                faults=load_fault_profile(self.faults_file) if self.faults_file else (),
                injections=load_injections(self.injections_file) if self.injections_file else (),
                cassette_dir=None if self.attribute_variance else self.cassette_dir,
                cassette_mode=cassette_mode,
            )
            for case in cases:
                if plan.is_active(case):
                    plan.check(case)
        except (TaskFileError, AgentLoadError, FaultProfileError, InjectionError, CassetteMiss, CassetteError) as exc:
            raise click.ClickException(str(exc)) from None
        if not self.attribute_variance and (self.cassette_dir is None) != (cassette_mode is None):
            raise click.ClickException("--cassettes DIR goes with one of --record, --replay, --record-new")
        return cases, agent, plan

    def agent_settings(self) -> dict[str, str]:
        """`--setting KEY=VALUE`s, for the agent's ctx.settings."""
        extra: dict[str, str] = {}
        for item in self.settings:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise click.ClickException(f"--setting {item!r} must look like KEY=VALUE")
            extra[key] = value
        return extra

    def flags(self, cassette_mode: str | None, extra: dict[str, str], capture: Any) -> dict[str, Any]:
        """What decides an attempt: a resumed run must not change it (concurrency does not)."""
        return {
            "--agent": self.agent_ref,
            "-k": self.k,
            "--seed": self.seed,
            "--setting": extra,
            "--faults": file_digest(self.faults_file),
            "--injections": file_digest(self.injections_file),
            "--cassettes": None if self.cassette_dir is None else [str(self.cassette_dir), cassette_mode],
            "--capture-content": capture,
            "--attribute-variance": self.attribute_variance or None,
        }

    def environment(self, cassette_mode: str | None) -> dict[str, str]:
        """Recorded on every attempt's root (tracevals.env.*), see the `environments` view."""
        cassettes = None if self.cassette_dir is None else f"{cassette_mode}:{folder_digest(self.cassette_dir)}"
        environment = {
            "tasks_sha256": file_digest(self.tasks_file),
            "faults": file_digest(self.faults_file),
            "injections": file_digest(self.injections_file),
            "cassettes": cassettes,
        }
        return {key: v for key, v in environment.items() if v}


def _begin(o: RunOptions, run_id: str, flags: dict[str, Any], cases: list[Case], console: Console) -> set[AttemptKey]:
    """The attempts of the run already in the lake, once the run keeps its cases there (later commands
    score its attempts against exactly these) and its flags are those it started with."""
    try:
        write_run_cases(o.lake, run_id, o.tasks_file.read_bytes(), str(o.tasks_file))
        check_run_flags(o.lake, run_id, o.variant, flags)
        done = completed_attempts(o.lake, run_id)
    except (RunCasesConflict, LakeError) as exc:
        raise click.ClickException(str(exc)) from None
    if done:
        say(console, f"resuming run {run_id}: {len(done)} attempts already in the lake are skipped")
    drafts = [c.case_id for c in cases if (c.raw.get("review") or {}).get("status") == "draft"]
    if drafts:  # drafted from traffic (tracevals cases extract): their criteria are not yet a person's
        say(
            console,
            f"note: {len(drafts)} of {len(cases)} cases are unreviewed drafts "
            f"(tracevals cases review {o.tasks_file.parent} --accept ID)",
        )
    return done


@dataclass(frozen=True)
class Attempts:
    """What a run launches: every case k times, less what is done."""

    agent: Any
    cases: list[Case]
    k: int
    run_id: str
    variant: str
    seed: int
    concurrency: int
    settings: dict[str, str]
    plan: Any
    environment: dict[str, str]
    done: set[AttemptKey]


def _run_attempts(
    attempts: Attempts, lake: Lake, capture: Any, console: Console, lease: Lease, variance: Path | None = None
) -> None:
    """Run the attempts (the four passes of --attribute-variance into `variance`), each flushed to the lake
    as it finishes; stopped by a signal (`run_control.stoppable`): exit after saying how to resume; else merge
    the run's files."""
    a = attempts
    lake.prepare()
    telemetry = instrument(lake=lake, capture_content=capture)
    started = time.time()
    finished: list[object] = []
    stop = None
    try:
        with stoppable(a.run_id, console, lease.release, lease) as stop:
            if variance is not None:
                from tracevals.cli.shared.variance import run_attribution

                run_attribution(
                    a.agent, a.cases, k=a.k, run_id=a.run_id, variant=a.variant, lake=lake, work=variance, base=a.plan,
                    seed=a.seed, concurrency=a.concurrency, settings=a.settings, done=sorted(a.done),
                    flush=telemetry.force_flush, environment=a.environment, console=console, stop=stop,
                )  # fmt: skip
            else:
                todo = len(a.cases) * a.k - sum(1 for key in a.done if key[0] == a.variant)
                with progress_bar(console) as progress:
                    bar = progress.add_task(a.variant, total=max(0, todo))

                    def on_done(result: object) -> None:
                        finished.append(result)
                        progress.advance(bar)

                    run_cases(
                        a.agent, a.cases, k=a.k, run_id=a.run_id, variant=a.variant, seed=a.seed,
                        concurrency=a.concurrency, settings=a.settings, on_done=on_done, skip=a.done,
                        flush=telemetry.force_flush,  # each attempt in the lake as it finishes
                        plan=a.plan, environment=a.environment, stop=stop,
                    )  # fmt: skip
    finally:
        telemetry.shutdown()  # every finished attempt's spans in the lake
        if stop is None or not stop.requested:
            _compact(lake, started, console)
    if stop is not None and stop.requested:
        in_lake = len(a.done) + len(finished) if variance is None else len(completed_attempts(lake, a.run_id))
        total = len(a.cases) * a.k if variance is None else len(a.cases) * (3 * a.k + 1)
        stopped(stop, a.run_id, in_lake, total, console)


def _print_run(lake: Lake, run_id: str, cases: int, k: int, plan: Any, fmt: str, console: Console) -> None:
    """The run's figures: those of `tracevals report --run RUN_ID`, from the same code."""
    data = report_from_lake(lake, Selection(runs=(run_id,)), None, k=k)
    write_step_reliability(lake, lake_rows(data.reliability, run_id))  # the `step_reliability` view
    summaries = data.summaries
    rows = summary_rows(summaries)
    if fmt == "json":
        doc = {
            "run_id": run_id,
            "lake": str(lake),
            "variants": rows,
            "reliability": reliability_json(data.reliability),
            "attempts": attempt_rows(data.outcomes, data.summaries),
            "replay_misses": plan.misses,
        }
        click.echo(json_text(doc))
        _fail_on_misses(plan, console)
        return
    if fmt == "csv":
        print_rows(list(rows[0]) if rows else ["variant"], [list(r.values()) for r in rows], "csv")
    else:
        columns, table = summary_table(summaries)
        print_rows(columns, table, "table", title=f"run {run_id}: {cases} cases x {k} attempts")
        for title, head, body in reliability_tables(data.reliability):
            print_rows(head, body, "table", title=title)
    if fmt == "table":
        query = f"select * from runs where run_id = {sql_string(run_id)}"
        click.echo(f"lake: {lake}   ({command_line('tracevals', 'sql', '--lake', str(lake), query)})")
    _fail_on_misses(plan, console)


def _compact(lake: Lake, started: float, console: Console) -> None:
    warning = compact_run(lake, started)
    if warning:
        say(console, f"warning: {warning}")


def _fail_on_misses(plan: Any, console: Console) -> None:
    """A replay miss is an infrastructure error (the cassettes are incomplete), not the agent's failure:
    say what was missing and exit 2, after the figures, so CI never counts an incomplete replay as a run."""
    if plan.misses:
        models = sum(m.startswith("no recording of model call") for m in plan.misses)
        kinds = {0: "tool calls", len(plan.misses): "model calls"}.get(models, "tool and model calls")
        say(
            console,
            f"error: {len(plan.misses)} {kinds} had no recording (first: {plan.misses[0]}); the replay is "
            "incomplete: record them with --record-new, or fix the cassettes",
        )
        raise SystemExit(2)
