"""A seeded run's verdicts do not depend on machine load (issue 19): the demo run twice with the same seed
while CPU hogs load the machine gives identical scores, release categories, fault outcomes and
report.json, but for what is by nature about when and how fast it ran (the run id, the dates, the
latency percentiles).

Why it holds: retry waits and injected rate limits are measured on each attempt's logical clock (the
sleeps the agent asked for and its model calls, `instrumentation/clock.py`), not by wall time, so an
impatient retry stays impatient however long the loaded machine took between two calls.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

# what differs between two runs by nature: when they ran (run and trace ids, dates), how fast (latency) and
# where their lake lies (the report names it, for provenance)
_BY_NATURE = {"selected_by", "date_from", "date_to", "runs", "p50_latency_ms", "p95_latency_ms", "lake", "trace_id"}


@pytest.fixture
def cpu_hogs() -> Iterator[None]:
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def _demo(out: Path) -> None:
    cmd = [sys.executable, "-m", "tracevals", "demo", "-k", "2", "--seed", "0", "--out", str(out), "--format", "json"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)


def _without_nature(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nature(v) for k, v in value.items() if k not in _BY_NATURE}
    if isinstance(value, list):
        return [_without_nature(v) for v in value]
    return value


def _scores(lake: Path) -> list[tuple[Any, ...]]:
    return (
        duckdb.connect()
        .execute(
            f"SELECT variant, task_id, attempt, evaluator, passed, score, reason, details "
            f"FROM read_parquet('{lake}/scores/*.parquet') ORDER BY ALL"
        )
        .fetchall()
    )


def test_the_same_seed_gives_the_same_verdicts_on_a_loaded_machine(tmp_path: Path, cpu_hogs: None) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _demo(first)
    _demo(second)
    assert _scores(first / "lake") == _scores(second / "lake")
    one = json.loads((first / "report.json").read_text())
    two = json.loads((second / "report.json").read_text())
    assert one["variants"]["candidate"]["categories"] == two["variants"]["candidate"]["categories"]
    assert one["fault_outcomes"] == two["fault_outcomes"]
    assert _without_nature(one) == _without_nature(two)
