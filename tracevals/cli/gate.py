"""`tracevals gate`: pass or fail a candidate variant against a baseline, for CI.

Exit 0 when every threshold holds (PASS) or nothing failed but there was nothing to compare (NOT
JUDGED: no baseline yet; the floors still applied), 1 when one fails (or the input is unusable: the
message says which). The text output is a few lines a person can act on: which check failed, on which
tasks, by how much, and the command that shows those tasks' failed attempts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from tracevals import env
from tracevals.cli.shared.output import echo_prose, file_option, format_option, messages, phase_bar, print_rows
from tracevals.cli.shared.production import gate_production
from tracevals.cli.shared.reports import Selected, env_options, env_problems, load_report, selection_options
from tracevals.model.json_text import json_text
from tracevals.model.quoting import command_line
from tracevals.stats import CATEGORIES, HAZARD_KINDS, GateResult, GateThresholds, run_gate
from tracevals.stats.release_gate import NOT_JUDGED


def hazard_kinds() -> tuple[str, ...]:
    """The hazards a gate may forbid: the built-in ones and those the evaluators' (plugins') kinds raise."""
    from tracevals.evaluators.registry import finding_kinds

    raised = {k.hazard or k.name for k in finding_kinds().values() if k.severity == "hazard"}
    return (*HAZARD_KINDS, *sorted(raised - set(HAZARD_KINDS)))


if TYPE_CHECKING:
    from tracevals.lake.lake import Lake


def load_thresholds(path: str | None, overrides: dict[str, Any]) -> GateThresholds:
    """Thresholds from a YAML or JSON file (if given), then the command-line options on top."""
    values: dict[str, Any] = {}
    if path is not None:
        values = _read_config(path)
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return GateThresholds.from_mapping(values, source=path or "options", hazards=hazard_kinds())
    except (TypeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc


def _read_config(path: str) -> dict[str, Any]:
    from tracevals.model.documents import DocumentError, read_document

    try:
        doc = read_document(path, "gate config")
    except DocumentError as exc:
        raise click.ClickException(str(exc)) from None
    doc = doc.get("gate", doc) if isinstance(doc, dict) else doc  # allow a `gate:` section in a shared file
    if not isinstance(doc, dict):
        raise click.ClickException(f"{path}: expected a mapping of thresholds, e.g. `max_task_regression: 0.34`")
    return doc


@click.command()
@selection_options
@click.option(
    "--baseline",
    help="The variant to compare against (e.g. main); harness runs. Absent, or without attempts in the "
    "selection: the comparisons are NOT JUDGED and the floors (--min-pass-rate, --forbid ...) still apply.",
)
@click.option("--candidate", help="The variant under review (e.g. pr-42); harness runs.")
@file_option(
    "--config",
    "config_file",
    "YAML or JSON file of thresholds (keys as the options below); options override it.",
    envvar=env.GATE_CONFIG,
    exists=False,
)
@click.option(
    "--min-pass-rate",
    type=click.FloatRange(0, 1),
    help="Floor: the least share of passed attempts (harness: the candidate's; production: the night's "
    "sessions). Applies with or without a baseline.",
)
@click.option("--min-pass-hat-k", type=click.FloatRange(0, 1), help="Minimum candidate pass^k (at --at-k).")
@click.option("--at-k", type=click.IntRange(1), help="k of --min-pass-hat-k. Default: the headline k.")
@click.option("--min-pass-at-1", type=click.FloatRange(0, 1), help="Minimum candidate pass@1.")
@click.option(
    "--max-task-regression", type=click.FloatRange(0, 1), help="Largest allowed drop of one task's pass rate."
)
@click.option(
    "--max-regression", type=click.FloatRange(0, 1), help="Largest allowed drop of pass@1 (paired over tasks)."
)
@click.option(
    "--forbid",
    multiple=True,
    metavar="CATEGORY|HAZARD",
    help=f"Category ({', '.join(CATEGORIES)}) or hazard ({', '.join(HAZARD_KINDS)}, or a plugin's) no "
    "candidate task may have (repeatable). Default: do_not_ship; production: every hazard ('none': no hazard "
    "check).",
)
@click.option(
    "--significant-regression/--ignore-significant-regression",
    "fail_on_significant_regression",
    default=None,
    help="Fail when the sign test finds the candidate significantly worse (default: fail).",
)
@click.option("--max-drop", type=click.FloatRange(0, 1), help="Production: the largest allowed fall of a rate.")
@click.option("--min-rate", type=click.FloatRange(0, 1), help="Production: the lowest allowed rate of the night.")
@click.option(
    "--evaluator", "gate_evaluators", multiple=True, help="Production: gate only these evaluators (repeatable)."
)
@click.option(
    "--min-consistency",
    type=click.FloatRange(0, 1),
    help="Minimum candidate consistency: the share of tasks whose attempts all gave one result.",
)
@env_options
@format_option()
# over 80 lines: its 27 options are its parameters and its docstring is its --help; the body is 30 lines
def gate(
    sel: Selected,
    baseline: str | None,
    candidate: str | None,
    config_file: str | None,
    min_pass_rate: float | None,
    min_pass_hat_k: float | None,
    at_k: int | None,
    min_pass_at_1: float | None,
    max_task_regression: float | None,
    max_regression: float | None,
    forbid: tuple[str, ...],
    fail_on_significant_regression: bool | None,
    max_drop: float | None,
    min_rate: float | None,
    gate_evaluators: tuple[str, ...],
    min_consistency: float | None,
    vary: tuple[str, ...],
    strict_env: bool,
    fmt: str,
) -> None:
    """Pass (exit 0) or fail (exit 1) CANDIDATE against BASELINE on release thresholds.

    Checks the candidate's pass^k, pass@1, the largest per-task regression, the overall regression,
    forbidden release categories or hazards (default: no do_not_ship task) and a significant
    regression (sign test). Prints each failed check with the tasks and numbers behind it.

    With no baseline (day one) the comparisons say NOT JUDGED and the floors still decide: --min-pass-rate,
    --min-pass-at-1, --min-pass-hat-k and --forbid (default: no do_not_ship task).

    On a lake of production traffic (no harness run, or --production): passes or fails the night (the
    last day of --since/--until, default the last 7 days) against the days before it, per evaluator: a
    significant fall (one-sided Fisher exact test at --alpha), --max-drop, --min-rate; and, on any night
    (the first too), its floors: no session with a hazard (--forbid), --min-pass-rate.

    \b
    Examples:
      tracevals gate --lake demo-out/lake --baseline baseline --candidate candidate --max-task-regression 0.5
      tracevals gate --lake lake --run ci-123 --baseline main --candidate pr-42 --config gate.yaml
      tracevals gate --lake lake --baseline main --candidate pr-42 --min-pass-hat-k 0.8 --at-k 3 --format json
      tracevals gate --lake prod-lake --since 8d --until today --max-drop 0.05   # production: last night
      tracevals gate --lake lake --baseline main --candidate pr-42 --min-consistency 0.9 --vary commit --strict-env
      tracevals gate --lake lake --candidate pr-42 --min-pass-rate 0.9            # day one: floors only
    \b
    gate.yaml:
      min_pass_hat_k: 0.8
      at_k: 3
      max_task_regression: 0.34
      max_regression: 0.05
      forbid: [do_not_ship]
      min_consistency: 0.9
      strict_env: true
      vary: [commit, lock]
    """
    overrides = {
        "min_pass_rate": min_pass_rate,
        "min_pass_hat_k": min_pass_hat_k,
        "at_k": at_k,
        "min_pass_at_1": min_pass_at_1,
        "max_task_regression": max_task_regression,
        "max_regression": max_regression,
        "forbid": forbid or None,
        "fail_on_significant_regression": fail_on_significant_regression,
        "min_consistency": min_consistency,
        "strict_env": strict_env or None,
        "vary": vary or None,
    }
    lake, tasks_file = sel.lake, sel.tasks_file
    if sel.is_production():
        if baseline or candidate:
            raise click.ClickException(
                "a production gate judges the night against the days before; --baseline/--candidate are for runs"
            )
        gate_production(sel.production_summary(), lake, max_drop=max_drop, min_rate=min_rate,
                        evaluators=gate_evaluators, significant=fail_on_significant_regression, fmt=fmt,
                        min_pass_rate=min_pass_rate, forbid=forbid)  # fmt: skip
        return
    if not candidate:
        raise click.ClickException("give --candidate (and --baseline to compare with): the variants of the runs")
    thresholds = load_thresholds(config_file, overrides)
    with phase_bar(messages(), "gate") as told:
        data = load_report(sel, baseline, candidate, thresholds.vary, baseline_optional=True, told=told)
    cand = data.summaries[candidate]
    base = data.summaries.get(baseline) if baseline and data.comparison is not None else None
    props = data.reliability.properties.get(candidate) if data.reliability is not None else None
    result = run_gate(base, cand, data.comparison, thresholds, props, env_problems(data))
    if baseline and base is None:  # named, but nothing of it in the selection: say which variants are
        result = GateResult(f"{baseline} (no attempts; variants: {', '.join(data.summaries)})", candidate,
                            result.checks)  # fmt: skip
    _emit(result, lake, data.meta.get("runs") or [], baseline if base is not None else None, tasks_file, fmt,
          base.runs if base is not None else 0, cand)  # fmt: skip


def _emit(
    result: GateResult, lake: Lake, runs_seen: list[str], baseline: str | None, tasks_file: str | None, fmt: str,
    n_base: int, cand: Any,
) -> None:  # fmt: skip
    """Print the verdict in `fmt`; exit 1 when a check failed."""
    hint = _hint(lake, runs_seen, baseline, result.candidate, tasks_file)
    if fmt == "json":
        click.echo(json_text(_json(result, n_base, cand.runs, runs_seen, hint)))
    elif fmt == "csv":  # one row per check, failures first
        checks = _json(result, n_base, cand.runs, runs_seen, hint)["checks"]
        columns = ["check", "passed", "threshold", "value", "tasks", "message", "status"]
        rows = [[c[k] if k != "tasks" else ";".join(c[k] or []) for k in columns] for c in checks]
        print_rows(columns, sorted(rows, key=lambda r: _ORDER[r[-1]]), "csv")
    else:
        echo_prose(_text(result, n_base, cand.runs, cand.n_tasks, runs_seen, hint))
    if not result.passed:
        raise SystemExit(1)


_ORDER = {"fail": 0, NOT_JUDGED: 1, "pass": 2}
_MARK = {"fail": "FAIL", NOT_JUDGED: "n/a ", "pass": "ok  "}
_VERDICT = {"fail": "FAIL", NOT_JUDGED: "NOT JUDGED", "pass": "PASS"}


def _hint(lake: Lake, runs: list[str], baseline: str | None, candidate: str, tasks_file: str | None) -> str:
    """The report command that shows what the gate judged: the same runs, all of them, and the same cases."""
    run = [word for r in runs for word in ("--run", r)]
    tasks = ["--tasks", tasks_file] if tasks_file else []
    pair = ["--baseline", baseline, "--candidate", candidate] if baseline else []
    return command_line("tracevals", "report", "--lake", str(lake), *run, *tasks, *pair, "--out", "gate-report.html")


def _text(result: GateResult, n_base: int, n_cand: int, tasks: int, runs: list[str], hint: str) -> str:
    head = (
        f"{_VERDICT[result.verdict]}: {result.candidate} against {result.baseline} "
        f"(run {', '.join(runs) or '?'}; {tasks} tasks; n = {n_base} vs {n_cand} attempts)"
    )
    lines = [head]
    # Failures first: they are what the reader has to act on; then what could not be judged.
    for check in sorted(result.checks, key=lambda c: _ORDER[c.status]):
        lines.append(f"  {_MARK[check.status]} {check.name}: {check.message}")
    if not result.passed:
        lines.append(f"  see the failed attempts: {hint}")
    return "\n".join(lines)


def _json(result: GateResult, n_base: int, n_cand: int, runs: list[str], hint: str) -> dict[str, Any]:
    return {
        "passed": result.passed,
        "verdict": result.verdict,
        "baseline": result.baseline,
        "candidate": result.candidate,
        "runs": runs,
        "n": {"baseline": n_base, "candidate": n_cand},
        "checks": [
            {
                "check": c.name,
                "status": c.status,
                "passed": c.passed,
                "threshold": c.threshold,
                "value": c.value,
                "tasks": c.tasks,
                "message": c.message,
            }
            for c in result.checks
        ],
        "next": None if result.passed else hint,
    }
