"""The failures of the HTML report: tables per failure group, evaluator and tool, and the gallery of
failed attempts grouped by kind, each group collapsed (`<details>`), so the page stays short however
many attempts failed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from tracevals.model.quoting import command_line, sql_string
from tracevals.report.data import GROUP_LIMIT, CallView, FailedAttempt, ReportData
from tracevals.report.formatting import html_text as escape
from tracevals.report.html_parts import details, table

__all__ = ["failure_gallery", "failure_tables", "trace_command"]


def trace_command(lake_location: str | None, trace_id: str) -> str:
    """The command that shows a trace's steps (a trace id in a report leads somewhere)."""
    where = ["--lake", lake_location] if lake_location else []
    query = f"select * from steps where trace_id = {sql_string(trace_id)} order by step_index"
    return command_line("tracevals", "sql", *where, query)


def failure_tables(data: ReportData) -> str:
    """What failed, counted three ways: per evaluator (failed verdicts / verdicts) and per tool (failed
    calls / calls) side by side, then per gallery group (failed attempts / attempts); a column per
    variant, the most failed first."""
    if not data.outcomes:
        return ""
    variants = list(data.summaries)
    parts = []
    for title, rows, what in (
        ("by evaluator", data.by_evaluator, "failed verdicts"),
        ("by tool", data.by_tool, "failed calls"),
        ("by failure group", data.by_group, "failed attempts"),
    ):
        names = sorted({r.name for r in rows}, key=lambda n: (-sum(r.failed for r in rows if r.name == n), n))
        cell = {(r.name, r.variant): r for r in rows}
        body = []
        for name in names:
            counts = [cell.get((name, v)) for v in variants]
            shown = [f"{r.failed}/{r.total}" if r is not None else "—" for r in counts]
            total: Counter[str] = Counter()
            for r in counts:
                total.update(dict(r.detail) if r is not None else {})
            detail = ", ".join(f"{k} {n}" for k, n in total.most_common(3))
            body.append([name, *shown] + ([detail] if title != "by failure group" else []))
        head = [title.removeprefix("by "), *(f"{v}: {what}" for v in variants)]
        head += ["most frequent"] if title != "by failure group" else []
        content = table(head, body, table_id=f"failures-{title.split()[-1]}") if body else "<p>none</p>"
        parts.append(
            f'<div class="{"wide" if title == "by failure group" else ""}"><h3>{escape(title)}</h3>{content}</div>'
        )
    return f'<div class="tables">{"".join(parts)}</div>'


def failure_gallery(data: ReportData, caption: str) -> str:
    """Each failed (or hazardous) attempt beside the expected steps and a passing attempt of the task,
    grouped by its most severe failure (`FailedAttempt.group`), the largest group first, each closed."""
    if not data.failures:
        return '<section id="gallery"><h2>Failure gallery</h2><p>No failed attempt in this selection.</p></section>'
    groups: dict[str, list[FailedAttempt]] = {}
    for f in data.failures:
        groups.setdefault(f.group, []).append(f)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    seen: set[str] = set()
    blocks = []
    lake_location = data.meta.get("lake")
    for group, members in ordered:
        per_variant = Counter(f.variant for f in members)
        counts = ", ".join(f"{v} {n}" for v, n in sorted(per_variant.items()))
        cards = []
        for f in members[:GROUP_LIMIT]:
            anchor = "" if f.task_id in seen else f' id="task-{escape(f.task_id)}"'
            seen.add(f.task_id)
            cards.append(_card(f, anchor, lake_location))
        more = len(members) - GROUP_LIMIT
        rest = f"<p>… and {more} more attempts of this group (in the lake: the command under each card).</p>"
        summary = (
            f'{escape(group)} <span class="count">— {len(members)} failed attempts ({escape(counts)}), '
            f"tasks {escape(', '.join(sorted({f.task_id for f in members}))[:160])}</span>"
        )
        blocks.append(details(summary, "".join(cards) + (rest if more > 0 else ""), data={"group": group}))
    note = (
        f"{data.failures_total} failed attempts in {len(ordered)} groups, each under its most severe failure "
        "(a release hazard, then what the agent did, then what it answered); regressed tasks first in each."
    )
    return (
        f'<section id="gallery"><h2>Failure gallery</h2><p>{escape(note)}</p>'
        f'<figure data-figure="gallery">{"".join(blocks)}{caption}</figure></section>'
    )


def _card(f: FailedAttempt, anchor: str, location: str | None) -> str:
    command = escape(trace_command(location, f.trace_id))
    hazards = "".join(f'<p class="hazard">⚠ {escape(h)}</p>' for h in f.hazards)
    reasons = "".join(f"<li>{escape(r)}</li>" for r in f.reasons)
    expected = "".join(f"<li>{escape(step)}</li>" for step in f.expected) or "<li><i>no tool call expected</i></li>"
    reference = (
        f"<h4>a passing attempt of this task</h4><ol>{_calls(f.reference)}</ol>" if f.reference is not None else ""
    )
    output = f"<blockquote>{escape(f.output)}</blockquote>" if f.output else ""
    error = f'<p class="hazard">error: {escape(f.error)}</p>' if f.error else ""
    also = [k for k in f.kinds if k != f.group]
    other = f'<p class="reasons">also: {escape("; ".join(also))}</p>' if also else ""
    return (
        f'<article class="failure"{anchor} data-task="{escape(f.task_id)}" data-variant="{escape(f.variant)}">'
        f"<h3>{escape(f.task_id)} · {escape(f.variant)} · attempt {f.attempt}</h3>"
        f'<p class="reasons">trace {escape(f.trace_id)}: <code class="cmd">{command}'
        f"</code></p>{hazards}{error}{other}"
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
