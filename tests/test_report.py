"""Tests for tracevals.report: each format is written to disk, read back and checked."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from tracevals.report import (
    CSV_COLUMNS,
    render_markdown,
    summary_rows,
    write_csv,
    write_json,
    write_markdown,
)
from tracevals.stats import Comparison, Outcome, VariantSummary, compare, summarize

META = {
    "run_id": "run-42",
    "commit": "abc1234",
    "lock_hash": "sha256:feed",
    "date": "2025-01-31",
    "seed": 0,
    "sample_fraction": 0.1,
}


def outcomes_for(variant: str, counts: dict[str, tuple[int, int]]) -> list[Outcome]:
    out = []
    for task_id, (n, c) in counts.items():
        for i in range(n):
            out.append(
                Outcome(
                    variant,
                    task_id,
                    i,
                    passed=i < c,
                    first_pass=i < c and i > 0,  # the first attempt of each task needed a retry
                    retries=1 if i == 0 else 0,
                    handoff=i == n - 1,
                    latency_ms=100.0 * (i + 1),
                    cost=0.01,
                    tokens=10,
                )
            )
    return out


@pytest.fixture()
def summaries() -> dict[str, VariantSummary]:
    # baseline: the acceptance set (n = 4, c = 3 / 1 / 0); candidate loses "a" and gains "b".
    outs = outcomes_for("baseline", {"a": (4, 3), "b": (4, 1), "c": (4, 0)})
    outs += outcomes_for("candidate", {"a": (4, 1), "b": (4, 2), "c": (4, 0), "d": (4, 4)})
    return summarize(outs, k=3)


@pytest.fixture()
def comparison(summaries: dict[str, VariantSummary]) -> Comparison:
    return compare(summaries["baseline"], summaries["candidate"])


def test_summary_rows(summaries: dict[str, VariantSummary]) -> None:
    rows = summary_rows(summaries)
    assert [r["variant"] for r in rows] == ["baseline", "candidate"]
    assert all(list(r) == list(CSV_COLUMNS) for r in rows)
    base = rows[0]
    assert base["runs"] == 12 and base["k"] == 3
    assert base["pass_hat_k"] == pytest.approx(1 / 12)  # hand calculation, see test_stats


def test_csv_round_trip(tmp_path: Path, summaries: dict[str, VariantSummary]) -> None:
    path = write_csv(tmp_path / "out" / "summary.csv", summaries)
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    required = {
        "variant",
        "runs",
        "first_success_rate",
        "final_success_rate",
        "avg_retries",
        "handoffs",
        "p50_latency_ms",
        "avg_cost",
        "pass_at_1",
        "pass_hat_k",
        "k",
        "wilson_low",
        "wilson_high",
        "worst_task",
    }
    assert required <= set(rows[0])
    base = {r["variant"]: r for r in rows}["baseline"]
    assert int(base["runs"]) == 12
    assert int(base["k"]) == 3
    assert float(base["pass_at_1"]) == pytest.approx(1 / 3)
    assert float(base["pass_hat_k"]) == pytest.approx(1 / 12)
    # hand calculation: Wilson 4/12 = [0.1381, 0.6094]
    assert float(base["wilson_low"]) == pytest.approx(0.1381, abs=5e-5)
    assert float(base["wilson_high"]) == pytest.approx(0.6094, abs=5e-5)
    assert base["worst_task"] == "c"
    # first_pass excludes attempt 0 of each task: a has 2 first passes, b 0, c 0 -> 2/12
    assert float(base["first_success_rate"]) == pytest.approx(2 / 12)
    assert float(base["final_success_rate"]) == pytest.approx(4 / 12)
    assert float(base["avg_retries"]) == pytest.approx(3 / 12)
    assert int(base["handoffs"]) == 3
    assert float(base["p50_latency_ms"]) == pytest.approx(250.0)
    assert float(base["avg_cost"]) == pytest.approx(0.01)
    assert not list(tmp_path.joinpath("out").glob(".*.tmp"))  # no temp file left behind


def test_json_round_trip(tmp_path: Path, summaries: dict[str, VariantSummary], comparison: Comparison) -> None:
    path = write_json(tmp_path / "report.json", summaries, comparison, META)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["meta"] == META
    base = doc["variants"]["baseline"]
    assert base["n"] == 12
    assert base["k_cap"] == 4 and base["k"] == 3 and base["k_requested"] == 3
    assert base["pass_at_1"] == pytest.approx(1 / 3)
    # hand calculation (see test_stats): pass^1..4 = 1/3, 1/6, 1/12, 0; pass@1..4 = 1/3, 1/2, 7/12, 2/3
    assert base["pass_hat_k"] == pytest.approx({"1": 1 / 3, "2": 1 / 6, "3": 1 / 12, "4": 0.0})
    assert base["pass_at_k"] == pytest.approx({"1": 1 / 3, "2": 0.5, "3": 7 / 12, "4": 2 / 3})
    assert base["wilson"] == pytest.approx([0.1381, 0.6094], abs=5e-5)
    assert base["worst_task"]["task_id"] == "c"
    tasks = {t["task_id"]: t for t in base["tasks"]}
    assert set(tasks) == {"a", "b", "c"}
    assert (tasks["c"]["n"], tasks["c"]["c"], tasks["c"]["rate"]) == (4, 0, 0.0)
    assert tasks["c"]["wilson"][0] == 0.0
    assert tasks["a"]["rate"] == 0.75

    cmp = doc["comparison"]
    assert [d["task_id"] for d in cmp["deltas"]] == ["a", "c", "b"]  # regressions first
    assert cmp["deltas"][0]["delta"] == pytest.approx(-0.5)
    assert cmp["deltas"][0]["regression"] is True
    assert cmp["deltas"][0]["baseline"] == {"n": 4, "c": 3, "rate": 0.75}
    assert [t["task_id"] for t in cmp["only_in_candidate"]] == ["d"]
    assert cmp["only_in_baseline"] == []
    assert (cmp["regressed"], cmp["improved"], cmp["unchanged"]) == (1, 1, 1)
    assert cmp["p_value"] == 1.0 and cmp["significant"] is False
    assert cmp["statement"] == comparison.statement
    assert cmp["common_tasks"] == 3
    # hand calculation, paired over a, b, c: (-0.5 + 0.25 + 0) / 3
    assert cmp["pass_at_1_delta"] == pytest.approx(-0.25 / 3)


def test_json_without_comparison_and_nan_is_null(tmp_path: Path) -> None:
    # No latency recorded -> NaN percentiles, which must not become the invalid JSON token NaN.
    s = summarize([Outcome("v", "a", 0, True, True)])
    assert math.isnan(s["v"].p50_latency_ms)
    text = write_json(tmp_path / "r.json", s).read_text(encoding="utf-8")
    assert "NaN" not in text
    doc = json.loads(text)
    assert doc["comparison"] is None and doc["meta"] == {}
    assert doc["variants"]["v"]["p50_latency_ms"] is None
    rows = list(csv.DictReader(write_csv(tmp_path / "r.csv", s).open(newline="", encoding="utf-8")))
    assert rows[0]["p50_latency_ms"] == ""


def test_markdown(tmp_path: Path, summaries: dict[str, VariantSummary], comparison: Comparison) -> None:
    path = write_markdown(tmp_path / "report.md", summaries, comparison, META)
    md = path.read_text(encoding="utf-8")
    assert md.index("run-42") < md.index("## Summary")  # meta at the top
    assert "abc1234" in md and "sha256:feed" in md
    # pooled success with counts and Wilson interval; pass^k at the headline k with its cap
    assert "0.333 (4/12) [0.138, 0.609]" in md
    assert "0.083 (k=3; min n=4)" in md
    assert "`c` 0.000 (0/4) [0.000, 0.490]" in md
    assert "0.167 (2/12) → 0.333 (4/12)" in md  # first-pass vs final success
    assert "3/12" in md  # handoffs with n
    section = md[md.index("## Regressions first") :]
    assert comparison.statement in section
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    # the regression comes first in the delta table
    assert rows[0].startswith("| `a` | 3/4 | 0.750 | 1/4 | 0.250 | -0.500 | **regression** |")
    assert rows[1].startswith("| `c` |") and rows[2].startswith("| `b` |")
    assert "Only in candidate (candidate, 1 not compared): `d` (4/4)" in section
    assert "(paired means over the 3 tasks both ran)" in section


def test_markdown_capped_k_and_escaping() -> None:
    s = summarize(
        [Outcome("v", "a|b", i, True, True) for i in range(2)]
        + [Outcome("v", "long", i, False, False) for i in range(5)],
        k=5,
    )
    md = render_markdown(s)
    assert "(k=2, capped from 5; min n=2)" in md
    assert "`a\\|b`" in md
    assert "## Regressions first" not in md  # no comparison given


def test_no_common_tasks(tmp_path: Path) -> None:
    s = summarize(outcomes_for("b", {"x": (2, 1)}) + outcomes_for("c", {"y": (2, 2)}))
    cmp = compare(s["b"], s["c"])
    doc = json.loads(write_json(tmp_path / "r.json", s, cmp).read_text(encoding="utf-8"))
    assert doc["comparison"]["deltas"] == [] and doc["comparison"]["pass_at_1_delta"] is None
    assert [t["task_id"] for t in doc["comparison"]["only_in_baseline"]] == ["x"]
    md = render_markdown(s, cmp)
    assert "No task ran under both variants." in md and "pass@1 delta n/a" in md


def test_report_files_are_created_with_the_users_umask(tmp_path: Path, summaries: dict[str, VariantSummary]) -> None:
    import os
    import stat

    before = os.umask(0o022)
    try:
        for mask, mode in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
            os.umask(mask)
            for name in ("r.md", "r.csv"):
                path = (write_markdown if name.endswith(".md") else write_csv)(tmp_path / f"{mask:o}-{name}", summaries)
                assert stat.S_IMODE(path.stat().st_mode) == mode, (name, oct(mask))
    finally:
        os.umask(before)


def test_markdown_says_which_k_was_used_never_none(summaries: dict[str, VariantSummary]) -> None:
    md = render_markdown(summaries, None, {"k": None, "z": 1.96, "runs": ["r1"], "selected_by": "latest run"})
    assert "None" not in md
    assert "| headline k | the smallest per-task n (used: 3) |" in md
