"""A task's k attempts side by side: what the page lays out, read from the run's report figures.

Every number here is the report's (`report.reliability.Reliability`): the per-step funnel is the task's
`TaskSteps` rows (the rows `step_reliability` stores), each attempt's aligned calls are the reading of its
calls those figures used (`TaskSteps.paths`), its first divergence is the one they counted
(`TaskSteps.diverged`), the stability class and the result classes (verdict and answer) are the task's
`TaskConsistency`.
Nothing is recounted: the page shows where the figures come from.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tracevals.model.calls import canonical_args
from tracevals.stats.consistency import VERDICT_LABELS
from tracevals.ui.figures import RunFigures

__all__ = ["AttemptRow", "Cell", "TaskView", "task_view"]


@dataclass(frozen=True)
class Cell:
    """One call of an attempt at one position of the reference path."""

    position: int  # 1-based
    tool: str
    args: str
    ok: bool
    state: str  # "on-path" | "diverged" (the first call off the path) | "after" (after the divergence)
    expected: str | None  # the reference step at this position, if any


@dataclass(frozen=True)
class AttemptRow:
    attempt: int
    trace_id: str | None
    passed: bool
    error: str | None
    hazards: tuple[str, ...]
    output: str | None
    answer_class: int | None  # 1-based, in order of first appearance
    cells: tuple[Cell, ...]
    diverged_at: int | None
    diverged_how: str | None


@dataclass(frozen=True)
class TaskView:
    run_id: str
    variant: str
    task_id: str
    reference: str  # "expected" | "modal"
    reference_steps: tuple[str, ...]
    columns: int
    attempts: tuple[AttemptRow, ...]
    funnel: tuple[dict[str, Any], ...]  # per expected step: reached, called, right_args, succeeded, rate
    divergence: dict[int, int]  # position -> attempts that first left the path there
    verdict: str | None
    verdict_label: str | None
    answer_classes: int | None
    modal_share: float | None
    similarity: float | None
    passes: int
    n: int
    product: float
    end_to_end: float
    variants: tuple[str, ...]  # the run's variants that ran this task


def _args(args: Mapping[str, Any] | None, limit: int = 80) -> str:
    if args is None:
        return "(not captured)"
    text = canonical_args({k: v for k, v in args.items() if k != "idempotency_key"})
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _step_text(tool: str, args: Mapping[str, Any] | None) -> str:
    return tool if args is None else f"{tool}({json.dumps(dict(args), sort_keys=True, ensure_ascii=False)})"


def task_view(figures: RunFigures, variant: str, task_id: str) -> TaskView | None:
    """The k attempts of `task_id` by `variant` in the run; None when the run has no such attempts."""
    rel = figures.data.reliability
    if rel is None:
        return None
    steps = next((t for t in rel.steps if t.variant == variant and t.task_id == task_id), None)
    if steps is None:
        return None
    traces = rel.attempt_traces.get((variant, task_id), [])
    outcomes = {o.trace_id: o for o in figures.data.outcomes if o.variant == variant and o.task_id == task_id}
    props = rel.properties.get(variant)
    consistency = props.task(task_id) if props is not None else None
    classes = dict(consistency.classes) if consistency is not None else {}
    reference = steps.reference_path
    rows = []
    for i, trace_id in enumerate(traces):
        path = steps.paths[i] if i < len(steps.paths) else ()
        found = steps.diverged[i] if i < len(steps.diverged) else None
        at = found[0] if found is not None else None
        cells = []
        for j, call in enumerate(path, start=1):
            state = "on-path" if at is None or j < at else ("diverged" if j == at else "after")
            expected = reference[j - 1] if j <= len(reference) else None
            cells.append(
                Cell(j, call.name, _args(call.args), call.ok, state, expected.tool if expected is not None else None)
            )
        o = outcomes.get(trace_id)
        t = figures.trajectories.get(trace_id or "")
        number = o.attempt if o is not None else i + 1
        rows.append(
            AttemptRow(
                attempt=number,
                trace_id=trace_id,
                passed=bool(o and o.passed),
                error=o.error if o is not None else None,
                hazards=tuple(h.detail for h in o.hazards) if o is not None else (),
                output=t.output if t is not None else None,
                answer_class=classes[number] + 1 if number in classes else None,
                cells=tuple(cells),
                diverged_at=at,
                diverged_how=found[1] if found is not None else None,
            )
        )
    funnel = tuple(
        {"step": s.index, "tool": s.tool, "reached": s.reached, "called": s.called, "right_args": s.right_args,
         "succeeded": s.succeeded, "rate": s.rate, "lost": s.lost, "diverged_here": steps.divergence.get(s.index, 0)}
        for s in steps.steps
    )  # fmt: skip
    longest = max([len(reference)] + [len(r.cells) for r in rows])
    ran = tuple(sorted({t.variant for t in rel.steps if t.task_id == task_id}))
    return TaskView(
        run_id=figures.run_id,
        variant=variant,
        task_id=task_id,
        reference=steps.reference,
        reference_steps=tuple(_step_text(s.tool, s.args) for s in reference),
        columns=longest,
        attempts=tuple(rows),
        funnel=funnel,
        divergence=dict(steps.divergence),
        verdict=consistency.verdict if consistency is not None else None,
        verdict_label=VERDICT_LABELS.get(consistency.verdict) if consistency is not None else None,
        answer_classes=consistency.output_classes if consistency is not None else None,
        modal_share=consistency.modal_share if consistency is not None else None,
        similarity=None if consistency is None or math.isnan(consistency.similarity) else consistency.similarity,
        passes=steps.passes,
        n=steps.attempts,
        product=steps.product,
        end_to_end=steps.end_to_end,
        variants=ran,
    )
