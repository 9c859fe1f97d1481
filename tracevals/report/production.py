"""The report over production traffic (no harness run): JSON, CSV and Markdown of a `ProductionSummary`
(the HTML is `production_html`). Every rate carries its counts and its Wilson interval; the night's
trend its p-value; every failing session its reasons."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from tracevals.model.json_text import json_text
from tracevals.report.formatting import PathArg, atomic_write, clean, interval, markdown_code, num
from tracevals.report.formatting import markdown_cell as _esc
from tracevals.stats.production import GroupRate, ProductionSummary, Rate, SessionFailure, Trend

__all__ = [
    "PRODUCTION_CSV_COLUMNS",
    "PRODUCTION_JSON_SCHEMA",
    "production_json",
    "render_production_markdown",
    "write_production",
]

PRODUCTION_JSON_SCHEMA = "tracevals.production_report/1"
#: One CSV row per evaluator and group: every day (`day` empty) and each day, every service and agent
#: (`*`) and each.
PRODUCTION_CSV_COLUMNS = ("evaluator", "service", "agent", "day", "passes", "n", "rate", "wilson_low", "wilson_high")


def _rate(r: Rate) -> dict[str, Any]:
    return {"passes": r.passes, "n": r.n, "rate": r.rate, "wilson": list(r.wilson)}


def _group(g: GroupRate) -> dict[str, Any]:
    return {
        "evaluator": g.evaluator,
        "service": g.service,
        "agent": g.agent,
        "day": g.day.isoformat() if g.day else None,
        **_rate(g.rate),
    }


def production_json(s: ProductionSummary) -> dict[str, Any]:
    """The whole report as one JSON document (NaN as null)."""
    return clean(
        {
            "schema": PRODUCTION_JSON_SCHEMA,
            "meta": s.meta,
            "z": s.z,
            "alpha": s.alpha,
            "sessions": s.sessions,
            "traces": s.traces,
            "failed_sessions": s.failed_sessions,
            "days": [d.isoformat() for d in s.days],
            "evaluators": {e: _rate(r) for e, r in s.overall.items()},
            "by_group": [_group(g) for g in s.by_group],
            "by_day": [_group(g) for g in s.by_day],
            "by_group_day": [_group(g) for g in s.by_group_day],
            "trends": [_trend(t) for t in s.trends],
            "worst_sessions": [_worst(w) for w in s.worst_sessions],
            "hazards": [
                {
                    "session_id": h.session_id,
                    "day": h.day.isoformat(),
                    "hazard": h.hazard,
                    "kind": h.kind,
                    "evaluator": h.evaluator,
                    "trace_id": h.trace_id,
                    "detail": h.detail,
                }
                for h in s.hazards
            ],
            "session_pass_rates": {
                day.isoformat(): {"passes": r.passes, "n": r.n, "rate": r.rate} for day, r in s.session_rates.items()
            },
            "failure_kinds": [
                {
                    "evaluator": k.evaluator,
                    "kind": k.kind,
                    "verdicts": k.verdicts,
                    "sessions": len(k.sessions),
                    "examples": list(k.sessions[:5]),
                }
                for k in s.kinds
            ],
            "tools": [
                {
                    "tool": t.tool,
                    "calls": t.calls,
                    "failed": t.failed,
                    "sessions": t.sessions,
                    "error_types": dict(t.error_types),
                }
                for t in s.tools
            ],
        }
    )


def _trend(t: Trend) -> dict[str, Any]:
    """One evaluator's last night against the days before it."""
    return {
        "evaluator": t.evaluator,
        "night": t.night.isoformat(),
        "night_rate": _rate(t.night_rate),
        "before": _rate(t.before),
        "before_days": t.before_days,
        "drop": t.drop,
        "p_value": t.p_value,
        "significant": t.significant,
        "statement": t.statement,
    }


def _worst(w: SessionFailure) -> dict[str, Any]:
    """One of the worst sessions: where it ran, its traces and why it failed."""
    return {
        "session_id": w.session_id,
        "service": w.service,
        "agent": w.agent,
        "day": w.day.isoformat(),
        "traces": list(w.traces),
        "failed": w.failed,
        "verdicts": w.verdicts,
        "evaluators": list(w.evaluators),
        "kinds": list(w.kinds),
        "reasons": list(w.reasons),
    }


def _csv(s: ProductionSummary) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(PRODUCTION_CSV_COLUMNS)
    overall = [GroupRate(e, "*", "*", None, r) for e, r in s.overall.items()]
    for g in [*overall, *s.by_group, *s.by_day, *s.by_group_day]:
        lo, hi = g.rate.wilson
        day = g.day.isoformat() if g.day else ""
        writer.writerow([g.evaluator, g.service, g.agent, day, g.rate.passes, g.rate.n, g.rate.rate, lo, hi])
    return buf.getvalue()


def _cell(r: Rate | None) -> str:
    return "—" if r is None else f"{num(r.rate)} ({r.passes}/{r.n}) {interval(r.wilson)}"


def render_production_markdown(s: ProductionSummary) -> str:
    """A human report: the selection, each evaluator's rate and trend, per service / agent, per day,
    failures by kind and by tool, the worst sessions."""
    m = s.meta
    out = ["# tracevals production report", "", "| selection | |", "|---|---|"]
    rows = [
        ("selected by", m.get("selected_by")),
        ("days", f"{m.get('date_from')} – {m.get('date_to')} ({len(s.days)} days)"),
        ("sessions", f"{s.sessions} ({s.traces} traces), {s.failed_sessions} with a failed verdict"),
        ("services", ", ".join(m.get("services") or [])),
        ("agents", ", ".join(m.get("agents") or [])),
        ("sample", f"{float(m.get('sample_fraction', 1.0)):.0%} of sessions, seed {m.get('sample_seed', 0)}"),
        ("scores", f"{m.get('scores_stored', 0)} read from the lake, {m.get('scores_computed', 0)} computed now"),
        ("intervals", f"Wilson, z = {s.z:g}; trend: one-sided Fisher exact, alpha = {s.alpha:g}"),
        ("lake", m.get("lake")),
    ]
    out += [f"| {k} | {_esc(str(v))} |" for k, v in rows if v not in (None, "")]
    out += ["", "## Evaluators", "", "| evaluator | all days | the night | the days before | trend |",
            "|---|---|---|---|---|"]  # fmt: skip
    for e, r in s.overall.items():
        t = s.trend(e)
        trend = "one day only" if t is None else (
            f"{'**fell significantly**' if t.significant else 'no significant fall'} "
            f"({t.drop:+.3f} drop, p = {t.p_value:.3g})"
        )  # fmt: skip
        night = _cell(t.night_rate) if t else "—"
        before = _cell(t.before) if t else "—"
        out.append(f"| {_esc(e)} | {_cell(r)} | {night} | {before} | {trend} |")
    out += ["", "## Per service and agent", "", "| service | agent | evaluator | pass rate |", "|---|---|---|---|"]
    out += [f"| {_esc(g.service)} | {_esc(g.agent)} | {_esc(g.evaluator)} | {_cell(g.rate)} |" for g in s.by_group]
    out += ["", "## Per day", "", "| day | evaluator | pass rate |", "|---|---|---|"]
    out += [f"| {g.day} | {_esc(g.evaluator)} | {_cell(g.rate)} |" for g in s.by_day]
    out += ["", "## Failures by kind", "", "| evaluator | kind | failed verdicts | sessions |", "|---|---|---|---|"]
    out += [f"| {_esc(k.evaluator)} | {_esc(k.kind)} | {k.verdicts} | {len(k.sessions)} |" for k in s.kinds]
    out += ["", "## Failures by tool", "", "| tool | failed calls | sessions | errors |", "|---|---|---|---|"]
    out += [
        f"| {_esc(t.tool)} | {t.failed}/{t.calls} | {t.sessions} | "
        f"{_esc(', '.join(f'{k} {n}' for k, n in t.error_types))} |"
        for t in s.tools
    ]
    out += ["", "## Worst sessions", ""]
    for w in s.worst_sessions:
        where = f"{_esc(w.service)} / {_esc(w.agent)}, {w.day}"
        out.append(f"- {markdown_code(w.session_id)} ({where}): {w.failed}/{w.verdicts} verdicts "
                   f"failed — {_esc('; '.join(w.reasons[:3]))}")  # fmt: skip
    return "\n".join(out).rstrip("\n") + "\n"


def write_production(path: PathArg, summary: ProductionSummary, fmt: str) -> Path:
    """Write the production report in `fmt` (html, markdown, csv, json); returns the path."""
    if fmt == "html":
        from tracevals.report.production_html import render_production_html

        return atomic_write(path, render_production_html(summary))
    if fmt == "csv":
        return atomic_write(path, _csv(summary))
    if fmt == "json":
        return atomic_write(path, json_text(production_json(summary), indent=2) + "\n")
    return atomic_write(path, render_production_markdown(summary))
