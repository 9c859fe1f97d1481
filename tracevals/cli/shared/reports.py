"""A report's data from a lake selection, for every command that shows or judges one: the selection
options (`--lake`, `--run`, `--since` ...), the environment options (`--vary`, `--strict-env`),
`load_report` (`report`, `gate`) and `report_from_lake` (`run`, `demo`, variance attribution). One path, so
a gate verdict and the report a person opens to understand it count the same attempts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tracevals import env
from tracevals.cli.shared.output import echo, file_option, lake_errors, lake_option
from tracevals.cli.shared.times import time_range_options
from tracevals.model.case import Case
from tracevals.model.progress import Told, quiet

if TYPE_CHECKING:
    from tracevals.lake.lake import Lake

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Selected:
    """What the selection options say: which attempts of which lake, and how to count them."""

    lake: Lake
    runs: tuple[str, ...]
    since: datetime | None
    until: datetime | None
    sample: float | None
    sample_seed: int
    tasks_file: str | None
    scoring_config: str | None
    k: int | None
    z: float
    production: bool
    alpha: float

    @functools.cached_property
    def connection(self) -> Any:
        """The lake opened as a report reads it (`open_report_lake`), once: whether the lake holds a harness
        run is asked of the connection the report then reads (each open lists and binds the lake's files).
        Raises `LakeError`."""
        from tracevals.scoring.lake_data import open_report_lake

        return open_report_lake(self.lake)

    def is_production(self) -> bool:
        """Whether to report production sessions (asked, or the lake holds no harness run)."""
        from tracevals.cli.shared.production import production_mode

        return production_mode(self.runs, self.production, lambda: self.connection)

    def production_summary(self) -> Any:
        """The `ProductionSummary` of the selected range."""
        from tracevals.cli.shared.production import load_production

        return load_production(self.lake, self.since, self.until, self.sample, self.sample_seed, self.z,
                               self.alpha, self.scoring_config)  # fmt: skip


_SELECTED = tuple(f.name for f in fields(Selected))  # the options (`connection` is no field)


def selection_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--lake, --run, --since, --until, --sample, --seed, --tasks, -k, --z: which attempts, and how to count.
    The command gets them as one `Selected`, its first argument."""

    @functools.wraps(func)
    def command(**given: Any) -> Any:
        return func(Selected(**{name: given.pop(name) for name in _SELECTED}), **given)

    options = [
        lake_option("The lake directory (holds spans/ and scores/). Env: TRACEVALS_LAKE."),
        click.option(
            "--run",
            "runs",
            multiple=True,
            envvar=env.RUN,
            help="Run id (repeatable). Default: the latest run, or every run in --since/--until.",
        ),
        time_range_options(),
        click.option(
            "--sample",
            type=click.FloatRange(0.0, 1.0, min_open=True),
            envvar=env.SAMPLE,
            help="Keep this fraction of sessions (a stable hash: whole sessions only). Default: all, or the "
            "sample the stored scores record.",
        ),
        click.option(
            "--seed",
            "sample_seed",
            type=int,
            default=0,
            show_default=True,
            envvar=env.SEED,
            help="Seed of the sample (the same sessions as `tracevals score --sample F --seed N`).",
        ),
        file_option(
            "--tasks",
            "tasks_file",
            "Task file (JSONL) to score the attempts against. Default: the cases each run kept in the lake.",
            envvar=env.TASKS,
            exists=False,
        ),
        file_option(
            "--scoring-config",
            "scoring_config",
            "The scoring config `tracevals score --config` takes (policy, evaluators, prices): attempts scored now "
            "are scored with it, and its prices price every attempt. Env: TRACEVALS_SCORING_CONFIG.",
            envvar=env.SCORING_CONFIG,
            exists=False,
        ),
        click.option("-k", "k", type=click.IntRange(1), help="Headline k of pass^k. Default: the smallest per-task n."),
        click.option(
            "--z",
            type=click.FloatRange(0.0, min_open=True),
            default=1.96,
            show_default=True,
            help="z of every Wilson interval (1.96 = 95%, 2.576 = 99%).",
        ),
        click.option(
            "--production",
            is_flag=True,
            help="Report production sessions (no harness run), per service / agent / day, the night against "
            "the days before. Default when the lake holds no harness run. Range default: the last 7 days.",
        ),
        click.option(
            "--alpha",
            type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
            default=0.05,
            show_default=True,
            help="Production: the one-sided significance of the night's fall (Fisher exact test).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def env_options(func: F) -> F:
    """--vary, --strict-env: what is under test, and whether anything else differing is an error."""
    func = click.option(
        "--strict-env",
        is_flag=True,
        help="Fail (exit 1) when baseline and candidate differ in anything --vary does not name, or a "
        "variant's attempts ran in more than one environment (model, system prompt, tools, commit, ...).",
    )(func)
    func = click.option(
        "--vary",
        multiple=True,
        metavar="KEY",
        help="What is under test, expected to differ between baseline and candidate: an environment key or "
        "its start (model, system, tools, temperature, commit, lock, faults ...). Repeatable.",
    )(func)
    return func


def load_report(
    sel: Selected,
    baseline: str | None = None,
    candidate: str | None = None,
    vary: tuple[str, ...] = (),
    baseline_optional: bool = False,
    told: Told = quiet,
) -> Any:
    """The `ReportData` of a selection; every user error becomes one `click.ClickException` line.
    `baseline_optional` (the gate): only a candidate is needed; a baseline with no attempts in the
    selection leaves nothing to compare. `sel.scoring_config`: the scoring config `tracevals score` takes,
    for the attempts scored now and their prices. `told`: the phase under way (`phase_bar`)."""
    from tracevals.lake.run_cases import RunCasesConflict, digest
    from tracevals.model.tasks import TaskFileError, cases_from_bytes
    from tracevals.queries import LakeError
    from tracevals.queries.selection import Selection, SelectionError

    if (baseline is None) != (candidate is None) and not (baseline_optional and candidate is not None):
        raise click.ClickException("give both --baseline and --candidate, or neither")
    if baseline is not None and baseline == candidate:
        raise click.ClickException(f"--baseline and --candidate are both {baseline!r}; compare two variants")
    with lake_errors(sel.lake, (LakeError, SelectionError, TaskFileError, RunCasesConflict, ValueError)):
        cases, sha = None, None
        if sel.tasks_file:  # else: the cases each run kept in the lake
            data = _read_tasks(sel.tasks_file)
            cases, sha = {c.case_id: c for c in cases_from_bytes(data, sel.tasks_file)}, digest(data)
        config = _config(sel.scoring_config)
        selection = Selection(
            runs=sel.runs,
            variants=(baseline, candidate) if baseline and candidate and not baseline_optional else (),
            since=sel.since,
            until=sel.until,
            fraction=sel.sample,
            seed=sel.sample_seed,
        )
        meta = {"tasks_file": sel.tasks_file} if sel.tasks_file else {}
        return report_from_lake(
            sel.lake,
            selection,
            cases,
            con=sel.connection,
            k=sel.k,
            z=sel.z,
            baseline=baseline,
            candidate=candidate,
            meta=meta,
            tasks_sha256=sha,
            vary=vary,
            baseline_optional=baseline_optional,
            config=config,
            told=told,
        )


def _config(path: str | None) -> Any:
    """The scoring config of `--scoring-config` (the one `tracevals score --config` reads), or None."""
    if path is None:
        return None
    from tracevals.scoring.config import load_config

    return load_config(path)  # a ConfigError is a ValueError: one line, from the caller's handler


def _read_tasks(path: str) -> bytes:
    from tracevals.model.tasks import TaskFileError

    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TaskFileError(path, None, f"cannot read the task file: {exc.strerror or exc}") from None


def report_from_lake(
    lake: Lake,
    selection: Any,
    cases: Mapping[str, Case] | None,
    *,
    k: int | None = None,
    z: float | None = None,
    baseline: str | None = None,
    candidate: str | None = None,
    meta: Mapping[str, Any] | None = None,
    tasks_sha256: str | None = None,
    vary: tuple[str, ...] = (),
    baseline_optional: bool = False,
    config: Any = None,
    con: Any = None,
    told: Told = quiet,
) -> Any:
    """Every figure of a report over a lake selection: `scoring.load_lake_data`, then `report.build_report`.
    `cases` None: the cases the runs kept; what that leaves unscored is said on stderr, one line each.
    `config`: a scoring config, as `tracevals score --config` takes it (its policy and prices). `con`: the lake
    opened by `open_report_lake` (default: opened here). `told`: the phase under way."""
    from tracevals.scoring.lake_data import load_lake_data

    data = load_lake_data(lake, selection, cases, con=con, tasks_sha256=tasks_sha256, config=config, told=told)
    return report_from_data(
        lake, data, k=k, z=z, baseline=baseline, candidate=candidate, meta=meta, vary=vary,
        baseline_optional=baseline_optional, told=told,
    )  # fmt: skip


def report_from_data(
    lake: Lake,
    data: Any,
    *,
    k: int | None = None,
    z: float | None = None,
    baseline: str | None = None,
    candidate: str | None = None,
    meta: Mapping[str, Any] | None = None,
    vary: tuple[str, ...] = (),
    baseline_optional: bool = False,
    told: Told = quiet,
) -> Any:
    """`report.build_report` over what `scoring.load_lake_data` read (a `LakeData`): the one way a report
    is made from a lake, for `report`, `gate` and `tracevals ui` alike."""
    from tracevals.report import build_report
    from tracevals.stats import Z95

    for note in data.provenance.get("notes", []):
        echo(f"tracevals: {note}", err=True)
    built = build_report(
        data.trajectories,
        data.scores,
        data.cases,
        {**data.provenance, "lake": str(lake), **dict(meta or {})},
        k=k,
        z=Z95 if z is None else z,
        baseline=baseline,
        candidate=candidate,
        prices=data.prices,
        environments=data.environments,
        vary=vary,
        baseline_optional=baseline_optional,
        told=told,
    )
    for note in built.reliability.notes if built.reliability is not None else []:
        echo(f"tracevals: {note}", err=True)  # e.g. a case's equivalence checker that did not load
    return built


def env_problems(data: Any) -> list[str] | None:
    """What --strict-env refuses in a report's data; None when no two variants were compared."""
    rel = data.reliability
    if rel is None or rel.env_comparison is None:
        if rel is not None and len(rel.environments) == 1:  # one variant: it must still be one environment
            only = next(iter(rel.environments.values()))
            return [f"{only.variant}'s attempts ran with more than one {k}" for k in only.mixed]
        return None
    return rel.env_comparison.problems()
