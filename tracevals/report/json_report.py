"""The JSON report: every figure as plain data, strict JSON (missing values are ``null``, never NaN)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tracevals.model.json_text import json_text as strict_json
from tracevals.report.formatting import PathArg, atomic_write, clean, file_writer, variant_figures
from tracevals.stats import (
    Comparison,
    FaultTally,
    Outcome,
    TaskResult,
    VariantSummary,
    confidence_level,
    pass_hat_k,
)

__all__ = ["JSON_SCHEMA", "attempt_rows", "to_json_dict", "write_json", "write_json_doc"]

JSON_SCHEMA = "tracevals.report/1"
Summaries = Mapping[str, VariantSummary]


def to_json_dict(
    summaries: Summaries,
    comparison: Comparison | None = None,
    meta: Mapping[str, Any] | None = None,
    faults: Sequence[FaultTally] = (),
    reliability: Mapping[str, Any] | None = None,
    outcomes: Sequence[Outcome] = (),
) -> dict[str, Any]:
    """The JSON report as plain data: ``schema``, ``meta``, ``variants`` (by name), ``comparison``,
    ``fault_outcomes``, ``reliability`` (the three properties, per-step rates, environments), ``attempts``
    (every attempt's verdict, hazards, warnings and its task's category: `attempt_rows`)."""
    doc = {
        "schema": JSON_SCHEMA,
        "meta": dict(meta or {}),
        "variants": {name: _variant_json(s) for name, s in summaries.items()},
        "comparison": _comparison_json(comparison) if comparison is not None else None,
        "fault_outcomes": [_fault_json(f) for f in faults],
        "reliability": reliability,
        "attempts": attempt_rows(outcomes, summaries),
    }
    cleaned: dict[str, Any] = clean(doc)
    return cleaned


def json_text(doc: Mapping[str, Any]) -> str:
    """A JSON report document (:func:`to_json_dict`) as indented, strict JSON (no NaN: `model.json_text`)."""
    return strict_json(doc, indent=2) + "\n"


write_json = file_writer(to_json_dict, json_text)


def write_json_doc(path: PathArg, doc: Mapping[str, Any]) -> Path:
    """Write a JSON report document made already (:func:`to_json_dict`); returns the path."""
    return atomic_write(path, json_text(doc))


def attempt_rows(outcomes: Sequence[Outcome], summaries: Summaries) -> list[dict[str, Any]]:
    """One row per attempt, as every surface states it: passed, the hazards and warnings its findings
    raised, the findings that failed it ("evaluator: kind"), and its task's release category."""
    category = {(s.variant, c.task_id): c.category for s in summaries.values() for c in s.categories}
    return [
        {
            "variant": o.variant,
            "task_id": o.task_id,
            "attempt": o.attempt,
            "trace_id": o.trace_id,
            "passed": o.passed,
            "error": o.error,
            "hazards": sorted({h.kind for h in o.hazards}),
            "warnings": sorted({c.kind for c in o.cautions}),
            "failed_by": sorted({f"{f.evaluator}: {f.kind}" for f in o.findings if f.fails}),
            "category": category.get((o.variant, o.task_id)),
            "cost": o.cost,
        }
        for o in sorted(outcomes, key=lambda o: (o.variant, o.task_id, o.attempt))
    ]


def _task_json(t: TaskResult, k: int | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"task_id": t.task_id, "n": t.n, "c": t.c, "rate": t.rate, "wilson": list(t.wilson)}
    if k is not None:
        row["pass_hat_k"] = pass_hat_k(t.c, t.n, k)
    return row


def _variant_json(s: VariantSummary) -> dict[str, Any]:
    categories = {c.task_id: c for c in s.categories}
    tasks = []
    for t in s.tasks:
        row = _task_json(t, s.k)
        cat = categories.get(t.task_id)
        if cat is not None:
            row.update(category=cat.category, category_reasons=list(cat.reasons), hazards=dict(cat.hazard_attempts))
        tasks.append(row)
    return {
        "variant": s.variant,
        "n": s.runs,
        "runs": s.runs,
        "passes": s.passes,
        "n_tasks": s.n_tasks,
        "pass_at_1": s.pass_at_1,
        "pooled_rate": s.pooled_rate,
        "wilson": list(s.wilson),
        "z": s.z,
        "confidence": confidence_level(s.z),
        "k": s.k,
        "k_requested": s.k_requested,
        "k_cap": s.k_cap,
        "pass_hat_k": {str(k): v for k, v in s.pass_hat_k.items()},
        "pass_at_k": {str(k): v for k, v in s.pass_at_k.items()},
        "worst_task": _task_json(s.worst_task, s.k),
        "worst_task_tied": list(s.worst_tied),
        "tasks": tasks,
        "first_passes": s.first_passes,
        "first_success_rate": s.first_success_rate,
        "first_success_wilson": list(s.first_success_wilson),
        **variant_figures(s),
        "categories": s.category_counts(),
        "hazard_attempts": dict(s.hazard_attempts),
        "cost_known": s.cost_known,
    }


def _comparison_json(cmp: Comparison) -> dict[str, Any]:
    return {
        "baseline": cmp.baseline,
        "candidate": cmp.candidate,
        "deltas": [
            {
                "task_id": d.task_id,
                "baseline": {"n": d.baseline_n, "c": d.baseline_c, "rate": d.baseline_rate},
                "candidate": {"n": d.candidate_n, "c": d.candidate_c, "rate": d.candidate_rate},
                "delta": d.delta,
                "regression": d.regression,
            }
            for d in cmp.deltas
        ],
        "only_in_baseline": [_task_json(t) for t in cmp.only_in_baseline],
        "only_in_candidate": [_task_json(t) for t in cmp.only_in_candidate],
        "improved": cmp.improved,
        "regressed": cmp.regressed,
        "unchanged": cmp.unchanged,
        "test": "exact two-sided sign test over tasks whose rate changed",
        "p_value": cmp.p_value,
        "alpha": cmp.alpha,
        "significant": cmp.significant,
        "statement": cmp.statement,
        "common_tasks": cmp.common_tasks,
        "pass_at_1_delta": cmp.pass_at_1_delta,
        "k": cmp.k,
        "pass_hat_k_delta": cmp.pass_hat_k_delta,
    }


def _fault_json(f: FaultTally) -> dict[str, Any]:
    return {
        "variant": f.variant,
        "fault": f.fault,
        "n": f.n,
        "recovered": f.recovered,
        "escalated": f.escalated,
        "failed": f.failed,
        "failed_silently": f.silent,
        "unknown": f.unknown,
        "recovered_wilson": list(f.recovered_wilson),
    }
