"""The summary a terminal shows: one table of the variants and one of the regressions, the same for
`tracevals demo`, `run` and `report` (their CSV and JSON print `summary_rows`, the report's own columns)."""

from __future__ import annotations

from collections.abc import Mapping

from tracevals.report.formatting import interval, num
from tracevals.report.reliability import Reliability
from tracevals.report.reliability_view import (
    PROPERTY_COLUMNS,
    STEP_COLUMNS,
    environment_rows,
    properties_rows,
    step_rows,
)
from tracevals.stats import Comparison, VariantSummary

__all__ = ["SUMMARY_COLUMNS", "environment_lines", "regression_table", "reliability_tables", "summary_table"]

#: Seven short columns: with variant and task names of ~12 characters the table is ~110 wide. The rest
#: (first-pass success, hand-offs, latency, cost ...) is in the report files.
SUMMARY_COLUMNS = (
    "variant",
    "attempts",
    "pass@1",
    "final [Wilson]",
    "pass^k",
    "worst task",
    "do not ship",
)


def summary_table(summaries: Mapping[str, VariantSummary]) -> tuple[list[str], list[list[str]]]:
    """(columns, rows) of the variants' summary, as text cells."""
    rows = []
    for s in summaries.values():
        w = s.worst_task
        tied = f" +{len(s.worst_tied)} tied" if s.worst_tied else ""
        rows.append(
            [
                s.variant,
                f"{s.runs}",
                num(s.pass_at_1),
                f"{s.passes}/{s.runs} {interval(s.wilson)}",
                f"{num(s.pass_hat_k_headline)} (k={s.k})",
                f"{w.task_id} {w.c}/{w.n}{tied}",
                f"{s.category_counts().get('do_not_ship', 0)}/{s.n_tasks} tasks",
            ]
        )
    return list(SUMMARY_COLUMNS), rows


def regression_table(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """(columns, rows) of the tasks whose rate dropped, worst first."""
    rows = [
        [d.task_id, f"{d.baseline_c}/{d.baseline_n}", f"{d.candidate_c}/{d.candidate_n}", f"{d.delta:+.2f}"]
        for d in comparison.regressions
    ]
    return ["task", comparison.baseline, comparison.candidate, "delta"], rows


def reliability_tables(rel: Reliability | None) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, columns, rows) of the three properties, the steps that fail most and the environment."""
    if rel is None or not rel.properties:
        return []
    out = [("Availability, correctness, consistency", list(PROPERTY_COLUMNS), properties_rows(rel))]
    steps = step_rows(rel, 5)
    if steps:
        out.append(("Steps that fail most", list(STEP_COLUMNS), steps))
    if rel.environments:
        columns, rows = environment_rows(rel)
        out.append(("Environment", columns, rows))
    return out


def environment_lines(rel: Reliability | None) -> list[str]:
    """What differs between the compared variants, one line each, and what --strict-env would refuse."""
    cmp = None if rel is None else rel.env_comparison
    if cmp is None:
        return []
    if not cmp.differences:
        return [f"environment: {cmp.baseline} and {cmp.candidate} ran in the same environment"]
    lines = [
        f"environment: {cmp.baseline} -> {cmp.candidate} differ in {d.describe()}"
        + (" (under test)" if d.declared else "")
        for d in cmp.differences
    ]
    return lines
