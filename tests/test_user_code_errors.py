"""Issue 35: errors in user code never abort a report. A case's `compare` function that cannot be loaded
or raises is a finding on the attempts of that case (`comparison_error`), the per-step statistics count
its step's arguments as not right, and the report names it once; every other case is reported as usual."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tracevals.evaluators import evaluate_all
from tracevals.model.tasks import case_from_dict
from tracevals.model.trajectory import ToolCall, Trajectory
from tracevals.report import build_report


def attempt(task: str, n: int) -> Trajectory:
    calls = (ToolCall("search", {"q": "printer"}, result="[]", effect="read"),)
    return Trajectory(trace_id=f"{task}-{n}", tool_calls=calls, run_id="r", task_id=task, attempt=n, variant="v",
                      output="done", start_ms=1.0, end_ms=2.0)  # fmt: skip


@pytest.fixture
def checks_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "raising_checks.py").write_text(
        textwrap.dedent(
            """
            def same_query(expected, actual):
                raise KeyError("q")
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "raising_checks"
    sys.modules.pop("raising_checks", None)


@pytest.mark.parametrize(
    ("reference", "why"),
    [
        ("no_such_module:same_query", "not loaded: cannot import 'no_such_module'"),
        ("raising_checks:same_query", "raised KeyError: 'q'"),
    ],
)
def test_a_broken_compare_function_is_a_finding_named_once(checks_module: str, reference: str, why: str) -> None:
    broken = {"tool": "search", "args": {"q": "printer"}}
    cases = {
        c.case_id: c
        for c in (
            case_from_dict(
                {
                    "case_id": "broken",
                    "input": "x",
                    "expected_steps": [broken],
                    "match": {"overrides": {"search": {"compare": reference}}},
                }
            ),
            case_from_dict({"case_id": "fine", "input": "x", "expected_steps": [broken]}),
        )
    }
    ts = [attempt(task, n) for task in ("broken", "fine") for n in (1, 2)]
    scores = evaluate_all(ts, cases)
    data = build_report(ts, scores, cases, {}, k=2)  # once: a traceback from the per-step statistics
    by_task = {o.trace_id: o for o in data.outcomes}
    for n in (1, 2):
        failing = [f for f in by_task[f"broken-{n}"].findings if f.fails]
        assert [(f.evaluator, f.kind) for f in failing] == [("trajectory_match", "comparison_error")]
        assert why in failing[0].message and failing[0].evidence == {"compare": reference}
        assert by_task[f"fine-{n}"].passed
    assert data.reliability is not None
    notes = [n for n in data.reliability.notes if reference in n]
    assert len(notes) == 1 and notes[0].startswith(f"case broken: comparison {reference} {why}")
    step = {t.task_id: t for t in data.reliability.steps}["broken"].steps[0]
    assert (step.reached, step.called, step.right_args, step.succeeded) == (2, 2, 0, 0)
