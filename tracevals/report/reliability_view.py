"""The reliability figures laid out: plain data (JSON), text tables (terminal, Markdown) and HTML sections."""

from __future__ import annotations

from typing import Any

from tracevals.report.formatting import clean, interval, num
from tracevals.report.formatting import html_text as escape
from tracevals.report.html_parts import details, table
from tracevals.report.reliability import Reliability
from tracevals.report.svg import IntervalPoint, interval_chart
from tracevals.stats.consistency import VERDICT_LABELS, VERDICTS, Properties
from tracevals.stats.environment import ENV_KEYS
from tracevals.stats.steps import TaskSteps

__all__ = ["environment_rows", "properties_rows", "reliability_html", "reliability_json", "step_rows"]

PROPERTY_COLUMNS = ["variant", "availability", "correctness", "consistency", "agreement", "flaky", "consistently wrong"]
STEP_COLUMNS = ["variant", "task", "step", "tool", "reached", "called", "right args", "succeeded", "rate"]


def _share(count: int, total: int, ci: tuple[float, float]) -> str:
    return f"{num(count / total) if total else '-'} ({count}/{total}) {interval(ci)}"


def properties_rows(rel: Reliability) -> list[list[str]]:
    """One row per variant: the three properties with counts and intervals, then how consistency splits."""
    rows = []
    for p in rel.properties.values():
        rows.append(
            [
                p.variant,
                _share(p.available, p.attempts, p.availability_wilson),
                _share(p.passes, p.attempts, p.correctness_wilson),
                _share(p.consistent_tasks, p.measured_tasks, p.consistency_wilson) + " tasks",
                num(p.agreement),
                f"{p.verdicts.get('flaky', 0)}/{len(p.tasks)}",
                f"{p.verdicts.get('consistently_wrong', 0)}/{len(p.tasks)}",
            ]
        )
    return rows


def step_rows(rel: Reliability, limit: int | None = 10) -> list[list[str]]:
    """The steps that lose the most attempts, worst first, per variant."""
    rows = []
    for variant in rel.properties:
        for t, s in rel.worst_steps(variant, limit or 10**9):
            rows.append(
                [variant, t.task_id, str(s.index), s.tool, str(s.reached), str(s.called), str(s.right_args),
                 str(s.succeeded), num(s.rate)]
            )  # fmt: skip
    return rows


def environment_rows(rel: Reliability) -> tuple[list[str], list[list[str]]]:
    variants = list(rel.environments)
    keys = [k for k in ENV_KEYS if any(k in e.values for e in rel.environments.values())]
    rows = [[ENV_KEYS[k], *(rel.environments[v].value(k) for v in variants)] for k in keys]
    return ["environment", *variants], rows


def _task_json(t: Any) -> dict[str, Any]:
    return {
        "task_id": t.task_id, "n": t.n, "passes": t.passes, "available": t.available, "verdict": t.verdict,
        "consistent": t.consistent, "trajectories": t.trajectories, "modal_share": t.modal_share,
        "similarity": t.similarity, "output_classes": t.output_classes, "agreement": t.agreement,
        "flakiness": t.flakiness, "modal_trajectory": list(t.modal_trajectory),
    }  # fmt: skip


def _props_json(p: Properties) -> dict[str, Any]:
    return {
        "attempts": p.attempts,
        "availability": {"available": p.available, "rate": p.availability, "wilson": list(p.availability_wilson)},
        "correctness": {"passes": p.passes, "rate": p.correctness, "wilson": list(p.correctness_wilson)},
        "consistency": {
            "consistent_tasks": p.consistent_tasks, "measured_tasks": p.measured_tasks, "rate": p.consistency,
            "wilson": list(p.consistency_wilson), "agreement": p.agreement, "modal_share": p.modal_share,
            "similarity": p.similarity, "flakiness": p.flakiness,
        },
        "verdicts": {v: p.verdicts.get(v, 0) for v in VERDICTS},
        "tasks": [_task_json(t) for t in p.tasks],
    }  # fmt: skip


def _steps_json(t: TaskSteps) -> dict[str, Any]:
    return {
        "variant": t.variant, "task_id": t.task_id, "attempts": t.attempts, "reference": t.reference,
        "steps": [
            {"step": s.index, "tool": s.tool, "reached": s.reached, "called": s.called, "right_args": s.right_args,
             "succeeded": s.succeeded, "rate": s.rate}
            for s in t.steps
        ],
        "product_of_step_rates": t.product if t.steps else None, "all_steps_right": t.all_steps,
        "end_to_end": t.end_to_end,
        "first_divergence": [
            {"step": i, "attempts": n, "example": t.divergence_examples.get(i)} for i, n in t.divergence.items()
        ],
    }  # fmt: skip


def reliability_json(rel: Reliability | None) -> dict[str, Any] | None:
    if rel is None:
        return None
    cmp = rel.env_comparison
    doc = {
        "properties": {v: _props_json(p) for v, p in rel.properties.items()},
        "steps": [_steps_json(t) for t in rel.steps],
        "tools": [
            {
                "variant": r.variant,
                "tool": r.tool,
                "steps": r.steps,
                "reached": r.reached,
                "called": r.called,
                "right_args": r.right_args,
                "succeeded": r.succeeded,
                "rate": r.rate,
            }
            for r in rel.tools
        ],
        "environments": {v: {"attempts": e.attempts, "values": e.values} for v, e in rel.environments.items()},
        "environment_comparison": None
        if cmp is None
        else {
            "baseline": cmp.baseline,
            "candidate": cmp.candidate,
            "differences": [
                {
                    "key": d.key,
                    "label": d.label,
                    "baseline": list(d.baseline),
                    "candidate": list(d.candidate),
                    "declared": d.declared,
                }
                for d in cmp.differences
            ],
            "problems": cmp.problems(),
        },
        "notes": rel.notes,
    }
    cleaned: dict[str, Any] = clean(doc)
    return cleaned


# --- HTML -----------------------------------------------------------------------------------------


def reliability_html(rel: Reliability | None, caption: Any) -> str:
    """Three sections: the properties (with a chart of their intervals), per-step reliability, environment.
    ``caption(name, content, sample_size)`` wraps a figure as the rest of the report does."""
    if rel is None or not rel.properties:
        return ""
    return _properties_html(rel, caption) + _steps_html(rel, caption) + _environment_html(rel, caption)


def _properties_html(rel: Reliability, caption: Any) -> str:
    names = list(rel.properties)
    labels = ("availability", "correctness", "consistency")
    points: list[tuple[str, list[IntervalPoint]]] = []
    for label in labels:
        row = []
        for i, p in enumerate(rel.properties.values()):
            count, total, ci = {
                "availability": (p.available, p.attempts, p.availability_wilson),
                "correctness": (p.passes, p.attempts, p.correctness_wilson),
                "consistency": (p.consistent_tasks, p.measured_tasks, p.consistency_wilson),
            }[label]
            if total:  # no pair of attempts: no consistency to draw
                row.append(IntervalPoint(i, count / total, *ci, f"{p.variant} {label}: {count}/{total}"))
        points.append((label, row))
    chart = interval_chart(points, names, title="availability, correctness, consistency (Wilson intervals)")
    head = ["variant", "availability (attempts)", "correctness (attempts)", "consistency (tasks)", "agreement",
            "flaky", "consistently wrong"]  # fmt: skip
    summary = table(head, properties_rows(rel), table_id="properties-table")
    per_task = []
    for p in rel.properties.values():
        rows = [
            [t.task_id, VERDICT_LABELS[t.verdict], f"{t.passes}/{t.n}", f"{t.available}/{t.n}",
             f"{t.trajectories} ({num(t.modal_share)} modal)", num(t.similarity), str(t.output_classes),
             num(t.agreement)]
            for t in sorted(p.tasks, key=lambda t: (VERDICTS.index(t.verdict) * -1, t.task_id))
        ]  # fmt: skip
        counts = ", ".join(f"{VERDICT_LABELS[v]} {p.verdicts[v]}" for v in VERDICTS if p.verdicts.get(v))
        per_task.append(
            details(
                f'consistency per task: {escape(p.variant)} <span class="count">— {escape(counts)}</span>',
                table(
                    ["task", "verdict", "passed", "available", "trajectories", "similarity", "answers", "agreement"],
                    rows,
                    table_id=f"consistency-{p.variant}",
                ),
                cls="more",
                data={"variant": p.variant},
            )
        )
    note = (
        "<p>Availability: attempts that finished without an unhandled exception. Correctness: attempts a checker "
        "passed. Consistency: tasks whose attempts all gave an equivalent result (a consistently wrong task is "
        "consistent and incorrect). Agreement: the chance that two attempts of a task gave the same result.</p>"
    )
    total = sum(p.attempts for p in rel.properties.values())
    figure = caption("properties", chart + summary + "".join(per_task), f"n = {total} attempts")
    return f'<section id="properties"><h2>Availability, correctness, consistency</h2>{note}{figure}</section>'


def _steps_html(rel: Reliability, caption: Any) -> str:
    worst = table(STEP_COLUMNS, step_rows(rel, 5), table_id="step-table")
    products = []
    for t in rel.steps:
        if not t.steps:
            continue
        rates = " × ".join(num(s.rate, 2) for s in t.steps if s.reached)
        first = ", ".join(
            f"step {i}: {n} ({escape(t.divergence_examples.get(i, ''))})" for i, n in t.divergence.items()
        )
        products.append(
            [
                t.variant,
                t.task_id,
                rates,
                num(t.product),
                f"{t.passes}/{t.attempts} = {num(t.end_to_end)}",
                first or "-",
            ]
        )
    product_table = table(
        ["variant", "task", "step rates", "product", "end to end", "first divergence"],
        products,
        table_id="step-products",
    )
    tools = table(
        ["variant", "tool", "steps", "reached", "called", "right args", "succeeded", "rate"],
        [[r.variant, r.tool, str(r.steps), str(r.reached), str(r.called), str(r.right_args), str(r.succeeded),
          num(r.rate)] for r in rel.tools],
        table_id="tool-steps",
    )  # fmt: skip
    # the reading in one visible line; its details are reference, one click away (the page stays short)
    reading = "<p>A step is reached when every earlier step was done right; its rate is succeeded / reached.</p>"
    note = reading + details(
        "how the steps are read",
        "<p>Called: the call there was of the step's tool (else another tool, or none). The product of a task's "
        "step rates is the share of attempts that did every step right, beside the end-to-end pass rate. First "
        "divergence: the step where attempts stopped doing it right (reached minus succeeded), by the same "
        "reading.</p>",
        cls="more",
    )
    n = sum(t.attempts for t in rel.steps)
    more = details("every task: step rates, their product, first divergence", product_table, cls="more") + details(
        "every tool, over the steps that name it", tools, cls="more"
    )
    figure = caption("steps", "<h3>Steps that fail most</h3>" + worst + more, f"n = {n} attempts")
    return f'<section id="steps"><h2>Per-step reliability</h2>{note}{figure}</section>'


def _environment_html(rel: Reliability, caption: Any) -> str:
    if not rel.environments:
        return ""
    columns, rows = environment_rows(rel)
    parts = [details("what every variant ran with", table(columns, rows, table_id="environment-table"), cls="more")]
    cmp = rel.env_comparison
    if cmp is not None:
        items = [
            f"<li>{escape(d.describe())}{' (under test)' if d.declared else ''}</li>" for d in cmp.differences
        ] or ["<li>none: the two variants ran in the same environment</li>"]
        parts.append(f"<h3>{escape(cmp.baseline)} → {escape(cmp.candidate)} differ in</h3><ul>{''.join(items)}</ul>")
        problems = cmp.problems()
        if problems:
            parts.append(
                '<p class="warning">Not comparable under --strict-env: '
                + "; ".join(escape(p) for p in problems)
                + "</p>"
            )
    n = sum(e.attempts for e in rel.environments.values())
    return (
        f'<section id="environment"><h2>Environment</h2>{caption("environment", "".join(parts), f"n = {n} attempts")}'
        "</section>"
    )
