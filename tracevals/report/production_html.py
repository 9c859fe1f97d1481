"""The production report as one self-contained HTML page (inline CSS and SVG, no script, no fetch): each
evaluator's pass rate with its interval, the night against the days before, the trend plot, the rates
per service and agent, failures by kind and by tool, and the worst sessions grouped by their failure,
each group closed. The provenance is stated once, at the top."""

from __future__ import annotations

from tracevals.report.formatting import html_text as escape
from tracevals.report.formatting import interval, num
from tracevals.report.html_failures import trace_command
from tracevals.report.html_parts import STYLE, details, page_header, table
from tracevals.report.svg import day_chart
from tracevals.stats.production import ProductionSummary, Rate, SessionFailure

__all__ = ["render_production_html"]

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_WORST_PER_GROUP = 10


def render_production_html(s: ProductionSummary) -> str:
    body = [_header(s), _evaluators(s), _trend(s), _groups(s), _failures(s), _worst(s)]
    title = f"tracevals production report — {s.meta.get('date_from')} – {s.meta.get('date_to')}"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>" + "".join(body) + "</body></html>\n"
    )


def _figure(name: str, content: str, size: str) -> str:
    return (
        f'<figure data-figure="{escape(name)}">{content}<figcaption class="size"><b>{escape(size)}</b>'
        "</figcaption></figure>"
    )


def _rate(r: Rate | None) -> str:
    return "—" if r is None or r.n == 0 else f"{num(r.rate)} ({r.passes}/{r.n}) {interval(r.wilson)}"


def _header(s: ProductionSummary) -> str:
    m = s.meta
    rows = [
        ("source", "production sessions (no harness run)"),
        ("selected by", str(m.get("selected_by") or "—")),
        ("days", f"{m.get('date_from') or '?'} – {m.get('date_to') or '?'} ({len(s.days)} days, UTC)"),
        ("sessions", f"{s.sessions} ({s.traces} traces), {s.failed_sessions} with a failed verdict"),
        ("services", ", ".join(m.get("services") or []) or "—"),
        ("agents", ", ".join(m.get("agents") or []) or "—"),
        ("sample", f"{float(m.get('sample_fraction', 1.0)):.0%} of sessions (seed {m.get('sample_seed', 0)})"),
        ("scores", f"{m.get('scores_stored', 0)} read from the lake, {m.get('scores_computed', 0)} computed now"),
        ("intervals", f"Wilson, z = {s.z:g}; the night against the days before: one-sided Fisher exact, "
                      f"alpha = {s.alpha:g}"),
        ("lake", str(m.get("lake") or "—")),
    ]  # fmt: skip
    notes = [("note", str(n)) for n in m.get("notes") or []]
    return page_header("tracevals production report", rows + notes, _SECTIONS)


_SECTIONS = (
    ("evaluators", "Evaluators"), ("trend", "Day by day"), ("groups", "Services and agents"), ("failures", "Failures"),
    ("worst", "Worst sessions"),
)  # fmt: skip


def _evaluators(s: ProductionSummary) -> str:
    night = s.days[-1].isoformat() if s.days else "?"
    head = ["evaluator", "all days", f"the night ({night})", "the days before", "drop", "p (fell)", "verdict"]
    rows, classes = [], []
    for e, r in s.overall.items():
        t = s.trend(e)
        if t is None:
            rows.append([e, _rate(r), "—", "—", "—", "—", "one day only" if len(s.days) < 2 else "no verdict"])
            classes.append("")
            continue
        verdict = "fell significantly" if t.significant else ("fell" if t.drop > 0 else "held")
        rows.append([e, _rate(r), _rate(t.night_rate), _rate(t.before), f"{t.drop:+.3f}", f"{t.p_value:.3g}", verdict])
        classes.append("fell" if t.significant else "")
    content = table(head, rows, table_id="evaluator-table", row_classes=classes)
    return (
        '<section id="evaluators"><h2>Evaluators</h2><p>Each evaluator\'s pass rate: passed verdicts over '
        "verdicts, one verdict per trace it applies to.</p>"
        f"{_figure('evaluators', content, f'n = {s.traces} traces in {s.sessions} sessions')}</section>"
    )


def _trend(s: ProductionSummary) -> str:
    series: dict[str, list[tuple[str, float, float, float, str]]] = {}
    for g in s.by_day:
        if g.day is None:
            continue
        lo, hi = g.rate.wilson
        tip = f"{g.evaluator} {g.day}: {g.rate.passes}/{g.rate.n} = {num(g.rate.rate)} {interval(g.rate.wilson)}"
        series.setdefault(g.evaluator, []).append((g.day.isoformat(), g.rate.rate, lo, hi, tip))
    chart = day_chart(series, title="pass rate per day, with Wilson interval")
    rows = [[str(g.day), g.evaluator, _rate(g.rate)] for g in s.by_day]
    per_day = details(
        f'per day <span class="count">— {len(rows)} rows</span>', table(["day", "evaluator", "pass rate"], rows)
    )
    n = sum(g.rate.n for g in s.by_day)
    return f'<section id="trend"><h2>Day by day</h2>{_figure("trend", chart + per_day, f"n = {n} verdicts")}</section>'


def _groups(s: ProductionSummary) -> str:
    pairs = sorted({(g.service, g.agent) for g in s.by_group})
    cell = {(g.service, g.agent, g.evaluator): g.rate for g in s.by_group}
    head = ["service", "agent", *s.evaluators]
    rows = [[svc, agent, *(_short(cell.get((svc, agent, e))) for e in s.evaluators)] for svc, agent in pairs]
    content = table(head, rows, table_id="group-table")
    by_day = [[g.service, g.agent, str(g.day), g.evaluator, _rate(g.rate)] for g in s.by_group_day]
    more = details(
        f'per service, agent and day <span class="count">— {len(by_day)} rows</span>',
        table(["service", "agent", "day", "evaluator", "pass rate"], by_day),
    )
    return (
        '<section id="groups"><h2>Per service and agent</h2>'
        f"{_figure('groups', content + more, f'n = {s.traces} traces, {len(pairs)} service / agent pairs')}</section>"
    )


def _short(r: Rate | None) -> str:
    if r is None or r.n == 0:
        return "—"
    lo, hi = r.wilson
    return f"{num(r.rate)} ({r.passes}/{r.n}) [{lo:.2f}, {hi:.2f}]"


def _failures(s: ProductionSummary) -> str:
    kinds = [[k.evaluator, k.kind, str(k.verdicts), str(len(k.sessions)), ", ".join(k.sessions[:3])] for k in s.kinds]
    tools = [
        [t.tool, f"{t.failed}/{t.calls}", str(t.sessions), ", ".join(f"{k} {n}" for k, n in t.error_types[:3])]
        for t in s.tools
    ]
    content = (
        '<div class="tables"><div><h3>by kind</h3>'
        + (table(["evaluator", "kind", "failed verdicts", "sessions", "worst sessions"], kinds, table_id="kind-table")
           if kinds else "<p>no failed verdict</p>")
        + "</div><div><h3>by tool</h3>"
        + (table(["tool", "failed calls", "sessions", "errors"], tools, table_id="tool-table")
           if tools else "<p>no tool call</p>")
        + "</div></div>"
    )  # fmt: skip
    return f'<section id="failures"><h2>Failures</h2>{_figure("failures", content, f"n = {s.traces} traces")}</section>'


def _worst(s: ProductionSummary) -> str:
    if not s.worst_sessions:
        return '<section id="worst"><h2>Worst sessions</h2><p>No session failed a verdict.</p></section>'
    groups: dict[str, list[SessionFailure]] = {}
    for w in s.worst_sessions:
        groups.setdefault(w.kinds[0] if w.kinds else "failed", []).append(w)
    lake_location = s.meta.get("lake")
    blocks = []
    for kind, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        cards = "".join(_card(w, lake_location) for w in members[:_WORST_PER_GROUP])
        summary = f'{escape(kind)} <span class="count">— {len(members)} sessions</span>'
        blocks.append(details(summary, cards, data={"group": kind}))
    note = (
        f"The {len(s.worst_sessions)} sessions with the most failed verdicts (of {s.failed_sessions} that failed "
        "one), grouped by their first failure."
    )
    figure = _figure("worst", "".join(blocks), f"n = {s.failed_sessions} sessions with a failed verdict")
    return f'<section id="worst"><h2>Worst sessions</h2><p>{escape(note)}</p>{figure}</section>'


def _card(w: SessionFailure, location: str | None) -> str:
    reasons = "".join(f"<li>{escape(r)}</li>" for r in w.reasons)
    commands = "".join(f'<li><code class="cmd">{escape(trace_command(location, t))}</code></li>' for t in w.traces[:3])
    more = f"<li>… {len(w.traces) - 3} more traces</li>" if len(w.traces) > 3 else ""
    return (
        f'<article class="failure" data-session="{escape(w.session_id)}">'
        f"<h3>{escape(w.session_id)} · {escape(w.service)} / {escape(w.agent)} · {w.day}</h3>"
        f'<p class="reasons">{w.failed} of {w.verdicts} verdicts failed: {escape(", ".join(w.evaluators))}; '
        f'{escape("; ".join(w.kinds))}</p><ul class="reasons">{reasons}</ul>'
        f'<ul class="reasons">{commands}{more}</ul></article>'
    )
