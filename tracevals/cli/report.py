"""`tracevals report`: the reliability report of a lake selection, as HTML, Markdown, CSV or JSON.

The selection options and `load_report` (`cli/shared/reports.py`) are shared with `tracevals gate`, so a
gate verdict and the report a person opens to understand it always count the same attempts.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tracevals.cli.shared.output import echo, echo_prose, file_option, format_option, messages, phase_bar, print_rows
from tracevals.cli.shared.production import report_production
from tracevals.cli.shared.reports import Selected, env_options, env_problems, load_report, selection_options
from tracevals.model.json_text import json_text

if TYPE_CHECKING:
    pass


@click.command()
@selection_options
@click.option("--baseline", help="Variant to compare against (with --candidate).")
@click.option("--candidate", help="Variant under review (with --baseline).")
@file_option("--out", "out_file", "Report file; the suffix picks the format: .html .md .csv .json", required=True,
             exists=False)  # fmt: skip
@env_options
@format_option()
def report(
    sel: Selected,
    baseline: str | None,
    candidate: str | None,
    out_file: str,
    vary: tuple[str, ...],
    strict_env: bool,
    fmt: str,
) -> None:
    """Write the reliability report of a lake selection to --out (.html .md .csv .json).

    Reads the trajectories and the stored scores; attempts with no stored score are scored now with
    the evaluators and the task file (nothing is written to the lake). pass^k next to pass@1 with
    Wilson intervals, the worst task, regressions first, release categories, fault outcomes, a
    failure gallery (HTML), latency and cost. Prints a short summary (--format for CSV or JSON).

    \b
    Examples:
      tracevals report --lake demo-out/lake --out report.html
      tracevals report --lake demo-out/lake --run demo-20261129T130112-s0 --out report.md
      tracevals report --lake lake --since yesterday --until today --sample 0.1 --seed 7 --out nightly.json
      tracevals report --lake lake --baseline main --candidate pr-42 --out pr.csv --format json
      tracevals report --lake prod-lake --since 7d --out week.html        # production, no harness run
      tracevals report --lake lake --baseline main --candidate pr-42 --vary model --strict-env --out pr.html
    """
    from tracevals.report import report_format, summary_rows, write_report
    from tracevals.report.reliability_view import reliability_json
    from tracevals.report.terminal import environment_lines, regression_table, reliability_tables, summary_table

    try:
        kind = report_format(out_file)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    if sel.is_production():
        if baseline or candidate or sel.tasks_file:
            raise click.ClickException("--baseline, --candidate and --tasks are for harness runs, not production")
        report_production(sel.production_summary(), out_file, kind, fmt)
        return
    with phase_bar(messages(), "report") as told:
        data = load_report(sel, baseline, candidate, vary, told=told)
        told(f"writing {Path(out_file).name}", 0, None)
        try:
            path = write_report(out_file, data)
        except OSError as exc:
            raise click.ClickException(f"cannot write {out_file}: {exc.strerror or exc}") from exc
    rows = summary_rows(data.summaries)
    cmp = data.comparison
    if fmt == "json":
        doc = {
            "out": str(path),
            "format": kind,
            "runs": data.meta.get("runs"),
            "variants": rows,
            "comparison": cmp.statement if cmp else None,
            "regressions": [d.task_id for d in cmp.regressions] if cmp else [],
            "reliability": reliability_json(data.reliability),
        }
        click.echo(json_text(doc))
        _strict(data, strict_env)
        return
    if fmt == "csv":
        print_rows(list(rows[0]), [list(r.values()) for r in rows], "csv")
        _strict(data, strict_env)
        return
    columns, table = summary_table(data.summaries)
    print_rows(columns, table, "table", title=f"runs {', '.join(data.meta.get('runs') or [])}")
    if cmp is not None and cmp.regressions:
        head, regress = regression_table(cmp)
        print_rows(head, regress, "table", title="Regressions (worst first)")
    for title, head, body in reliability_tables(data.reliability):
        print_rows(head, body, "table", title=title)
    if cmp is not None:
        echo_prose(f"{cmp.baseline} → {cmp.candidate}: {cmp.statement}")
    for line in environment_lines(data.reliability):
        echo_prose(line)
    echo(f"{kind} report: {Path(path)}")
    _strict(data, strict_env)


def _strict(data: Any, strict_env: bool) -> None:
    if not strict_env:
        return
    problems = env_problems(data)
    if problems:
        for problem in problems:
            echo(f"error: --strict-env: {problem}", err=True)
        raise SystemExit(1)
