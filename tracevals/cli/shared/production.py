"""`report` and `gate` over production traffic: a lake the collector filled, with no harness run.

`tracevals report` and `tracevals gate` take this path when the lake holds no harness run (or with
`--production`): the sessions that started in `[--since, --until)` (default: the last 7 days), each
evaluator's pass rate per service / agent / day with its Wilson interval, and the night (the last day)
against the days before it. The gate fails a night whose rate fell significantly (one-sided Fisher exact
test at --alpha), fell by more than --max-drop, or lies under --min-rate.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from tracevals.cli.shared.output import echo, echo_prose, lake_errors, print_rows
from tracevals.model.json_text import json_text
from tracevals.model.quoting import command_line

if TYPE_CHECKING:
    from tracevals.lake.lake import Lake

__all__ = ["gate_production", "load_production", "production_mode", "report_production"]


def production_mode(runs: tuple[str, ...], forced: bool, connection: Callable[[], Any]) -> bool:
    """Whether to report production sessions: asked (--production), or the lake holds no harness run and
    none was named. Said on stderr when chosen for the user. `connection`: gives the lake opened with the
    `attempts` view (the report's connection: `Selected.connection`), called only when the lake must be asked."""
    if forced:
        if runs:
            raise click.ClickException("--production reports production sessions; it takes no --run")
        return True
    if runs:
        return False
    from tracevals.queries import LakeError
    from tracevals.scoring.production_data import has_harness_runs

    try:
        con = connection()
    except LakeError as exc:
        raise click.ClickException(str(exc)) from None
    if has_harness_runs(con):
        return False
    click.echo("tracevals: the lake holds no harness run: reporting its production sessions", err=True)
    return True


def load_production(
    lake: Lake,
    since: datetime | None,
    until: datetime | None,
    sample: float | None,
    seed: int,
    z: float,
    alpha: float,
    config_file: str | None = None,
) -> Any:
    """The `ProductionSummary` of a range; every user error one `click.ClickException` line. `config_file`:
    the scoring config `tracevals score --config` takes (the policy traces without a stored score are
    scored against now, as the nightly job would)."""
    from tracevals.queries import LakeError
    from tracevals.queries.selection import SelectionError
    from tracevals.scoring.config import load_config
    from tracevals.scoring.production_data import load_production_data
    from tracevals.stats.production import summarize_production

    with lake_errors(lake, (LakeError, SelectionError, ValueError)):
        config = load_config(config_file) if config_file else None
        data = load_production_data(lake, since, until, sample, seed, config)
    meta = {**data.provenance, "lake": str(lake)}
    return summarize_production(data.trajectories, data.scores, data.facets, z=z, alpha=alpha, meta=meta)


def _rows(summary: Any) -> list[dict[str, Any]]:
    """One summary row per evaluator: its rate over every day, and the night against the days before."""
    out = []
    for e, r in summary.overall.items():
        t = summary.trend(e)
        out.append(
            {
                "evaluator": e,
                "passes": r.passes,
                "n": r.n,
                "rate": r.rate,
                "wilson_low": r.wilson[0],
                "wilson_high": r.wilson[1],
                "night": t.night.isoformat() if t else None,
                "night_rate": t.night_rate.rate if t else None,
                "before_rate": t.before.rate if t else None,
                "drop": t.drop if t else None,
                "p_value": t.p_value if t else None,
                "fell_significantly": t.significant if t else False,
            }
        )
    return out


def report_production(summary: Any, out_file: str, kind: str, fmt: str) -> None:
    """Write the production report to `out_file` and print its summary."""
    from tracevals.report.production import write_production

    try:
        path = write_production(out_file, summary, kind)
    except OSError as exc:
        raise click.ClickException(f"cannot write {out_file}: {exc.strerror or exc}") from exc
    rows = _rows(summary)
    for note in summary.meta.get("notes", ()):  # odd span times: said, whatever the format
        if str(note).startswith("data quality:"):
            echo(f"note: {note}", err=True)
    if fmt == "json":
        doc = {"out": str(path), "format": kind, "source": "production", "days": [str(d) for d in summary.days],
               "sessions": summary.sessions, "evaluators": rows,
               "data_quality": summary.meta.get("data_quality")}  # fmt: skip
        click.echo(json_text(doc))
        return
    if fmt == "csv":
        print_rows(list(rows[0]) if rows else ["evaluator"], [list(r.values()) for r in rows], "csv")
        return
    table = [
        [
            r["evaluator"],
            f"{r['passes']}/{r['n']} [{r['wilson_low']:.3f}, {r['wilson_high']:.3f}]",
            "—" if r["night_rate"] is None else f"{r['night_rate']:.3f}",
            "—" if r["before_rate"] is None else f"{r['before_rate']:.3f}",
            "—" if r["p_value"] is None else f"{r['p_value']:.3g}" + (" FELL" if r["fell_significantly"] else ""),
        ]
        for r in rows
    ]
    days = f"{summary.days[0]} – {summary.days[-1]}" if summary.days else "no day"
    title = f"production sessions {days}: {summary.sessions} sessions, {summary.failed_sessions} failed a verdict"
    print_rows(["evaluator", "all days [Wilson]", "the night", "the days before", "p (fell)"], table, "table",
               title=title)  # fmt: skip
    click.echo(f"{kind} report: {path}")


def gate_production(
    summary: Any,
    lake: Lake,
    *,
    max_drop: float | None,
    min_rate: float | None,
    evaluators: tuple[str, ...],
    significant: bool | None,
    fmt: str,
    min_pass_rate: float | None = None,
    forbid: tuple[str, ...] = (),
) -> None:
    """Pass (exit 0) or fail (exit 1) the night of a production lake; NOT JUDGED (exit 0) when nothing
    failed and there was nothing to compare (the first night: its floors still applied)."""
    from tracevals.stats.production_gate import ALL_HAZARDS, ProductionThresholds, run_production_gate

    chosen = (ALL_HAZARDS,) if not forbid else () if forbid == ("none",) else forbid
    try:
        thresholds = ProductionThresholds(
            fail_on_significant_fall=True if significant is None else significant,
            max_drop=max_drop,
            min_rate=min_rate,
            evaluators=evaluators,
            min_pass_rate=min_pass_rate,
            forbid=chosen,
        )
        result = run_production_gate(summary, thresholds)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    night = summary.days[-1] if summary.days else None
    since = summary.days[0] if summary.days else None
    until = night + timedelta(days=1) if night else None  # [since, until): the night included
    hint = command_line(
        "tracevals", "report", "--lake", str(lake), "--production", "--since", str(since), "--until", str(until),
        "--out", "night.html",
    )  # fmt: skip
    checks = [
        {"check": c.name, "status": c.status, "passed": c.passed, "threshold": c.threshold, "value": c.value,
         "message": c.message, "sessions": c.tasks}
        for c in result.checks
    ]  # fmt: skip
    order = {"fail": 0, "not_judged": 1, "pass": 2}
    quality = summary.meta.get("data_quality")  # odd span times: said, never the basis of the verdict
    if fmt == "json":
        doc = {"passed": result.passed, "verdict": result.verdict, "source": "production", "night": str(night),
               "baseline": result.baseline, "sessions": summary.sessions, "checks": checks,
               "next": None if result.passed else hint, "data_quality": quality}  # fmt: skip
        click.echo(json_text(doc))
    elif fmt == "csv":
        columns = ["check", "passed", "threshold", "value", "message", "status"]
        rows = sorted(([c[k] for k in columns] for c in checks), key=lambda r: order[r[-1]])
        print_rows(columns, rows, "csv")
    else:
        verdict = {"fail": "FAIL", "not_judged": "NOT JUDGED", "pass": "PASS"}[result.verdict]
        marks = {"fail": "FAIL", "not_judged": "n/a ", "pass": "ok  "}
        lines = [f"{verdict}: {result.candidate} against {result.baseline} ({summary.sessions} sessions)"]
        for check in sorted(result.checks, key=lambda c: order[c.status]):
            lines.append(f"  {marks[check.status]} {check.name}: {check.message}")
        if not result.passed:
            lines.append(f"  see the failed sessions: {hint}")
        lines += [f"  note: {n}" for n in summary.meta.get("notes", ()) if str(n).startswith("data quality:")]
        echo_prose("\n".join(lines))
    if not result.passed:
        raise SystemExit(1)
