"""The HTML report: one self-contained file (inline CSS and SVG, no script, no network) that opens offline.

The provenance (per variant: runs, commit, lock hash, dates; the sample, the intervals, where the
scores came from) is stated once, at the top; every figure and table sits in a ``<figure>`` whose
caption states its sample size. A Content-Security-Policy forbids any fetch, so a report that renders
at all renders everything it has. Failures are grouped by kind, each group closed (``<details>``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracevals.report.data import ReportData
from tracevals.report.formatting import PathArg, atomic_write, interval, num, signed
from tracevals.report.formatting import html_text as escape
from tracevals.report.html_failures import failure_gallery, failure_tables
from tracevals.report.html_parts import STYLE, details, page_header, table
from tracevals.report.reliability_view import reliability_html
from tracevals.report.svg import IntervalPoint, interval_chart, line_chart, stacked_bars, strip_chart
from tracevals.stats import CATEGORIES, CATEGORY_LABELS, VariantSummary, confidence_level

__all__ = ["render_html", "write_html"]

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_FAULT_PARTS = ("recovered", "escalated", "failed, admitted", "failed silently", "unknown")
_FAULT_COLORS = ("#009E73", "#0072B2", "#E69F00", "#B00020", "#999999")


def write_html(path: PathArg, data: ReportData) -> Path:
    """Write :func:`render_html`; returns the path."""
    return atomic_write(path, render_html(data))


def render_html(data: ReportData) -> str:
    """The whole report as one HTML document."""
    body = [
        _header(data),
        _summary(data),
        reliability_html(data.reliability, lambda name, content, size: _figure(data, name, content, size)),
        _pass_hat_k(data),
        _regressions(data),
        _worst(data),
        _categories(data),
        _faults(data),
        _distributions(data),
        _failures(data),
        failure_gallery(data, _caption(data, f"n = {data.failures_total} failed attempts of {len(data.outcomes)}")),
    ]
    title = f"tracevals report — {', '.join(data.meta.get('runs') or []) or 'selection'}"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>" + "".join(body) + "</body></html>\n"
    )


def _caption(data: ReportData, sample_size: str, variants: Sequence[str] | None = None) -> str:
    """A figure's sample size; its provenance is the header's, once per variant."""
    return f'<figcaption class="size"><b>{escape(sample_size)}</b></figcaption>'


def _provenance(variant: str | None, info: dict[str, Any]) -> list[str]:
    commits = _short_list(
        [str(c)[:12] + ("-dirty" if str(c).endswith("-dirty") else "") for c in info.get("commits") or ["unknown"]]
    )
    locks = _short_list([str(x) for x in info.get("lock_hashes") or ["unknown"]])
    dates = f"{info.get('date_from') or '?'} – {info.get('date_to') or '?'}"
    runs = _short_list([str(r) for r in info.get("runs") or []], 3) or "—"
    return [variant or "all", runs, commits, locks, dates]


def _sample_text(meta: dict[str, Any]) -> str:
    text = f"{float(meta.get('sample_fraction', 1.0)):.0%} of sessions"
    if meta.get("sessions_eligible") is not None:
        text += f" ({meta.get('sessions_selected')} of {meta.get('sessions_eligible')})"
    source = meta.get("sample_source")
    if source and source != "none":
        text += f", seed {meta.get('sample_seed', 0)}, from {source}"
    return text


def _short_list(items: Sequence[str], limit: int = 2) -> str:
    return ", ".join(items[:limit]) + (f" +{len(items) - limit} more" if len(items) > limit else "")


def _figure(data: ReportData, name: str, content: str, sample_size: str, variants: Sequence[str] | None = None) -> str:
    return f'<figure data-figure="{escape(name)}">{content}{_caption(data, sample_size, variants)}</figure>'


def _header(data: ReportData) -> str:
    meta = data.meta
    level = confidence_level(float(meta.get("z") or 1.96))
    rows = [
        ("selected by", str(meta.get("selected_by") or "—")),
        ("dates", f"{meta.get('date_from') or '?'} – {meta.get('date_to') or '?'}"),
        ("sample", _sample_text(meta)),
        ("intervals", f"Wilson, {level:.0%} (z = {float(meta.get('z') or 1.96):g})"),
        (
            "scores",
            f"{meta.get('scores_stored', '?')} read from the lake, {meta.get('scores_computed', 0)} computed now",
        ),
        ("cases", str(meta.get("cases_from") or meta.get("tasks_file") or "—")),
        ("lake", str(meta.get("lake") or "—")),
    ]
    per: dict[str, Any] = meta.get("variants") or {}
    chosen = [v for v in data.summaries if v in per]
    provenance = [_provenance(v, per[v]) for v in chosen] if chosen else [_provenance(None, meta)]
    variants = table(["variant", "runs", "commit", "lock hash", "dates"], provenance, table_id="provenance-variants")
    return page_header("tracevals reliability report", rows, _SECTIONS, extra=variants)


_SECTIONS = (
    ("summary", "Summary"), ("pass-hat-k", "pass^k"), ("regressions", "Regressions"), ("worst-task", "Worst task"),
    ("categories", "Release categories"), ("faults", "Fault outcomes"), ("distributions", "Latency & cost"),
    ("failures", "Failures"), ("gallery", "Failure gallery"),
)  # fmt: skip


def _summary(data: ReportData) -> str:
    head = [
        "variant", "attempts", "tasks", "pass@1", "final success", "first-pass success", "pass^k", "pass@k",
        "worst task", "do not ship",
    ]  # fmt: skip
    rows = [_summary_row(s) for s in data.summaries.values()]
    total = sum(s.runs for s in data.summaries.values())
    more_head = ["variant", "retries / attempt", "hand-offs", "errors", "latency p50 / p95 ms", "tokens",
                 "cost / attempt", "release categories"]  # fmt: skip
    more = [_details_row(s) for s in data.summaries.values()]
    content = table(head, rows, table_id="summary-table") + table(more_head, more, table_id="details-table")
    return (
        f'<section id="summary"><h2>Summary</h2>{_figure(data, "summary", content, f"n = {total} attempts")}</section>'
    )


def _summary_row(s: VariantSummary) -> list[str]:
    cap = f", capped from {s.k_requested}" if s.k_capped else ""
    w = s.worst_task
    tied = f" +{len(s.worst_tied)} tied" if s.worst_tied else ""
    return [
        s.variant,
        str(s.runs),
        str(s.n_tasks),
        num(s.pass_at_1),
        f"{num(s.final_success_rate)} ({s.passes}/{s.runs}) {interval(s.wilson)}",
        f"{num(s.first_success_rate)} ({s.first_passes}/{s.runs}) {interval(s.first_success_wilson)}",
        f"{num(s.pass_hat_k_headline)} (k={s.k}{cap})",
        f"{num(s.pass_at_k_headline)} (k={s.k})",
        f"{w.task_id} {w.c}/{w.n}{tied}",
        f"{s.category_counts().get('do_not_ship', 0)}/{s.n_tasks}",
    ]


def _details_row(s: VariantSummary) -> list[str]:
    counts = s.category_counts()
    return [
        s.variant,
        f"{num(s.avg_retries, 2)}",
        f"{s.handoffs}/{s.runs} (correct {s.handoffs_correct}, wrong {s.handoffs_wrong}, missed {s.handoffs_missed})",
        f"{s.errors}/{s.runs}",
        f"{num(s.p50_latency_ms, 0)} / {num(s.p95_latency_ms, 0)} (n={s.latency_n})",
        str(s.tokens),
        f"{num(s.avg_cost, 6)} (total {num(s.total_cost, 4)}"
        + (f"; {s.runs - s.cost_known} of {s.runs} unknown)" if s.cost_known < s.runs else ")"),
        ", ".join(f"{CATEGORY_LABELS[c]} {counts[c]}" for c in CATEGORIES if c in counts),
    ]


def _pass_hat_k(data: ReportData) -> str:
    solid = {name: s.pass_hat_k for name, s in data.summaries.items()}
    dashed = {name: s.pass_at_k for name, s in data.summaries.items()}
    chart = line_chart(
        solid, dashed, title="pass^k against k", x_label="k (attempts that must all pass)", y_label="rate",
        dashed_label="pass@k",
    )  # fmt: skip
    caps = ", ".join(f"{s.variant}: k ≤ {s.k_cap}" for s in data.summaries.values())
    sizes = "; ".join(f"{s.variant} n = {s.runs} attempts over {s.n_tasks} tasks" for s in data.summaries.values())
    note = (
        f"<p>Solid: pass^k, the chance that k attempts of a task all pass, averaged over tasks; dashed: pass@k, "
        f"the chance that at least one does. k is capped by the smallest per-task n ({escape(caps)}).</p>"
    )
    return (
        f'<section id="pass-hat-k"><h2>pass^k against k</h2>{note}{_figure(data, "pass-hat-k", chart, sizes)}</section>'
    )


def _regressions(data: ReportData) -> str:
    cmp = data.comparison
    if cmp is None:
        s = next(iter(data.summaries.values()))
        rows = [
            (t.task_id, [IntervalPoint(0, t.rate, *t.wilson, f"{t.task_id}: {t.c}/{t.n}")])
            for t in sorted(s.tasks, key=lambda t: (t.rate, t.task_id))
        ]
        chart = interval_chart(rows, [s.variant], title="per-task pass rate with Wilson interval")
        fig = _figure(data, "task-rates", chart, f"n = {s.runs} attempts over {s.n_tasks} tasks", [s.variant])
        return f'<section id="regressions"><h2>Per-task rates (worst first)</h2>{fig}</section>'
    pair = [cmp.baseline, cmp.candidate]
    base, cand = data.summaries[cmp.baseline], data.summaries[cmp.candidate]
    rows = []
    for d in cmp.deltas:
        b, c = base.task(d.task_id), cand.task(d.task_id)
        assert b is not None and c is not None  # a delta exists only for tasks both ran
        rows.append((d.task_id, [
            IntervalPoint(0, b.rate, *b.wilson, f"{cmp.baseline} {d.task_id}: {b.c}/{b.n}"),
            IntervalPoint(1, c.rate, *c.wilson, f"{cmp.candidate} {d.task_id}: {c.c}/{c.n}"),
        ]))  # fmt: skip
    chart = interval_chart(rows, pair, title="per-task pass rate with Wilson interval, regressions first")
    head = ["task", f"{cmp.baseline} c/n", "rate", f"{cmp.candidate} c/n", "rate", "delta", "category change"]
    table_rows = []
    for d in cmp.deltas:
        bc, cc = base.category(d.task_id), cand.category(d.task_id)
        change = f"{bc.label if bc else '?'} → {cc.label if cc else '?'}"
        base_cells = [f"{d.baseline_c}/{d.baseline_n}", num(d.baseline_rate)]
        cand_cells = [f"{d.candidate_c}/{d.candidate_n}", num(d.candidate_rate)]
        table_rows.append([d.task_id, *base_cells, *cand_cells, signed(d.delta), change])
    classes = ["regression" if d.regression else ("improved" if d.delta > 0 else "") for d in cmp.deltas]
    sizes = f"n = {base.runs} vs {cand.runs} attempts, {cmp.common_tasks} tasks in both"
    only = ""
    for label, tasks in (
        ("only in " + cmp.baseline, cmp.only_in_baseline),
        ("only in " + cmp.candidate, cmp.only_in_candidate),
    ):
        if tasks:
            only += (
                f"<p>{escape(label)} (not compared): {escape(', '.join(f'{t.task_id} {t.c}/{t.n}' for t in tasks))}</p>"
            )
    return (
        f'<section id="regressions"><h2>Regressions first: {escape(cmp.baseline)} → {escape(cmp.candidate)}</h2>'
        f'<p class="statement">{escape(cmp.statement)}.</p><p>pass@1 delta {signed(cmp.pass_at_1_delta)}, '
        f"pass^{cmp.k} delta {signed(cmp.pass_hat_k_delta)} (paired means over the {cmp.common_tasks} tasks both ran)."
        f"</p>{_figure(data, 'task-rates', chart, sizes, pair)}"
        f"{_figure(data, 'deltas', table(head, table_rows, table_id='deltas', row_classes=classes), sizes, pair)}"
        f"{only}</section>"
    )


def _worst(data: ReportData) -> str:
    cards = []
    for s in data.summaries.values():
        w = s.worst_task
        cat = s.category(w.task_id)
        why = f" — {cat.label}: {'; '.join(cat.reasons)}" if cat else ""
        tied = ""
        if s.worst_tied:
            others = ", ".join(f"{t} ({c.label})" if (c := s.category(t)) else t for t in s.worst_tied)
            tied = f"; tied at {w.c}/{w.n} (shown first: the most severe release category): {others}"
        cards.append(
            f'<p class="worst" data-variant="{escape(s.variant)}"><b>{escape(s.variant)}</b>: '
            f'<a href="#task-{escape(w.task_id)}">{escape(w.task_id)}</a> passed {w.c}/{w.n} = {num(w.rate)} '
            f"{interval(w.wilson)}{escape(why)}{escape(tied)}</p>"
        )
    sizes = "; ".join(f"{s.variant} n = {s.worst_task.n} attempts of its worst task" for s in data.summaries.values())
    return f'<section id="worst-task"><h2>Worst task</h2>{_figure(data, "worst-task", "".join(cards), sizes)}</section>'


def _categories(data: ReportData) -> str:
    rank = {c: i for i, c in enumerate(CATEGORIES)}
    figures = []
    for s in data.summaries.values():
        rows = [
            [c.task_id, c.label, "; ".join(c.reasons)]
            for c in sorted(s.categories, key=lambda c: (-rank[c.category], c.task_id))
        ]
        classes = [f"cat-{c.category}" for c in sorted(s.categories, key=lambda c: (-rank[c.category], c.task_id))]
        counts = s.category_counts()
        line = ", ".join(f"{CATEGORY_LABELS[c]} {counts[c]}" for c in reversed(CATEGORIES) if c in counts)
        worst = [c.task_id for c in s.categories if c.category == CATEGORIES[-1]]
        named = f" — {CATEGORY_LABELS[CATEGORIES[-1]]}: {', '.join(worst)}" if worst else ""
        summary = f'{escape(s.variant)} <span class="count">— {escape(line)}{escape(named)}</span>'
        rows_table = table(["task", "category", "why"], rows, row_classes=classes)
        content = details(summary, rows_table, data={"variant": s.variant})
        figures.append(
            _figure(
                data, f"categories-{s.variant}", content, f"n = {s.runs} attempts over {s.n_tasks} tasks", [s.variant]
            )
        )
    rule = (
        "<p>Do not ship: any attempt with a silent failure, a duplicate side effect, an unauthorised call or an "
        "endless loop, or a task that passes less than half its attempts. Needs confirmation: the task writes, "
        "sends, pays or deletes, or its case expects a hand-off. Automatic: every attempt passed. Canary: the rest."
        "</p>"
    )
    return f'<section id="categories"><h2>Release categories</h2>{rule}{"".join(figures)}</section>'


def _faults(data: ReportData) -> str:
    if not data.faults:
        return '<section id="faults"><h2>Fault outcomes</h2><p>No injected fault fired in this selection.</p></section>'
    rows = [
        (f"{f.fault} · {f.variant}", [f.recovered, f.escalated, f.failed - f.silent, f.silent, f.unknown])
        for f in data.faults
    ]
    chart = stacked_bars(rows, _FAULT_PARTS, _FAULT_COLORS, title="what became of each injected fault")
    head = ["fault", "variant", "attempts", "recovered", "escalated", "failed", "of which silently", "unknown"]
    table_rows = [
        [f.fault, f.variant, str(f.n), f"{f.recovered}/{f.n} {interval(f.recovered_wilson)}",
         f"{f.escalated}/{f.n}", f"{f.failed}/{f.n}", str(f.silent), str(f.unknown)]
        for f in data.faults
    ]  # fmt: skip
    n = sum(f.n for f in data.faults)
    content = chart + table(head, table_rows, table_id="fault-table")
    figure = _figure(data, "faults", content, f"n = {n} attempts that met an injected fault")
    return f'<section id="faults"><h2>Fault outcomes</h2>{figure}</section>'


def _distributions(data: ReportData) -> str:
    latency: dict[str, list[float]] = {v: [] for v in data.summaries}
    cost: dict[str, list[float]] = {v: [] for v in data.summaries}
    for o in data.outcomes:
        latency[o.variant].append(o.latency_ms)
        if o.cost is not None:  # an unknown cost (a model without a price) is no point on the axis
            cost[o.variant].append(o.cost)
    lat_n = "; ".join(f"{s.variant} n = {s.latency_n}" for s in data.summaries.values())
    cost_n = "; ".join(
        f"{s.variant} n = {s.cost_known}" + (f" ({s.runs - s.cost_known} unknown)" if s.cost_known < s.runs else "")
        for s in data.summaries.values()
    )
    if any(v > 0 for vs in cost.values() for v in vs):
        cost_figure = _figure(
            data, "cost", strip_chart(cost, title="attempt cost", x_label="cost, USD", digits=6), cost_n
        )
    else:  # an axis of zeros says nothing: say that instead
        cost_figure = "<p>No cost: the model calls recorded no tokens, or their models have no price.</p>"
    latency_figure = (
        _figure(data, "latency", strip_chart(latency, title="attempt latency", x_label="latency, ms"), lat_n)
        if any(math.isfinite(v) for vs in latency.values() for v in vs)
        else "<p>No latency recorded.</p>"
    )
    return f'<section id="distributions"><h2>Latency and cost</h2>{latency_figure}{cost_figure}</section>'


def _failures(data: ReportData) -> str:
    n = len(data.outcomes)
    content = failure_tables(data)
    figure = _figure(data, "failures", content, f"n = {n} attempts") if content else "<p>No attempt.</p>"
    return f'<section id="failures"><h2>Failures by group, evaluator and tool</h2>{figure}</section>'
