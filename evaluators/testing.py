"""A tiny factory of hand-built trajectories, for tests of evaluators (the built-ins' and plugins').

>>> from tracevals.evaluators.testing import call, trajectory, case
>>> t = trajectory(call("search", {"q": "x"}), call("delete", {"id": 1}, effect="irreversible"))
>>> ToolPolicy().evaluate(t, case(requires_confirmation=True)).passed
False
"""

from __future__ import annotations

from typing import Any

from tracevals.model.case import Case, ExpectedCall
from tracevals.model.tasks import case_from_dict
from tracevals.model.trajectory import SpanFacts, ToolCall, Trajectory

IDS: dict[str, Any] = {"session_id": "s-1", "run_id": "r-1", "task_id": "case-1", "attempt": 2, "variant": "candidate"}


def call(name: str, args: dict[str, Any] | None = None, **fields: Any) -> ToolCall:
    """A tool call; any `ToolCall` field by keyword (`error_type="429"`, `effect="write"`, ...)."""
    return ToolCall(name=name, args=args, **fields)


def trajectory(*calls: ToolCall, trace_id: str = "t-1", **fields: Any) -> Trajectory:
    """A trajectory of these calls with fixed ids (session s-1, run r-1, task case-1, attempt 2)."""
    return Trajectory(trace_id=trace_id, tool_calls=calls, **{**IDS, **fields})


def case(*steps: str | tuple[str, dict[str, Any]], **fields: Any) -> Case:
    """A `Case` with these expected steps (a tool name, or (tool, args)); other fields by keyword."""
    expected = tuple(ExpectedCall(s) if isinstance(s, str) else ExpectedCall(*s) for s in steps)
    return Case(case_id="case-1", input=fields.pop("input", "do it"), expected_steps=expected, **fields)


def case_json(**fields: Any) -> Case:
    """A `Case` from task-file JSON, validated like a task file line (`case_id` and `input` filled in)."""
    return case_from_dict({"case_id": "case-1", "input": "do it", **fields})


def complete(**fields: Any) -> SpanFacts:
    """Span facts of a complete attempt (root ended, an answer), overridden by keyword."""
    base: dict[str, Any] = {"span_count": 5, "root_present": True, "root_ended": True, "terminal": "answer"}
    return SpanFacts(**{**base, **fields})
