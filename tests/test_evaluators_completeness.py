"""`session_completeness` on hand-built span facts; one failing check at a time, then a crash."""

from __future__ import annotations

from typing import Any

import pytest

from tracevals.evaluators import SessionCompleteness
from tracevals.evaluators.testing import call, complete, trajectory


def test_a_complete_attempt_passes() -> None:
    result = SessionCompleteness().evaluate(trajectory(spans=complete(span_count=7)), None)
    assert result is not None
    assert (result.passed, result.score, result.reason) == (True, 1.0, "6/6 checks passed (7 spans), score=6/6=1.000")


@pytest.mark.parametrize(
    ("facts", "reason"),
    [
        ({"root_present": False, "root_ended": False}, "root span missing (never ended, or lost)"),
        ({"root_ended": False}, "root span not ended"),
        ({"orphan_spans": 2}, "2 spans point to a parent that is not in the lake"),
        ({"open_spans": 1}, "1 spans have no end time"),
        ({"dangling_calls": 1}, "1 requested tool calls never executed"),
        ({"terminal": None}, "no terminal state: no final answer, hand-off or error"),
        ({"turns_expected": 3, "session_traces": 2}, "turns missing: 3 expected, 2 in the lake"),
    ],
)
def test_each_check(facts: dict[str, Any], reason: str) -> None:
    result = SessionCompleteness().evaluate(trajectory(spans=complete(**facts)), None)
    assert result is not None
    # one of six checks fails: 5/6
    assert (result.passed, result.score) == (False, pytest.approx(5 / 6))
    assert result.reason == f"5/6 checks passed (5 spans), score=5/6=0.833; {reason}"


@pytest.mark.parametrize("terminal", ["answer", "handoff", "error"])
def test_every_terminal_state_counts(terminal: str) -> None:
    result = SessionCompleteness().evaluate(trajectory(spans=complete(terminal=terminal)), None)
    assert result is not None and result.passed


def test_a_gap_call_is_a_dangling_call() -> None:
    result = SessionCompleteness().evaluate(trajectory(call("a", gap=True), spans=complete()), None)
    assert result is not None and result.details["failed"] == ["no_dangling_call"]


def test_a_crash_fails_four_checks() -> None:
    """A process killed mid-attempt: the root and the agent span never ended (never exported), the model
    had asked for a tool call that never finished, no answer. Children point to the missing agent span."""
    crashed = complete(root_present=False, root_ended=False, orphan_spans=3, dangling_calls=1, terminal=None)
    result = SessionCompleteness().evaluate(trajectory(spans=crashed), None)
    assert result is not None
    assert (result.passed, result.score) == (False, pytest.approx(2 / 6))  # open spans and turns pass: 2/6
    assert result.details["failed"] == ["root", "no_orphan", "no_dangling_call", "terminal_state"]


def test_not_applicable_without_span_facts() -> None:
    assert SessionCompleteness().evaluate(trajectory(), None) is None
