"""Shared fixtures: a lake in a temporary directory with tracevals' instrumentation writing to it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

import tracevals
from tracevals.instrumentation.content import set_capture


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    path = tmp_path / "lake"
    path.mkdir()
    return path


@pytest.fixture
def telemetry(lake: Path) -> Iterator[tracevals.Telemetry]:
    """Spans of the test go straight (no batching) into `lake`; content capture off by default."""
    set_capture(False)
    t = tracevals.instrument(lake=lake, batch=False, capture_content=False)
    yield t
    t.shutdown()
    set_capture(None)


# The suite is deterministic: the property tests try the same examples on every run (a run that explores at random
# found, once in several, a defect none of the others had: `test_a_key_read_only_on_some_names_is_no_value_elsewhere_
# whatever_its_type` keeps it). HYPOTHESIS_PROFILE=explore runs them at random, with more examples, by hand.
settings.register_profile("suite", derandomize=True, database=None)
settings.register_profile("explore", max_examples=1000, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs(name): needs something beyond the environment (fixtures/requirements.py)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    from fixtures.requirements import need

    for mark in item.iter_markers("needs"):
        need(mark.args[0])


@pytest.fixture(autouse=True)
def _no_collector_left_running() -> Iterator[None]:
    """A fault scenario that fails half-way leaves the `tracevals collect` processes it started: kill those
    a test started (the servers a test starts are stopped by it, pass or fail)."""
    import sys

    faults = sys.modules.get("fixtures.faults")
    before = len(faults.STARTED) if faults is not None else 0
    yield
    faults = sys.modules.get("fixtures.faults")
    if faults is not None:
        faults.reap_collectors(before)
