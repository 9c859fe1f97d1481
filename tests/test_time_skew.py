"""Time is read on the reader's clock (`tracevals.lake.clock`): a clock-skewed client never decides a verdict.

A production lake that should fail (the night's pass rate fell: tests/fixtures/production_traffic.py) gets
sessions from clients whose clocks are wrong: one day ahead, stamped 2262, stamped 1970, and a span that
ends before it starts. "The night" used to be the latest date holding spans, so one session from a client a
day ahead made the gate judge that day (one clean session: PASS). Now every window caps at now plus the
skew allowance, the gate still fails the real night, and the odd times are counted and reported.
Late sessions: one stamped yesterday that arrives after last night's run is scored by the next nightly
`score --since yesterday`.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures.production_traffic import Traffic, send_odd_sessions, send_production_traffic

from tracevals.cli import main
from tracevals.collector.testing import running_collector
from tracevals.lake.writer import LakeWriter
from tracevals.queries import open_lake

NOW = dt.datetime.now(dt.timezone.utc)
TODAY = NOW.date()


@pytest.fixture(scope="module")
def skewed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Traffic, dict[str, int]]]:
    lake = tmp_path_factory.mktemp("skewed") / "lake"
    with running_collector(lake) as collector:
        endpoint = f"http://127.0.0.1:{collector.http_port}"
        traffic = send_production_traffic(endpoint, TODAY - dt.timedelta(days=1))  # the night: yesterday
        odd = send_odd_sessions(endpoint, TODAY)
    yield lake, traffic, odd


def test_a_skewed_client_does_not_decide_the_night_and_the_gate_still_fails(skewed: tuple[Path, Traffic, dict]) -> None:
    lake, traffic, odd = skewed
    assert (lake / "spans" / "date=2262-04-01").is_dir()  # the odd spans are kept in the lake
    result = CliRunner().invoke(main, ["gate", "--lake", str(lake), "--format", "json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["passed"] is False and doc["night"] == traffic.night.isoformat()  # not tomorrow, not 2262
    quality = doc["data_quality"]
    assert {k: quality[k] for k in odd} == odd  # counted, each kind
    assert quality["latest_future_start"].startswith("2262-04-01")
    table = CliRunner().invoke(main, ["gate", "--lake", str(lake)])
    assert table.exit_code == 1 and table.stdout.startswith(f"FAIL: the night of {traffic.night}")
    notes = [line for line in table.stdout.splitlines() if line.startswith("  note: data quality: ")]
    assert len(notes) == 3 and "8 spans start after" in notes[0] and "future-dated" in notes[0]
    assert "4 spans start before 2000" in notes[1] and "1 spans end before they start" in notes[2]


def test_an_explicit_window_past_now_is_capped_too(skewed: tuple[Path, Traffic, dict]) -> None:
    lake, traffic, _ = skewed
    far = (TODAY + dt.timedelta(days=400)).isoformat()
    result = CliRunner().invoke(main, ["gate", "--lake", str(lake), "--until", far, "--format", "json"])
    assert result.exit_code == 1 and json.loads(result.stdout)["night"] == traffic.night.isoformat()


def test_the_report_and_score_say_the_odd_times(skewed: tuple[Path, Traffic, dict], tmp_path: Path) -> None:
    lake, _, odd = skewed
    out = tmp_path / "night.json"
    report = CliRunner().invoke(main, ["report", "--lake", str(lake), "--out", str(out), "--format", "json"])
    assert report.exit_code == 0, report.output
    assert json.loads(report.stdout)["data_quality"]["future_dated"] == odd["future_dated"]
    assert sum(line.startswith("note: data quality: ") for line in report.stderr.splitlines()) == 3
    scored = CliRunner().invoke(main, ["score", "--lake", str(lake), "--no-write", "--format", "json"])
    assert scored.exit_code == 0, scored.output
    sessions = {row["session_id"] for row in json.loads(scored.stdout)}
    assert sessions and not any("2262" in s or str(TODAY + dt.timedelta(days=1)) in s for s in sessions)
    assert sum(line.startswith("warning: data quality: ") for line in scored.stderr.splitlines()) == 3


def _session(lake: Path, sid: str, start: dt.datetime) -> None:
    t = int(start.timestamp() * 1e9)
    LakeWriter(lake).write_rows(
        [{"trace_id": f"{abs(hash(sid)) % 10**30:032x}", "span_id": f"{s + 1:016x}", "name": "turn",
          "parent_span_id": None if s == 0 else f"{1:016x}", "kind": "agent" if s == 0 else "llm",
          "session_id": sid, "start_time": t + s * 1000, "end_time": t + 10**6} for s in range(3)]
    )  # fmt: skip


def test_a_late_session_of_yesterday_is_scored_by_the_next_nightly_run(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    midnight = dt.datetime.combine(TODAY, dt.time(), tzinfo=dt.timezone.utc)
    _session(lake, "on-time", midnight - dt.timedelta(hours=20))
    nightly = ["score", "--lake", str(lake), "--format", "json"]
    # last night's run: `--since yesterday` as of yesterday is the day before yesterday
    last_night = CliRunner().invoke(main, [*nightly, "--since", str(TODAY - dt.timedelta(days=1))])
    assert {r["session_id"] for r in json.loads(last_night.stdout)} == {"on-time"}
    _session(lake, "late", midnight - dt.timedelta(minutes=10))  # stamped yesterday, arrived after that run
    time.sleep(0.01)
    tonight = CliRunner().invoke(main, [*nightly, "--since", str(TODAY)])  # tonight's `--since yesterday`
    assert tonight.exit_code == 0, tonight.output
    assert {r["session_id"] for r in json.loads(tonight.stdout)} == {"late"}  # scored; on-time not again
    again = CliRunner().invoke(main, [*nightly, "--since", str(TODAY)])
    assert json.loads(again.stdout) == []  # once scored, no longer late
    con = open_lake(lake)
    assert con.execute("SELECT count(DISTINCT session_id) FROM scores").fetchone() == (2,)


def test_follow_scores_no_future_dated_session_and_says_so(tmp_path: Path) -> None:
    from tracevals.lake.lake import Lake
    from tracevals.scoring.job import ScoringJob
    from tracevals.scoring.live import Follower

    lake = tmp_path / "lake"
    _session(lake, "now", NOW - dt.timedelta(minutes=5))
    _session(lake, "tomorrow", NOW + dt.timedelta(days=1))  # a client one day ahead
    follower = Follower(ScoringJob(Lake.open(lake), write=False), idle_s=0.0)
    said: list[list[Path]] = []
    follower.on_future = said.append
    scored = set()
    for _ in range(3):
        rows = follower.poll()
        scored |= set(rows.get_column("session_id").to_list()) if rows.height else set()
    assert scored == {"now"}
    [[partition]] = said  # said once
    assert partition.parent.name == f"date={(NOW + dt.timedelta(days=1)).date()}"
