"""Report writers (CSV, JSON, Markdown) over :mod:`tracevals.stats` summaries.

The writers only lay out figures; every number comes from ``stats.py`` so the three formats can never
disagree. Missing values (NaN, e.g. no latency recorded) are written as empty CSV cells, JSON ``null``
and ``n/a`` in Markdown, never as the invalid JSON token ``NaN``. Files are written to a temporary name
and renamed, so a reader never sees half a report.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tracevals.stats import Comparison, TaskDelta, TaskResult, VariantSummary

__all__ = [
    "CSV_COLUMNS",
    "render_markdown",
    "summary_rows",
    "to_json_dict",
    "write_csv",
    "write_json",
    "write_markdown",
]

JSON_SCHEMA = "tracevals.report/1"

#: Columns of :func:`summary_rows` and :func:`write_csv`. ``wilson_low``/``wilson_high`` bound the pooled
#: rate ``passes / runs``; ``pass_hat_k``/``pass_at_k`` are taken at the headline ``k`` (capped by the
#: smallest per-task n, ``k_cap``).
CSV_COLUMNS: tuple[str, ...] = (
    "variant",
    "runs",
    "tasks",
    "passes",
    "pass_at_1",
    "pooled_rate",
    "wilson_low",
    "wilson_high",
    "k",
    "k_requested",
    "k_cap",
    "pass_hat_k",
    "pass_at_k",
    "worst_task",
    "worst_task_n",
    "worst_task_c",
    "worst_task_rate",
    "first_success_rate",
    "final_success_rate",
    "avg_retries",
    "handoffs",
    "errors",
    "latency_n",
    "p50_latency_ms",
    "p95_latency_ms",
    "avg_cost",
    "tokens",
)

Summaries = Mapping[str, VariantSummary]
PathArg = str | os.PathLike[str]


def summary_rows(summaries: Summaries) -> list[dict[str, Any]]:
    """One flat dict per variant with the keys of :data:`CSV_COLUMNS`; NaN becomes None."""
    rows = []
    for s in summaries.values():
        row: dict[str, Any] = {
            "variant": s.variant,
            "runs": s.runs,
            "tasks": s.n_tasks,
            "passes": s.passes,
            "pass_at_1": s.pass_at_1,
            "pooled_rate": s.pooled_rate,
            "wilson_low": s.wilson[0],
            "wilson_high": s.wilson[1],
            "k": s.k,
            "k_requested": s.k_requested,
            "k_cap": s.k_cap,
            "pass_hat_k": s.pass_hat_k_headline,
            "pass_at_k": s.pass_at_k_headline,
            "worst_task": s.worst_task.task_id,
            "worst_task_n": s.worst_task.n,
            "worst_task_c": s.worst_task.c,
            "worst_task_rate": s.worst_task.rate,
            "first_success_rate": s.first_success_rate,
            "final_success_rate": s.final_success_rate,
            "avg_retries": s.avg_retries,
            "handoffs": s.handoffs,
            "errors": s.errors,
            "latency_n": s.latency_n,
            "p50_latency_ms": s.p50_latency_ms,
            "p95_latency_ms": s.p95_latency_ms,
            "avg_cost": s.avg_cost,
            "tokens": s.tokens,
        }
        rows.append({key: _clean(row[key]) for key in CSV_COLUMNS})
    return rows


def write_csv(path: PathArg, summaries: Summaries) -> Path:
    """Write one summary row per variant (columns :data:`CSV_COLUMNS`); returns the path."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    writer.writeheader()
    # repr-exact floats: a CSV is for machines; rounding belongs to whoever displays it.
    writer.writerows(summary_rows(summaries))
    return _atomic_write(path, buf.getvalue())


def to_json_dict(
    summaries: Summaries, comparison: Comparison | None = None, meta: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON report as plain data: ``schema``, ``meta``, ``variants`` (by name), ``comparison``."""
    doc = {
        "schema": JSON_SCHEMA,
        "meta": dict(meta or {}),
        "variants": {name: _variant_json(s) for name, s in summaries.items()},
        "comparison": _comparison_json(comparison) if comparison is not None else None,
    }
    cleaned: dict[str, Any] = _clean(doc)
    return cleaned


def write_json(
    path: PathArg,
    summaries: Summaries,
    comparison: Comparison | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Path:
    """Write :func:`to_json_dict` as indented, strict JSON (no NaN); returns the path."""
    text = json.dumps(to_json_dict(summaries, comparison, meta), indent=2, allow_nan=False, default=str)
    return _atomic_write(path, text + "\n")


def write_markdown(
    path: PathArg,
    summaries: Summaries,
    comparison: Comparison | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Path:
    """Write :func:`render_markdown`; returns the path."""
    return _atomic_write(path, render_markdown(summaries, comparison, meta))


def render_markdown(
    summaries: Summaries, comparison: Comparison | None = None, meta: Mapping[str, Any] | None = None
) -> str:
    """A human report: run metadata, summary per variant, regressions first, then per-task results.

    Every rate is printed with its counts (c/n) or its sample size, because a rate without n is not
    evidence.
    """
    out = ["# tracevals reliability report", ""]
    if meta:
        out += ["| run | |", "|---|---|"]
        out += [f"| {_esc(str(key))} | {_esc(str(value))} |" for key, value in meta.items()]
        out.append("")
    out += _summary_section(summaries)
    if comparison is not None:
        out += _comparison_section(comparison)
    for s in summaries.values():
        out += _tasks_section(s)
    return "\n".join(out).rstrip("\n") + "\n"


def _summary_section(summaries: Summaries) -> list[str]:
    out = ["## Summary", ""]
    if not summaries:
        return [*out, "No outcomes.", ""]
    out += [
        "| variant | runs | tasks | pass@1 (task mean) | final success [95% Wilson] | pass^k | pass@k "
        "| worst task | first-pass → final | handoffs | retries/run | errors | latency p50 / p95 ms "
        "| cost/run | tokens |",
        "|" + "---|" * 15,
    ]
    for s in summaries.values():
        w = s.worst_task
        cap = f", capped from {s.k_requested}" if s.k_capped else ""
        cells = [
            f"**{_esc(s.variant)}**",
            str(s.runs),
            str(s.n_tasks),
            f"{_f(s.pass_at_1)} ({s.n_tasks} tasks)",
            f"{_f(s.final_success_rate)} ({s.passes}/{s.runs}) {_ci(s.wilson)}",
            f"{_f(s.pass_hat_k_headline)} (k={s.k}{cap}; min n={s.k_cap})",
            f"{_f(s.pass_at_k_headline)} (k={s.k})",
            f"`{_esc(w.task_id)}` {_f(w.rate)} ({w.c}/{w.n}) {_ci(w.wilson)}",
            f"{_f(s.first_success_rate)} ({s.first_passes}/{s.runs}) → "
            f"{_f(s.final_success_rate)} ({s.passes}/{s.runs})",
            f"{s.handoffs}/{s.runs}",
            f"{_f(s.avg_retries, 2)} (n={s.runs})",
            f"{s.errors}/{s.runs}",
            f"{_f(s.p50_latency_ms, 0)} / {_f(s.p95_latency_ms, 0)} (n={s.latency_n})",
            f"{_f(s.avg_cost, 4)} (n={s.runs})",
            str(s.tokens),
        ]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    for s in summaries.values():
        hat = ", ".join(f"k={j}: {_f(v)}" for j, v in s.pass_hat_k.items())
        out.append(f"- {_esc(s.variant)} pass^k over {s.n_tasks} tasks (min n={s.k_cap}): {hat}")
    return [*out, ""]


def _comparison_section(cmp: Comparison) -> list[str]:
    out = [
        f"## Regressions first: {_esc(cmp.baseline)} → {_esc(cmp.candidate)}",
        "",
        f"**{cmp.statement}.**",
        "",
        f"pass@1 delta {_signed(cmp.pass_at_1_delta)}, pass^{cmp.k} delta {_signed(cmp.pass_hat_k_delta)} "
        f"(paired means over the {cmp.common_tasks} tasks both ran).",
        "",
    ]
    if cmp.deltas:
        out += [
            f"| task | {_esc(cmp.baseline)} c/n | rate | {_esc(cmp.candidate)} c/n | rate | delta | |",
            "|---|---|---|---|---|---|---|",
        ]
        out += [_delta_row(d) for d in cmp.deltas]
        out.append("")
    else:
        out += ["No task ran under both variants.", ""]
    for label, name, only in (
        ("Only in baseline", cmp.baseline, cmp.only_in_baseline),
        ("Only in candidate", cmp.candidate, cmp.only_in_candidate),
    ):
        if only:
            listed = ", ".join(f"`{_esc(t.task_id)}` ({t.c}/{t.n})" for t in only)
            out += [f"{label} ({_esc(name)}, {len(only)} not compared): {listed}", ""]
    return out


def _delta_row(d: TaskDelta) -> str:
    flag = "**regression**" if d.regression else ("improved" if d.delta > 0 else "")
    return (
        f"| `{_esc(d.task_id)}` | {d.baseline_c}/{d.baseline_n} | {_f(d.baseline_rate)} "
        f"| {d.candidate_c}/{d.candidate_n} | {_f(d.candidate_rate)} | {_signed(d.delta)} | {flag} |"
    )


def _tasks_section(s: VariantSummary) -> list[str]:
    out = [
        f"## Tasks: {_esc(s.variant)} (worst first)",
        "",
        "| task | c/n | rate | 95% Wilson |",
        "|---|---|---|---|",
    ]
    # Worst first, like the regressions: the tail is what users find.
    for t in sorted(s.tasks, key=lambda t: (t.rate, t.task_id)):
        out.append(f"| `{_esc(t.task_id)}` | {t.c}/{t.n} | {_f(t.rate)} | {_ci(t.wilson)} |")
    return [*out, ""]


def _task_json(t: TaskResult) -> dict[str, Any]:
    return {"task_id": t.task_id, "n": t.n, "c": t.c, "rate": t.rate, "wilson": list(t.wilson)}


def _variant_json(s: VariantSummary) -> dict[str, Any]:
    return {
        "variant": s.variant,
        "n": s.runs,
        "runs": s.runs,
        "passes": s.passes,
        "n_tasks": s.n_tasks,
        "pass_at_1": s.pass_at_1,
        "pooled_rate": s.pooled_rate,
        "wilson": list(s.wilson),
        "k": s.k,
        "k_requested": s.k_requested,
        "k_cap": s.k_cap,
        "pass_hat_k": {str(k): v for k, v in s.pass_hat_k.items()},
        "pass_at_k": {str(k): v for k, v in s.pass_at_k.items()},
        "worst_task": _task_json(s.worst_task),
        "tasks": [_task_json(t) for t in s.tasks],
        "first_passes": s.first_passes,
        "first_success_rate": s.first_success_rate,
        "final_success_rate": s.final_success_rate,
        "avg_retries": s.avg_retries,
        "handoffs": s.handoffs,
        "errors": s.errors,
        "latency_n": s.latency_n,
        "p50_latency_ms": s.p50_latency_ms,
        "p95_latency_ms": s.p95_latency_ms,
        "avg_cost": s.avg_cost,
        "tokens": s.tokens,
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


def _clean(value: Any) -> Any:
    """NaN/inf → None, recursively, so JSON stays strict and CSV cells stay empty."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _f(x: float, digits: int = 3) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.{digits}f}"


def _signed(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:+.3f}"


def _ci(ci: tuple[float, float]) -> str:
    return f"[{_f(ci[0])}, {_f(ci[1])}]"


def _esc(text: str) -> str:
    # A task id or meta value with a pipe or newline would otherwise break the table layout.
    return text.replace("|", "\\|").replace("\n", " ")


def _atomic_write(path: PathArg, text: str) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
