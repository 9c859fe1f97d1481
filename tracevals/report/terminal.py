"""The summary a terminal shows: one table of the variants and one of the regressions, the same for
`tracevals demo`, `run` and `report` (their CSV and JSON print `summary_rows`, the report's own columns)."""

from __future__ import annotations

from collections.abc import Mapping

from tracevals.report.formatting import interval, num
from tracevals.stats import Comparison, VariantSummary

__all__ = ["SUMMARY_COLUMNS", "regression_table", "summary_table"]

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
