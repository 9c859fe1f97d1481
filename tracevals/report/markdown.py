"""The Markdown report: the same figures as the JSON, readable, regressions first, every rate with its n."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracevals.report.formatting import file_writer, interval, num, signed
from tracevals.report.formatting import markdown_cell as _esc
from tracevals.report.reliability import Reliability
from tracevals.report.reliability_view import (
    PROPERTY_COLUMNS,
    STEP_COLUMNS,
    environment_rows,
    properties_rows,
    step_rows,
)
from tracevals.stats import CATEGORY_LABELS, Comparison, FaultTally, TaskDelta, VariantSummary, confidence_level

__all__ = ["render_markdown", "write_markdown"]

Summaries = Mapping[str, VariantSummary]


def render_markdown(
    summaries: Summaries,
    comparison: Comparison | None = None,
    meta: Mapping[str, Any] | None = None,
    faults: Sequence[FaultTally] = (),
    reliability: Reliability | None = None,
) -> str:
    """A human report: run metadata, summary per variant, regressions first, release categories, fault
    outcomes, then per-task results.

    Every rate is printed with its counts (c/n) or its sample size, because a rate without n is not
    evidence.
    """
    out = ["# tracevals reliability report", ""]
    if meta:
        out += _provenance_section(meta, summaries)
    out += _summary_section(summaries)
    if reliability is not None:
        out += _reliability_section(reliability)
    if comparison is not None:
        out += _comparison_section(comparison)
    out += _categories_section(summaries)
    if faults:
        out += _faults_section(faults)
    for s in summaries.values():
        out += _tasks_section(s)
    return "\n".join(out).rstrip("\n") + "\n"


write_markdown = file_writer(render_markdown, str)


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(_esc(c) for c in row) + " |" for row in rows]
    return [*out, ""]


def _reliability_section(rel: Reliability) -> list[str]:
    out = ["## Availability, correctness, consistency", ""]
    out += _table(PROPERTY_COLUMNS, properties_rows(rel))
    steps = step_rows(rel)
    if steps:
        out += ["## Steps that fail most", "", *_table(STEP_COLUMNS, steps)]
    if rel.environments:
        columns, rows = environment_rows(rel)
        out += ["## Environment", "", *_table(columns, rows)]
        cmp = rel.env_comparison
        if cmp is not None:
            out += [f"{_esc(cmp.baseline)} -> {_esc(cmp.candidate)} differ in:", ""]
            out += [f"- {_esc(d.describe())}{' (under test)' if d.declared else ''}" for d in cmp.differences] or [
                "- nothing: the same environment"
            ]
            out.append("")
    return out


def _summary_section(summaries: Summaries) -> list[str]:
    out = ["## Summary", ""]
    if not summaries:
        return [*out, "No outcomes.", ""]
    level = _level(next(iter(summaries.values())).z)
    out += [
        f"| variant | runs | tasks | pass@1 (task mean) | final success [{level} Wilson] | pass^k | pass@k "
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
            f"{num(s.pass_at_1)} ({s.n_tasks} tasks)",
            f"{num(s.final_success_rate)} ({s.passes}/{s.runs}) {interval(s.wilson)}",
            f"{num(s.pass_hat_k_headline)} (k={s.k}{cap}; min n={s.k_cap})",
            f"{num(s.pass_at_k_headline)} (k={s.k})",
            f"`{_esc(w.task_id)}` {num(w.rate)} ({w.c}/{w.n}) {interval(w.wilson)}",
            f"{num(s.first_success_rate)} ({s.first_passes}/{s.runs}) → "
            f"{num(s.final_success_rate)} ({s.passes}/{s.runs})",
            _handoffs(s),
            f"{num(s.avg_retries, 2)} (n={s.runs})",
            f"{s.errors}/{s.runs}",
            f"{num(s.p50_latency_ms, 0)} / {num(s.p95_latency_ms, 0)} (n={s.latency_n})",
            _cost(s),
            str(s.tokens),
        ]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    for s in summaries.values():
        hat = ", ".join(f"k={j}: {num(v)}" for j, v in s.pass_hat_k.items())
        out.append(f"- {_esc(s.variant)} pass^k over {s.n_tasks} tasks (min n={s.k_cap}): {hat}")
    return [*out, ""]


def _comparison_section(cmp: Comparison) -> list[str]:
    out = [
        f"## Regressions first: {_esc(cmp.baseline)} → {_esc(cmp.candidate)}",
        "",
        f"**{_esc(cmp.statement)}.**",
        "",
        f"pass@1 delta {signed(cmp.pass_at_1_delta)}, pass^{cmp.k} delta {signed(cmp.pass_hat_k_delta)} "
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
        f"| `{_esc(d.task_id)}` | {d.baseline_c}/{d.baseline_n} | {num(d.baseline_rate)} "
        f"| {d.candidate_c}/{d.candidate_n} | {num(d.candidate_rate)} | {signed(d.delta)} | {flag} |"
    )


def _tasks_section(s: VariantSummary) -> list[str]:
    out = [
        f"## Tasks: {_esc(s.variant)} (worst first)",
        "",
        f"| task | c/n | rate | {_level(s.z)} Wilson |",
        "|---|---|---|---|",
    ]
    # Worst first, like the regressions: the tail is what users find.
    for t in sorted(s.tasks, key=lambda t: (t.rate, t.task_id)):
        out.append(f"| `{_esc(t.task_id)}` | {t.c}/{t.n} | {num(t.rate)} | {interval(t.wilson)} |")
    return [*out, ""]


def _categories_section(summaries: Summaries) -> list[str]:
    out = ["## Release categories", ""]
    for s in summaries.values():
        counts = s.category_counts()
        listed = ", ".join(f"{CATEGORY_LABELS[c]} {n}" for c, n in counts.items())
        out += [
            f"### {_esc(s.variant)}: {listed} ({s.n_tasks} tasks)",
            "",
            "| task | category | why |",
            "|---|---|---|",
        ]
        # The riskiest first: do not ship, then needs confirmation, canary, automatic.
        for c in sorted(s.categories, key=lambda c: (-_RANK[c.category], c.task_id)):
            out.append(f"| `{_esc(c.task_id)}` | {c.label} | {_esc('; '.join(c.reasons))} |")
        out.append("")
    return out


def _faults_section(faults: Sequence[FaultTally]) -> list[str]:
    out = [
        "## Fault outcomes",
        "",
        "| fault | variant | attempts | recovered | escalated | failed (silently) | unknown |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in faults:
        out.append(
            f"| {_esc(f.fault)} | {_esc(f.variant)} | {f.n} | {f.recovered}/{f.n} {interval(f.recovered_wilson)} "
            f"| {f.escalated}/{f.n} | {f.failed}/{f.n} ({f.silent}) | {f.unknown}/{f.n} |"
        )
    return [*out, ""]


def _handoffs(s: VariantSummary) -> str:
    text = f"{s.handoffs}/{s.runs}"
    if s.handoffs_correct or s.handoffs_wrong or s.handoffs_missed:
        text += f" (correct {s.handoffs_correct}, wrong {s.handoffs_wrong}, missed {s.handoffs_missed})"
    return text


def _level(z: float) -> str:
    return f"{confidence_level(z):.0%}"


# meta keys the provenance section lays out itself (the variants' commits and dates are in its table)
_SHOWN_META = frozenset(
    {
        *("selected_by", "runs", "cases_from", "tasks_file", "seed", "k", "z", "notes", "variants", "cases"),
        *("sample_fraction", "sample_seed", "sample_source", "sessions_eligible", "sessions_selected"),
        *("scores_stored", "scores_computed", "commits", "lock_hashes", "date_from", "date_to"),
    }
)


def _provenance_section(meta: Mapping[str, Any], summaries: Summaries) -> list[str]:
    """Where the figures come from, once: the selection, then one row per variant (runs, commit, lock,
    dates). A figure that was not set (no --k given) says what was used instead, never `None`."""
    ks = sorted({s.k for s in summaries.values()})
    given = meta.get("k")
    k_text = f"{given}" if given is not None else "the smallest per-task n"
    k_text += f" (used: {', '.join(map(str, ks))})" if ks else ""
    sample = f"{float(meta.get('sample_fraction', 1.0)):.0%} of sessions"
    if meta.get("sessions_eligible") is not None:
        sample += f" ({meta.get('sessions_selected')} of {meta.get('sessions_eligible')})"
    rows = [
        ("selected by", meta.get("selected_by")),
        ("runs", meta.get("runs")),
        ("cases", meta.get("cases_from")),
        ("tasks file", meta.get("tasks_file")),
        ("seed", meta.get("seed")),
        ("headline k", k_text),
        ("intervals", f"Wilson, z = {meta.get('z')}" if meta.get("z") is not None else None),
        ("sample", sample),
        ("scores", f"{meta.get('scores_stored', 0)} read from the lake, {meta.get('scores_computed', 0)} computed now"
         if "scores_stored" in meta else None),
        ("notes", meta.get("notes")),
    ]  # fmt: skip
    rows += [(str(k), v) for k, v in meta.items() if k not in _SHOWN_META]  # a caller's own provenance
    out = ["| selection | |", "|---|---|"]
    out += [f"| {k} | {_esc(_plain(v))} |" for k, v in rows if v not in (None, "", [], ())]
    out.append("")
    variants: Mapping[str, Any] = meta.get("variants") or {}
    if variants:
        out += ["| variant | runs | commits | lock hashes | dates |", "|---|---|---|---|---|"]
        for name, info in variants.items():
            dates = f"{info.get('date_from') or '?'} – {info.get('date_to') or '?'}"
            cells = [name, _plain(info.get("runs") or []), _plain(info.get("commits") or ["unknown"]),
                     _plain(info.get("lock_hashes") or ["unknown"]), dates]  # fmt: skip
            out.append("| " + " | ".join(_esc(c) for c in cells) + " |")
        out.append("")
    return out


def _plain(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_plain(v)}" for k, v in value.items())
    return str(value)


_RANK = {name: i for i, name in enumerate(CATEGORY_LABELS)}


def _cost(s: VariantSummary) -> str:
    """The average cost over the attempts whose cost is known; unknown ones counted, never priced at 0."""
    unknown = s.runs - s.cost_known
    return f"{num(s.avg_cost, 4)} (n={s.cost_known}" + (f"; {unknown} unknown)" if unknown else ")")
