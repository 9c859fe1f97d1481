"""Pieces of the HTML report that are not charts: the stylesheet, tables and the failure gallery."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracevals.report.data import CallView, FailedAttempt, ReportData

__all__ = ["STYLE", "failure_gallery", "table"]

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;color:#1b1b1b;margin:0 auto;max-width:1180px;padding:0 20px 60px}
header{border-bottom:2px solid #0072B2;margin-bottom:12px}
h1{font-size:24px;margin:18px 0 6px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:14px 0 6px}
dl#provenance{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0 10px}
dt{font-weight:600}dd{margin:0;word-break:break-all}
nav a{margin-right:12px}
figure{margin:10px 0 18px;overflow-x:auto}
figcaption.provenance{font-size:12px;color:#555;margin-top:4px}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f4f7}tr.regression td{background:#fdecea}tr.improved td{background:#eaf7ef}
tr.cat-do_not_ship td:nth-child(2){color:#b00020;font-weight:600}
tr.cat-needs_confirmation td:nth-child(2){color:#8a5a00;font-weight:600}
tr.cat-canary td:nth-child(2){color:#005a8a}tr.cat-automatic td:nth-child(2){color:#006b3c}
.statement{font-weight:600}
article.failure{border:1px solid #ddd;border-left:4px solid #D55E00;padding:8px 12px;margin:10px 0}
article.failure h3{margin:0 0 6px}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:14px}
.sides ol{margin:4px 0;padding-left:22px}.sides li{font-family:ui-monospace,monospace;font-size:12px}
li.failed{color:#b00020}.hazard{color:#b00020;font-weight:600}
blockquote{margin:6px 0;padding:4px 10px;border-left:3px solid #ccc;color:#333;white-space:pre-wrap}
.reasons{font-size:12px;color:#444}
"""


def table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    table_id: str | None = None,
    row_classes: Sequence[str] | None = None,
) -> str:
    """An HTML table; every cell escaped."""
    ident = f' id="{escape(table_id)}"' if table_id else ""
    out = [f"<table{ident}><thead><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        cls = row_classes[i] if row_classes and row_classes[i] else ""
        out.append(f'<tr class="{escape(cls)}">' if cls else "<tr>")
        out += [f"<td>{escape(cell)}</td>" for cell in row]
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def failure_gallery(data: ReportData, caption: Callable[[ReportData, str, Sequence[str] | None], str]) -> str:
    """Each failed (or hazardous) attempt beside the expected steps and a passing attempt of the task."""
    if not data.failures:
        return '<section id="gallery"><h2>Failure gallery</h2><p>No failed attempt in this selection.</p></section>'
    shown = len(data.failures)
    note = f"Showing {shown} of {data.failures_total} failed attempts, regressed tasks first."
    seen: set[str] = set()
    cards = []
    for f in data.failures:
        anchor = "" if f.task_id in seen else f' id="task-{escape(f.task_id)}"'
        seen.add(f.task_id)
        cards.append(_card(f, anchor))
    size = f"n = {data.failures_total} failed attempts of {len(data.outcomes)}"
    return (
        f'<section id="gallery"><h2>Failure gallery</h2><p>{escape(note)}</p>'
        f'<figure data-figure="gallery">{"".join(cards)}{caption(data, size, None)}</figure></section>'
    )


def _card(f: FailedAttempt, anchor: str) -> str:
    hazards = "".join(f'<p class="hazard">⚠ {escape(h)}</p>' for h in f.hazards)
    reasons = "".join(f"<li>{escape(r)}</li>" for r in f.reasons)
    expected = "".join(f"<li>{escape(step)}</li>" for step in f.expected) or "<li><i>no tool call expected</i></li>"
    reference = (
        f"<h4>a passing attempt of this task</h4><ol>{_calls(f.reference)}</ol>" if f.reference is not None else ""
    )
    output = f"<blockquote>{escape(f.output)}</blockquote>" if f.output else ""
    error = f'<p class="hazard">error: {escape(f.error)}</p>' if f.error else ""
    return (
        f'<article class="failure"{anchor} data-task="{escape(f.task_id)}" data-variant="{escape(f.variant)}">'
        f"<h3>{escape(f.task_id)} · {escape(f.variant)} · attempt {f.attempt}</h3>"
        f'<p class="reasons">trace {escape(f.trace_id)}</p>{hazards}{error}'
        f'<div class="sides"><div class="actual"><h4>this attempt</h4><ol>{_calls(f.calls)}</ol></div>'
        f'<div class="expected"><h4>expected (the case)</h4><ol>{expected}</ol>{reference}</div></div>'
        f'{output}<ul class="reasons">{reasons}</ul></article>'
    )


def _calls(calls: Sequence[CallView]) -> str:
    if not calls:
        return "<li><i>no tool call</i></li>"
    items = []
    for c in calls:
        failed = f" → {c.error}" if c.error else ""
        cls = ' class="failed"' if c.error else ""
        items.append(f"<li{cls}>{escape(c.name)}({escape(c.args)}){escape(failed)}</li>")
    return "".join(items)
