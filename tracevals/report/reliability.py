"""The figures of "again" beyond pass rates, from trajectories: the three properties, per-step
reliability, and the environment of every attempt (the pure rules live in `tracevals.stats`; this
module only reads trajectories, cases and outcomes into them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracevals.model.args_match import ComparisonError, args_rule
from tracevals.model.asked import by_steps, in_order_of, parallel
from tracevals.model.callables import load_callable
from tracevals.model.calls import canonical_args, operation_key
from tracevals.model.case import Case
from tracevals.model.progress import Told, quiet
from tracevals.model.retries import logical_calls
from tracevals.model.trajectory import ToolCall, Trajectory, with_handoffs
from tracevals.stats import Outcome
from tracevals.stats.consistency import AttemptRecord, Equivalence, Properties, properties
from tracevals.stats.environment import EnvComparison, EnvSummary, compare_environments, summarize_environments
from tracevals.stats.steps import ExpectedStep, StepCall, TaskSteps, ToolRow, task_steps, tool_rows

__all__ = ["Reliability", "lake_rows", "reliability"]


@dataclass
class Reliability:
    properties: dict[str, Properties]
    steps: list[TaskSteps]
    tools: list[ToolRow]
    environments: dict[str, EnvSummary] = field(default_factory=dict)
    env_comparison: EnvComparison | None = None
    notes: list[str] = field(default_factory=list)
    # (variant, task) -> the trace ids of its attempts, in the order of that task's `TaskSteps.paths`
    attempt_traces: dict[tuple[str, str], list[str | None]] = field(default_factory=dict)

    def worst_steps(self, variant: str, n: int = 10) -> list[tuple[TaskSteps, Any]]:
        """The steps that lose the most attempts, worst first: (task, step)."""
        rows = [(t, s) for t in self.steps if t.variant == variant for s in t.steps if s.lost]
        return sorted(rows, key=lambda ts: (-ts[1].lost, ts[1].rate, ts[0].task_id, ts[1].index))[:n]


def _executed(t: Trajectory) -> list[ToolCall]:
    return [c for c in with_handoffs(t) if not c.gap]


def _step_calls(calls: Sequence[ToolCall]) -> list[StepCall]:
    """Each call with whether it, or a later call of the same operation, succeeded (made good)."""
    keys = [operation_key(c) for c in calls]
    good: set[str] = set()
    ok = [False] * len(calls)
    for i in range(len(calls) - 1, -1, -1):
        if not calls[i].failed:
            good.add(keys[i])
        ok[i] = keys[i] in good
    return [StepCall(c.name, c.args, done) for c, done in zip(calls, ok, strict=True)]


def _call_text(c: ToolCall) -> str:
    if c.args is not None:
        return f"{c.name}({canonical_args(c.args)})"
    return f"{c.name}(#{c.args_hash})" if c.args_hash else f"{c.name}(?)"


def _expected(case: Case | None) -> list[ExpectedStep] | None:
    if case is None or not case.expects_steps:
        return None
    out = []
    for step in case.expected_steps:
        rule = args_rule(case, step.tool)
        out.append(ExpectedStep(step.tool, step.args, rule.matches))
    return out


def _right(step: ExpectedStep, call: ToolCall) -> bool:
    """Whether a call is right for a step (its tool, and the case's argument rule; a comparison that fails: no)."""
    try:
        return step.tool == call.name and step.matches(step.args, call.args)
    except ComparisonError:
        return False


def _skips(case: Case | None) -> bool:
    """Whether other calls may come between two steps: every match mode but `strict` (trajectory_match's)."""
    return case is None or case.match_mode != "strict"


def _equivalence(cases: Mapping[str, Case], notes: list[str]) -> dict[str, Equivalence]:
    out: dict[str, Equivalence] = {}
    for case_id, case in cases.items():
        reference = case.raw.get("equivalence")
        if not reference:
            continue
        try:
            fn = load_callable(str(reference))
        except Exception as exc:  # a broken checker is said, and answers are compared as text
            notes.append(f"case {case_id}: equivalence {reference} not loaded ({exc}); answers compared as text")
            continue
        out[case_id] = _guarded(fn, case_id, str(reference), notes)
    return out


def _guarded(fn: Any, case_id: str, reference: str, notes: list[str]) -> Equivalence:
    def same(a: str, b: str) -> bool:
        try:
            return bool(fn(a, b))
        except Exception as exc:
            message = (
                f"case {case_id}: equivalence {reference} raised {type(exc).__name__}: {exc}; counted as different"
            )
            if message not in notes:
                notes.append(message)
            return False

    return same


def reliability(
    trajectories: Sequence[Trajectory],
    outcomes: Sequence[Outcome],
    cases: Mapping[str, Case],
    environments: Mapping[str, Mapping[str, str | None]] | None = None,
    pair: tuple[str, str] | None = None,
    vary: Sequence[str] = (),
    z: float = 1.96,
    told: Told = quiet,
) -> Reliability:
    """Every figure of the module docstring, for the attempts the outcomes count (by trace id). `told`: how
    far the measure of the tasks' consistency is (`properties`)."""
    by_trace = {t.trace_id: t for t in trajectories}
    notes: list[str] = []
    records = []
    per_task: dict[tuple[str, str], list[tuple[tuple[list[StepCall], ...], bool]]] = {}
    traces: dict[tuple[str, str], list[str | None]] = {}
    for o in sorted(outcomes, key=lambda o: (o.variant, o.task_id, o.attempt)):
        t = by_trace.get(o.trace_id or "")
        executed = _executed(t) if t is not None else []
        calls = logical_calls(executed)
        records.append(
            AttemptRecord(
                variant=o.variant,
                task_id=o.task_id,
                attempt=o.attempt,
                passed=o.passed,
                error=o.error,
                output=t.output if t is not None else None,
                # calls one response asked for together, in one fixed order (`model.asked`): the same trajectory
                trajectory=tuple(_call_text(c) for c in in_order_of(calls, _call_text)),
            )
        )
        made_good = _step_calls(executed)
        position = {id(c): i for i, c in enumerate(executed)}
        readings = [executed, calls]
        expected = _expected(cases.get(o.task_id))
        if expected and parallel(executed):  # and in the order of the steps they pair with, as trajectory_match
            rank = by_steps(expected, _right)  # read first: of readings that do as many steps right, the last is shown
            readings = [in_order_of(executed, rank), in_order_of(calls, rank), *readings]
        paths = tuple([made_good[position[id(c)]] for c in reading] for reading in readings)
        per_task.setdefault((o.variant, o.task_id), []).append((paths, o.passed))
        traces.setdefault((o.variant, o.task_id), []).append(o.trace_id)
    props = properties(records, z=z, equivalence=_equivalence(cases, notes), told=told)
    steps = [
        task_steps(v, tid, attempts, _expected(cases.get(tid)), _skips(cases.get(tid)))
        for (v, tid), attempts in sorted(per_task.items())
    ]
    for found in steps:  # a case's compare function that failed: named once, on the cases it touches
        for error in found.errors:
            note = f"case {found.task_id}: {error}; its steps' arguments count as not right"
            if note not in notes:
                notes.append(note)
    envs: dict[str, EnvSummary] = {}
    comparison = None
    if environments is not None:
        rows = [(o.variant, o.task_id, environments.get(o.trace_id or "", {})) for o in outcomes]
        envs = summarize_environments(rows)
        if pair is not None and pair[0] in envs and pair[1] in envs:
            comparison = compare_environments(envs[pair[0]], envs[pair[1]], vary)
    return Reliability(props, steps, tool_rows(steps), envs, comparison, notes, traces)


def lake_rows(rel: Reliability | None, run_id: str) -> list[dict[str, Any]]:
    """The per-step rows of one run as `LAKE/step_reliability/` keeps them (`scoring.store`)."""
    if rel is None:
        return []
    return [
        {
            "run_id": run_id, "variant": t.variant, "task_id": t.task_id, "step": s.index, "tool": s.tool,
            "attempts": t.attempts, "reached": s.reached, "called": s.called, "right_args": s.right_args,
            "succeeded": s.succeeded, "rate": None if math.isnan(s.rate) else s.rate,
            "diverged_here": t.divergence.get(s.index, 0), "product_of_rates": t.product,
            "end_to_end": t.end_to_end,
        }
        for t in rel.steps
        for s in t.steps
    ]  # fmt: skip
