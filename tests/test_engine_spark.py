"""The Spark adapter (`tracevals score --engine spark`): the rows of `--engine local`, row for row.

pyspark is not in the lock (the `spark` extra: about 650 MB, and Java 17), so this file is skipped unless it
is importable. To run it (docs/scale.md): `make test-spark` (pyspark from bench/.venvs/spark on PYTHONPATH), or

    python -m venv /tmp/spark-venv && /tmp/spark-venv/bin/pip install -r requirements.lock
    /tmp/spark-venv/bin/pip install -e '.[spark]'
    /tmp/spark-venv/bin/python -m pytest tests/test_engine_spark.py
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.engine_lakes import CASES, SPLIT, T0, check_summary_run, lake_fixture, on_engine, rows

from tracevals.queries.selection import Selection
from tracevals.scoring.offline import score_lake

pytest.importorskip("pyspark", reason="the spark extra is not installed: pip install 'tracevals[spark]'")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java 17 on the PATH", allow_module_level=True)

import tracevals.scoring.engine_spark  # noqa: F401 (after the skips: the engine imports)


@pytest.fixture(scope="module", autouse=True)
def spark_session() -> Iterator[None]:
    from tracevals.scoring.engine_spark import _spark

    session = _spark(2)
    try:
        yield
    finally:
        session.stop()


lake = lake_fixture("spark")


@pytest.mark.parametrize(
    "selection", [None, Selection(fraction=0.5, seed=3), Selection(since=T0 + dt.timedelta(minutes=10))]
)
def test_spark_scores_equal_one_process(lake: Path, selection: Selection | None) -> None:
    local = score_lake(lake, tasks=CASES, selection=selection, write=False)
    on_spark = on_engine("spark", lake, tasks=CASES, selection=selection, write=False, workers=2)
    assert local.scores.height > 0
    assert rows(on_spark.scores).equals(rows(local.scores))
    if selection is None:
        assert on_spark.scores.filter(session_id=SPLIT).get_column("trace_id").n_unique() == 2


def test_a_summary_run_writes_from_the_groups_and_counts_as_one_process(lake: Path, tmp_path: Path) -> None:
    """`--summary` (keep_scores=False): each group writes its own scores file (fixtures/engine_lakes.py)."""
    check_summary_run("spark", lake, tmp_path)
