"""The CSV report: one summary row per variant, the shape of a spreadsheet people already keep."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tracevals.report.formatting import VARIANT_FIGURES, PathArg, atomic_write, clean, variant_figures
from tracevals.stats import CATEGORIES, VariantSummary

__all__ = ["CSV_COLUMNS", "summary_rows", "write_csv"]

Summaries = Mapping[str, VariantSummary]

#: Columns of :func:`summary_rows` and :func:`write_csv`. ``wilson_low``/``wilson_high`` bound the pooled
#: rate ``passes / runs`` (at ``z``); ``pass_hat_k``/``pass_at_k`` are taken at the headline ``k`` (capped
#: by the smallest per-task n, ``k_cap``); ``tasks_<category>`` count tasks per release category;
#: ``worst_task_tied``: the other tasks at the worst task's rate (``;``-separated; of tied tasks the
#: most severe release category is the worst).
CSV_COLUMNS: tuple[str, ...] = (
    "variant",
    "runs",
    "tasks",
    "passes",
    "pass_at_1",
    "pooled_rate",
    "wilson_low",
    "wilson_high",
    "z",
    "k",
    "k_requested",
    "k_cap",
    "pass_hat_k",
    "pass_at_k",
    "worst_task",
    "worst_task_n",
    "worst_task_c",
    "worst_task_rate",
    "worst_task_tied",
    "first_success_rate",
    "first_success_wilson_low",
    "first_success_wilson_high",
    *VARIANT_FIGURES,
    *(f"tasks_{c}" for c in CATEGORIES),
)


def summary_rows(summaries: Summaries) -> list[dict[str, Any]]:
    """One flat dict per variant with the keys of :data:`CSV_COLUMNS`; NaN becomes None."""
    rows = []
    for s in summaries.values():
        counts = s.category_counts()
        row: dict[str, Any] = {
            "variant": s.variant,
            "runs": s.runs,
            "tasks": s.n_tasks,
            "passes": s.passes,
            "pass_at_1": s.pass_at_1,
            "pooled_rate": s.pooled_rate,
            "wilson_low": s.wilson[0],
            "wilson_high": s.wilson[1],
            "z": s.z,
            "k": s.k,
            "k_requested": s.k_requested,
            "k_cap": s.k_cap,
            "pass_hat_k": s.pass_hat_k_headline,
            "pass_at_k": s.pass_at_k_headline,
            "worst_task": s.worst_task.task_id,
            "worst_task_n": s.worst_task.n,
            "worst_task_c": s.worst_task.c,
            "worst_task_rate": s.worst_task.rate,
            "worst_task_tied": ";".join(s.worst_tied),  # the other tasks at the same rate, worst first
            "first_success_rate": s.first_success_rate,
            "first_success_wilson_low": s.first_success_wilson[0],
            "first_success_wilson_high": s.first_success_wilson[1],
            **variant_figures(s),
            **{f"tasks_{c}": counts.get(c, 0) for c in CATEGORIES},
        }
        rows.append({key: clean(row[key]) for key in CSV_COLUMNS})
    return rows


def write_csv(path: PathArg, summaries: Summaries) -> Path:
    """Write one summary row per variant (columns :data:`CSV_COLUMNS`); returns the path."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    writer.writeheader()
    # repr-exact floats: a CSV is for machines; rounding belongs to whoever displays it.
    writer.writerows(summary_rows(summaries))
    return atomic_write(path, buf.getvalue())
