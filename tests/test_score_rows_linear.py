"""Score rows are linear in the input: one row per (trace, evaluator) whatever the parent structure.

A trace of N parentless spans (an exporter that never sets a parent, a flat log of calls) used to give N
rows per evaluator that reads the trace's root (N² rows in all): 10 spans made 100 `session_completeness`
rows, 76,500 made 8.8 million. Here flat traces of 10 to 10,000 spans, from production and from a harness
run (whose root carries what the attempt recorded), each give exactly one row per evaluator.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tracevals.lake.writer import LakeWriter
from tracevals.model.tasks import case_from_dict
from tracevals.scoring.offline import score_lake

SIZES = (10, 100, 1_000, 10_000)


def _flat_lake(lake: Path, harness: bool) -> None:
    """One trace per size in SIZES, every span without a parent; harness traces carry the run's ids and
    an output on every span (so every one of them looks like the attempt's root)."""
    start = time.time_ns() - 3 * 3600 * 10**9
    rows = []
    for t, size in enumerate(SIZES, 1):
        for s in range(size):
            at = start + s * 1000
            row = {"trace_id": f"{t:032x}", "span_id": f"{s + 1:016x}", "name": f"call {s}", "kind": "llm",
                   "operation": "chat", "model": "m", "start_time": at, "end_time": at + 500}  # fmt: skip
            if harness:
                row |= {"run_id": "flat", "task_id": "t1", "attempt": t, "variant": "v", "attempt_output": "42"}
            rows.append(row)
    LakeWriter(lake).write_rows(rows)


@pytest.mark.parametrize("harness", [False, True], ids=["production", "harness"])
def test_flat_traces_give_one_row_per_trace_and_evaluator(tmp_path: Path, harness: bool) -> None:
    lake = tmp_path / "lake"
    _flat_lake(lake, harness)
    cases = [case_from_dict({"case_id": "t1", "input": "q", "success_criteria": {"must_include": ["42"]}})]
    run = score_lake(lake, tasks=cases if harness else None, write=False)
    evaluators = run.scores.get_column("evaluator").unique().to_list()
    assert "session_completeness" in evaluators
    assert run.traces == len(SIZES)
    # rows = traces x evaluators, each (trace, evaluator) once
    assert run.scores.height == len(SIZES) * len(evaluators)
    assert run.scores.select("trace_id", "evaluator").is_duplicated().sum() == 0
