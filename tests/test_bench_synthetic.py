"""The scoring benchmarks' synthetic lake (bench/synthetic.py) is what today's writers write: every row's
canonical columns are the lake normalizer's answer for that row's own attributes, so a benchmark never
measures a path the collector no longer takes (issue 38: its generator wrote normalizer-2 rows)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tracevals.lake.schema import CANONICAL_FIELDS, SPAN_SCHEMA
from tracevals.spans.normalize import NORMALIZER_VERSION, normalize

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

synthetic = pytest.importorskip("synthetic")


def test_every_generated_row_is_the_normalizers_answer_for_its_attributes(tmp_path: Path) -> None:
    written = synthetic.write_lake(tmp_path / "lake", 300, seed=3)
    files = sorted((tmp_path / "lake" / "spans").rglob("*.parquet"))
    rows = [row for f in files for row in pq.read_table(f).to_pylist()]
    assert len(rows) == written > 2000
    assert {r["normalizer_version"] for r in rows} == {NORMALIZER_VERSION}
    assert pq.read_schema(files[0]).remove_metadata() == SPAN_SCHEMA.remove_metadata()
    canonical = [f.name for f in CANONICAL_FIELDS]
    for row in rows:
        expected = normalize(json.loads(row["attributes"]), row["name"], row["status_code"])
        assert {k: row[k] for k in canonical} == {k: expected[k] for k in canonical}, row["span_id"]
        assert "@@" not in json.dumps(row, default=str)  # every placeholder filled in
    kinds = {r["kind"] for r in rows}
    assert {"llm", "tool", "agent", "handoff", "session_end"} <= kinds
    tools = [r for r in rows if r["kind"] == "tool"]
    assert all(r["tool_args"] and r["tool_args_hash"] and r["tool_call_id"] for r in tools)
    assert len({r["tool_args_hash"] for r in tools}) > 100  # digests of each session's own arguments
    assert len({r["trace_id"] for r in rows}) == 300


def test_the_scale_curves_breakdown_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make bench`'s scale curve times the nightly job's steps one by one (`--phase breakdown`); that phase
    had gone out of step with the scoring job it takes apart (`_Job.tasks` moved) and the whole curve failed
    in `make bench` (the runs of it by hand skipped the phase): run it on a small lake."""
    compare_scale = pytest.importorskip("compare_scale")
    import scoring  # bench/scoring.py: the scale curve's lake

    monkeypatch.setenv("POLARS_MAX_THREADS", "1")  # the phase sets it for its process; restored after
    scoring.write_lake(tmp_path / "lake", 150, 7)
    out = compare_scale.phase_breakdown(tmp_path / "lake")
    assert out["traces"] == 150 and out["groups"] >= 1 and out["all_scores"] > out["traces"]


def test_the_baseline_comparison_says_where_scores_differ() -> None:
    """`scores identical: NO` alone told nobody whether a verdict moved: the line names, per evaluator, the
    verdicts that differ, the evaluators one side alone has and the other columns that differ."""
    compare_scale = pytest.importorskip("compare_scale")
    import polars as pl

    rows = {"trace_id": ["t1", "t1", "t2", "t2"], "evaluator": ["a", "b", "a", "b"], "evaluator_version": [1] * 4}
    before = pl.DataFrame({**rows, "passed": [True, False, True, None], "score": [1.0, 0.0, 1.0, None]})
    after = pl.concat(
        [
            before.with_columns(evaluator_version=pl.lit(2, pl.Int64), score=pl.Series([1.0, 0.5, 1.0, None])),
            pl.DataFrame({"trace_id": ["t1"], "evaluator": ["c"], "evaluator_version": [1], "passed": [True],
                          "score": [1.0]}),
        ]
    )  # fmt: skip
    line = compare_scale.verdict_changes(before, after)
    assert line == (
        "verdicts (passed, score) the same on 2 rows of 1 evaluators; differ: b 1 of 2; only after: c 1; "
        "other columns that differ: evaluator_version"
    )
    assert (
        compare_scale.verdict_changes(before, before) == "verdicts (passed, score) the same on 4 rows of 2 evaluators"
    )


def test_the_scale_curve_projects_only_the_phases_that_run_at_the_next_size() -> None:
    """`make bench` skipped the 10^7-span size it had time for: its projection grew everything the 10^6 size
    ran, the breakdown, the one-worker run and the baseline's scores included, none of which run at 10^7, and
    left out the compaction and the floor, which do."""
    compare_scale = pytest.importorskip("compare_scale")
    import argparse

    args = argparse.Namespace(floor_spans=1_000_000, identical_spans=1_000_000, breakdown_max=1_000_000)
    at_1e6 = {
        "size": 1_000_000, "build_wall": 10.0, "compact_seconds": 20.0, "floor_seconds": 1.0,
        "nightly_seconds": 5.0, "one_worker_seconds": 12.0, "identical_wall": 40.0, "breakdown_wall": 25.0,
    }  # fmt: skip
    assert compare_scale.projected_seconds(at_1e6, 10_000_000, args) == pytest.approx(360.0)
    at_1e5 = {"size": 100_000, "build_wall": 1.0, "compact_seconds": 2.0, "floor_seconds": 0.1, "nightly_seconds": 0.5}
    # at 10^6 every phase runs; the three the size before did not run count as its nightly job
    assert compare_scale.projected_seconds(at_1e5, 1_000_000, args) == pytest.approx((3.6 + 3 * 0.5) * 10)
    at_1e5["breakdown_wall"] = 2.5
    assert compare_scale.projected_seconds(at_1e5, 1_000_000, args) == pytest.approx((3.6 + 2 * 0.5 + 2.5) * 10)
