"""`report` and `gate` say how far their work is, on a terminal: a report of a large run (the 10^6-span lake's,
129,506 attempts) took 83 s with no word. The stages tell a `Told` each phase as it starts (and, for the measure
of each task's consistency, how many tasks of how many); the commands draw it as a transient bar on stderr when
stderr is a terminal, and nothing elsewhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.demo_run import shared_demo
from fixtures.terminal import on_a_terminal

from tracevals.cli.shared.reports import report_from_lake
from tracevals.lake.lake import Lake
from tracevals.queries.selection import Selection


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_demo(tmp_path_factory) / "lake"


def _phases(told: list[tuple[str, int, int | None]]) -> list[str]:
    """The phases in the order they started (each once)."""
    return [p for i, (p, _, _) in enumerate(told) if i == 0 or told[i - 1][0] != p]


def test_the_report_is_told_each_phase_and_each_task_measured(lake: Path) -> None:
    told: list[tuple[str, int, int | None]] = []
    data = report_from_lake(Lake.open(lake), Selection(), None, told=lambda *a: told.append(a))
    attempts = len(data.outcomes)
    computed = data.meta["scores_computed"]
    assert _phases(told) == [
        "reading the attempts",
        f"reading the stored scores of {attempts:,} attempts",
        *([f"scoring {computed:,} attempts with no stored score"] if computed else []),
        "reading the attempts' runs and environments",
        "the figures of each variant",
        "the consistency of each task",
    ]
    # every task of every variant, counted one by one up to their number
    tasks = sum(len(p.tasks) for p in data.reliability.properties.values())
    assert tasks > 10
    assert [(d, t) for p, d, t in told if p == "the consistency of each task"] == [(i, tasks) for i in range(tasks + 1)]
    # the same report as one nobody watches
    quiet = report_from_lake(Lake.open(lake), Selection(), None)
    assert quiet.summaries == data.summaries and quiet.reliability == data.reliability


def test_every_attempt_scored_again_is_a_phase_of_its_own(lake: Path) -> None:
    """Cases other than those the run kept (a --tasks file of other bytes): every attempt is scored now."""
    from tracevals.scoring.runs import kept_cases

    cases = {c.case_id: c for c in kept_cases(Lake.open(lake)).cases}
    assert cases
    told: list[tuple[str, int, int | None]] = []
    report = report_from_lake(Lake.open(lake), Selection(), cases, tasks_sha256="0" * 64,
                              told=lambda *a: told.append(a))  # fmt: skip
    assert report.meta["scores_stored"] == 0
    assert f"scoring {len(report.outcomes):,} attempts with no stored score" in _phases(told)


def test_report_and_gate_draw_a_bar_on_a_terminal_and_nothing_elsewhere(lake: Path, tmp_path: Path) -> None:
    piped = tmp_path / "piped.json"
    plain = subprocess.run(
        [sys.executable, "-m", "tracevals", "report", "--lake", str(lake), "--out", str(piped), "--format", "json"],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert "report:" not in plain.stderr  # stderr into a pipe or a file: no bar
    shown = tmp_path / "shown.json"
    code, drawn, out = on_a_terminal(["report", "--lake", str(lake), "--out", str(shown), "--format", "json"], "stderr")
    terminal = drawn.decode(errors="replace")
    assert code == 0, terminal
    # the last phase is drawn before the bar goes (the phases before it show for as long as they last)
    assert "report: writing shown.json" in terminal, terminal
    assert shown.read_bytes().replace(b"shown.json", b"piped.json") == piped.read_bytes()
    assert out.decode().replace("shown.json", "piped.json") == plain.stdout  # the data on stdout, untouched

    gate = ["gate", "--lake", str(lake), "--baseline", "baseline", "--candidate", "candidate", "--format", "json"]
    code, drawn, _ = on_a_terminal(gate, "stderr")
    terminal = drawn.decode(errors="replace")
    assert code in (0, 1), terminal
    assert "gate: the consistency of each task" in terminal, terminal


def test_a_trace_with_a_stale_score_is_scored_again_whole(lake: Path, tmp_path: Path) -> None:
    """A stored score of an older version of a built-in evaluator (another rule's verdict: an upgrade changed it)
    makes its trace scored again, every evaluator; the other traces' stored scores are used. Which are stale is
    decided before any score's details are read (a lake after such an upgrade may hold nothing else)."""
    import shutil

    import duckdb

    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    files = f"{copy}/scores/**/*.parquet"
    [(total,)] = duckdb.sql(f"SELECT count(*) FROM read_parquet('{files}')").fetchall()
    picked = [r[0] for r in duckdb.sql(
        f"SELECT DISTINCT trace_id FROM read_parquet('{files}') WHERE evaluator = 'tool_policy' ORDER BY 1 LIMIT 5"
    ).fetchall()]  # fmt: skip
    [(theirs,)] = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{files}') WHERE trace_id IN (SELECT unnest(?::VARCHAR[]))",
        params=[picked],
    ).fetchall()
    duckdb.sql(
        f"COPY (SELECT * REPLACE (evaluator_version - 1 AS evaluator_version, 'not json' AS details, "
        f"scored_at + INTERVAL 1 SECOND AS scored_at) FROM read_parquet('{files}') "
        f"WHERE evaluator = 'tool_policy' AND trace_id IN (SELECT unnest(?::VARCHAR[]))) "
        f"TO '{copy}/scores/part-9-stale.parquet' (FORMAT parquet)",
        params=[picked],
    )
    fresh = report_from_lake(Lake.open(lake), Selection(), None)
    again = report_from_lake(Lake.open(copy), Selection(), None)
    assert again.meta["scores_stored"] == total - theirs == fresh.meta["scores_stored"] - theirs
    assert again.meta["scores_computed"] == theirs  # every evaluator of those traces, as first stored
    assert again.summaries == fresh.summaries and again.reliability == fresh.reliability
