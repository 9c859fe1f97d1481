"""Live scoring (`tracevals score --follow`): a session is scored once finished, and scored again when a
late span arrives. First the rules with a hand-driven clock, then the real command in a subprocess
while spans are being written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

import tracevals
from tracevals.demo import FailureRates, make_profile, order_support_agent, tasks_path
from tracevals.harness import run_cases
from tracevals.lake.lake import Lake
from tracevals.lake.schema import SPAN_SCHEMA
from tracevals.lake.writer import LakeWriter
from tracevals.model.tasks import load_cases
from tracevals.scoring.job import ScoringJob
from tracevals.scoring.live import Follower
from tracevals.simulator import ProfileRegistry, SimulatedModelServer

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)


def span(trace_id: str, span_id: str, parent: str | None, kind: str, session: str, **columns: Any) -> dict[str, Any]:
    """One lake row: a span of `session`, started and ended at T0."""
    row: dict[str, Any] = {field.name: None for field in SPAN_SCHEMA}
    row.update(
        trace_id=trace_id, span_id=span_id, parent_span_id=parent, name=kind, kind=kind, session_id=session,
        start_time=T0, end_time=T0, status_code="unset", attributes="{}", span_kind="internal",
    )  # fmt: skip
    row.update(columns)
    return row


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def follower(lake: Path, clock: Clock, sample: tuple[float, int] | None = None, **kw: Any) -> Follower:
    return Follower(job(lake, sample, write=False), idle_s=10, clock=clock, **kw)


def job(lake: Path, sample: tuple[float, int] | None = None, **fields: Any) -> ScoringJob:
    """The job `score --follow` builds: its sample is the selection's fraction and seed."""
    from tracevals.queries.selection import Selection

    selection = Selection(fraction=sample[0], seed=sample[1]) if sample else None
    return ScoringJob(Lake.open(lake), selection=selection, **fields)


def scored_sessions(frame: Any) -> set[str]:
    return set(frame.get_column("session_id").to_list()) if frame.height else set()


def test_a_session_is_scored_when_its_end_marker_and_roots_are_in(lake: Path) -> None:
    clock, writer = Clock(), LakeWriter(lake)
    live = follower(lake, clock)
    writer.write_rows([span("a" * 32, "1" * 16, "2" * 16, "tool", "s1", tool_name="lookup")])  # a child, first
    assert live.poll().height == 0  # its root has not arrived: not finished, and not quiet for 10 s yet
    writer.write_rows(
        [span("a" * 32, "2" * 16, None, "other", "s1"), span("a" * 32, "3" * 16, "2" * 16, "session_end", "s1")]
    )
    assert scored_sessions(live.poll()) == {"s1"}  # the explicit end: no need to wait
    assert live.poll().height == 0  # scored once


def test_without_an_end_marker_a_rooted_session_waits_for_quiet(lake: Path) -> None:
    clock, writer = Clock(), LakeWriter(lake)
    live = follower(lake, clock)
    writer.write_rows([span("b" * 32, "1" * 16, None, "other", "s2")])
    assert live.poll().height == 0
    clock.now += 9.9
    assert live.poll().height == 0  # 9.9 s of quiet < idle 10 s
    clock.now += 0.2
    assert scored_sessions(live.poll()) == {"s2"}


def test_a_crashed_session_is_scored_after_the_abandon_time(lake: Path) -> None:
    clock, writer = Clock(), LakeWriter(lake)
    live = follower(lake, clock)
    writer.write_rows([span("c" * 32, "1" * 16, "9" * 16, "tool", "s3", tool_name="refund_order")])  # root never came
    assert live.poll().height == 0  # read at t=1000
    clock.now += 50
    assert live.poll().height == 0  # no root: waits the abandon time (10 x idle = 100 s)
    clock.now += 51
    frame = live.poll()
    completeness = frame.filter(frame["evaluator"] == "session_completeness").row(0, named=True)
    assert not completeness["passed"] and "root span missing" in completeness["reason"]


def _scored_then_evicted(lake: Path, trace_id: str, session: str) -> tuple[Clock, LakeWriter, Follower]:
    """A follower that scored `session` (a root and its end marker) and, 31 s later, dropped its spans."""
    clock, writer = Clock(), LakeWriter(lake)
    live = follower(lake, clock, retain_s=30)
    writer.write_rows(
        [span(trace_id, "1" * 16, None, "other", session), span(trace_id, "2" * 16, "1" * 16, "session_end", session)]
    )
    assert scored_sessions(live.poll()) == {session}
    clock.now += 31
    live.poll()
    assert session not in live.sessions and session in live.evicted  # spans dropped after retain_s, id kept
    return clock, writer, live


def test_late_spans_rescore_and_memory_is_bounded(lake: Path) -> None:
    from tracevals.scoring.config import config_from_dict

    trace_id = "d" * 32
    _, writer, live = _scored_then_evicted(lake, trace_id, "s4")
    # keys required (a missing one is a warning by default): the late write's verdict shows it was re-scored
    live.config = config_from_dict({"retry_policy": {"require_idempotency_key": True}})
    late = span(trace_id, "3" * 16, "1" * 16, "tool", "s4", tool_name="send_message", tool_effect="write")
    writer.write_rows([late])
    frame = live.poll()  # the session is reloaded from the lake with its late span, and re-scored
    retry = frame.filter(frame["evaluator"] == "retry_discipline").row(0, named=True)
    assert retry["reason"].endswith("no idempotency key: send_message#1 (write)")
    assert live.sessions["s4"].scorings == 1 and live.sessions["s4"].traces == {trace_id}
    completeness = frame.filter(frame["evaluator"] == "session_completeness").row(0, named=True)
    assert "(3 spans)" in completeness["reason"]  # root and marker came back with the reload
    assert "root span" not in completeness["reason"]


def test_a_compaction_during_a_reload_loses_no_span(lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tracevals compact` replaces the files a reload just listed: the reload lists again and still finds
    every span of the session (in the compacted file)."""
    from tracevals.lake.compact import compact
    from tracevals.scoring import live as live_module

    trace_id = "e" * 32
    clock, writer, live = _scored_then_evicted(lake, trace_id, "s5")
    writer.write_rows([span(trace_id, "3" * 16, "1" * 16, "tool", "s5", tool_name="lookup")])
    read = live_module.read_span_files
    compactions = []

    def compacted_first(paths: Any, *args: Any) -> Any:
        reload = len(args) > 1 and args[1] is not None  # the reload's read of the listed files (some traces')
        if not compactions and reload:  # compact the hour under it: the file it listed is gone
            compactions.append(compact(lake, min_age_s=0))
        return read(paths, *args)

    monkeypatch.setattr(live_module, "read_span_files", compacted_first)
    frame = live.poll()
    assert compactions and compactions[0].files_out == 1
    completeness = frame.filter(frame["evaluator"] == "session_completeness").row(0, named=True)
    assert "(3 spans)" in completeness["reason"]
    # the compacted file holds only files already read: it is not taken for new spans
    clock.now += 31
    assert live.poll().height == 0


def test_sampling_skips_whole_sessions(lake: Path) -> None:
    from tracevals.lake.sampling import session_sampled

    clock, writer = Clock(), LakeWriter(lake)
    live = follower(lake, clock, sample=(0.5, 3))
    sessions = [f"s-{i}" for i in range(20)]
    writer.write_rows([span(f"{i:032x}", "1" * 16, None, "other", s) for i, s in enumerate(sessions)])
    assert live.poll().height == 0  # read at t=1000; rooted, but not quiet for 10 s yet
    clock.now += 11
    frame = live.poll()
    assert scored_sessions(frame) == {s for s in sessions if session_sampled(s, 0.5, 3)}
    assert 0 < len(scored_sessions(frame)) < 20
    assert all('"sample": {"fraction": 0.5, "seed": 3}' in d for d in frame.get_column("details"))


# --- the real command -----------------------------------------------------------------------------------


def wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 60.0) -> Any:
    """Poll until `condition()` is truthy; a bounded wait, not a timing assertion."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def stored(lake: Path, trace_id: str, evaluator: str) -> list[tuple[bool, str]]:
    if not any((lake / "scores").glob("*.parquet")):
        return []
    rows = duckdb.sql(
        f"select passed, reason from read_parquet('{lake}/scores/*.parquet') "
        f"where trace_id = '{trace_id}' and evaluator = '{evaluator}' order by scored_at"
    ).fetchall()
    return [(bool(p), str(r)) for p, r in rows]


@pytest.fixture
def follow_process(lake: Path, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    command = Path(sys.executable).with_name("tracevals")
    config = tmp_path / "keys.yaml"  # a missing idempotency key fails only where keys are required
    config.write_text("retry_policy: {require_idempotency_key: true}\n")
    args = [
        str(command),
        "score",
        "--lake",
        str(lake),
        "--follow",
        "--idle",
        "0.5",
        "--interval",
        "0.05",
        "--format",
        "json",
        "--config",
        str(config),
    ]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ})
    yield process
    if process.poll() is None:
        process.kill()
        process.wait(10)


def test_follow_scores_a_session_written_while_it_runs_and_rescores_a_late_span(
    lake: Path, follow_process: subprocess.Popen[str]
) -> None:
    registry = ProfileRegistry()
    registry.add(make_profile("follow-disciplined", FailureRates.zero()))
    [case] = [c for c in load_cases(tasks_path()) if c.case_id == "clear_01"]
    telemetry = tracevals.instrument(lake=lake, batch=False, capture_content=True)
    try:
        with SimulatedModelServer(registry=registry) as server:
            settings = {"base_url": server.base_url, "model": "follow-disciplined"}
            [attempt] = run_cases(order_support_agent, [case], k=1, run_id="follow", variant="live", settings=settings)
        first = wait_for(lambda: stored(lake, attempt.trace_id, "retry_discipline"), "the first scores")
        assert first == [(True, first[0][1])]
        root = duckdb.sql(
            f"select span_id from read_parquet('{lake}/spans/**/*.parquet') "
            f"where trace_id = '{attempt.trace_id}' and parent_span_id is null"
        ).fetchall()[0][0]
        parent = NonRecordingSpan(
            SpanContext(int(attempt.trace_id, 16), int(root, 16), is_remote=True, trace_flags=TraceFlags(1))
        )
        # A late span of the same trace: a write without an idempotency key, delivered after the scoring.
        with tracevals.session(attempt.context.session_id):
            audit = tracevals.tool(effect="write", name="audit_log")(lambda note: {"ok": True})
            with trace.use_span(parent, end_on_exit=False):
                audit(note="late")
        rescored = wait_for(
            lambda: (
                len(stored(lake, attempt.trace_id, "retry_discipline")) > 1
                and stored(lake, attempt.trace_id, "retry_discipline")
            ),
            "the re-score",
        )
        assert rescored[-1][0] is False and "no idempotency key: audit_log#3 (write)" in rescored[-1][1]
    finally:
        telemetry.shutdown()
    follow_process.send_signal(signal.SIGTERM)
    out, err = follow_process.communicate(timeout=30)
    assert follow_process.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    retry = [r for r in lines if r["trace_id"] == attempt.trace_id and r["evaluator"] == "retry_discipline"]
    assert [r["passed"] for r in retry] == [True, False]  # printed as scored: first, then superseded
    from tracevals.queries import open_lake

    newest = (
        open_lake(lake)
        .sql(f"select passed from scores where trace_id = '{attempt.trace_id}' and evaluator = 'retry_discipline'")
        .fetchall()
    )
    assert newest == [(False,)]  # the view keeps the newest row


def test_unreadable_files_and_folders_are_skipped_with_one_warning_each(
    lake: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    clock, writer = Clock(), LakeWriter(lake)
    live = follower(lake, clock)
    writer.write_rows(
        [span("d" * 32, "1" * 16, None, "other", "s9"), span("d" * 32, "2" * 16, "1" * 16, "session_end", "s9")]
    )
    [good] = list((lake / "spans").rglob("*.parquet"))
    partition = good.parent
    odd = lake / "spans" / partition.parent.name / "hour=xx"  # a folder that is no hour
    odd.mkdir()
    (odd / "part-odd.parquet").write_bytes(good.read_bytes())
    (partition / "part-corrupt.parquet").write_bytes(b"PAR1 not really")
    pq.write_table(pa.table({"what": ["a file of something else"]}), partition / "part-foreign.parquet")
    retyped = pq.read_table(good)
    retyped = retyped.set_column(
        retyped.schema.get_field_index("start_time"), "start_time", pa.array(["soon"] * retyped.num_rows)
    )
    pq.write_table(retyped, partition / "part-retyped.parquet")
    with caplog.at_level("WARNING", logger="tracevals.queries.live_source"):
        scores = live.poll()
        live.poll()  # listed again: no second warning
    assert scored_sessions(scores) == {"s9"}  # the valid session is scored all the same
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 4, warned
    for name, why in (
        ("part-odd", "not in a date=YYYY-MM-DD/hour=HH folder"),
        ("part-corrupt", "not a readable Parquet file"),
        ("part-foreign", "no span columns"),
        ("part-retyped", "column start_time is string"),
    ):
        assert any(name in w and why in w for w in warned), (name, warned)
    assert (partition / "part-corrupt.parquet").exists()  # left where it is


def test_a_file_of_too_many_rows_is_skipped_before_it_is_read(lake: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A small file of millions of dictionary-encoded rows took live scoring to 2.2 GB with nothing scored:
    the row count is in the footer, and past the cap the file is skipped with one warning, unread."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    clock, writer = Clock(), LakeWriter(lake)
    writer.write_rows(
        [span("d" * 32, "1" * 16, None, "other", "s9"), span("d" * 32, "2" * 16, "1" * 16, "session_end", "s9")]
    )
    [good] = list((lake / "spans").rglob("*.parquet"))
    one = pq.read_table(good).slice(0, 1)
    many = pa.concat_tables([one] * 5000)  # one row, 5,000 times: ~the 30 million of the report, scaled
    pq.write_table(many, good.parent / "part-many.parquet", use_dictionary=True)
    assert (good.parent / "part-many.parquet").stat().st_size < 64 * 1024
    live = follower(lake, clock, max_file_rows=1000)
    with caplog.at_level("WARNING", logger="tracevals.queries.live_source"):
        scores = live.poll()
    assert scored_sessions(scores) == {"s9"}  # the other file's session is scored
    [warning] = [r.getMessage() for r in caplog.records if "part-many" in r.getMessage()]
    assert "5,000 rows, over the 1,000" in warning and "tracevals score" in warning


# --- live scores = offline scores -----------------------------------------------------------------------


def _at(hours: float = 0, seconds: float = 0) -> datetime:
    from datetime import timedelta

    return T0 + timedelta(hours=hours, seconds=seconds)


SCORE_COLUMNS = ["trace_id", "session_id", "run_id", "task_id", "attempt", "variant", "evaluator",
                 "evaluator_version", "passed", "score", "reason", "details"]  # fmt: skip


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted(frame.select(SCORE_COLUMNS).iter_rows(), key=lambda r: (r[0], r[6]))


def _varied_lake(lake: Path, follow: Follower, clock: Clock, kept: Callable[[str], bool]) -> None:
    """Write a varied lake a few files at a time, polling `follow` between them as time passes:

    - two harness attempts of the demo agent (content as OTLP log records: `event_only`);
    - a session of two turns over two hours, the second turn's children (no session id on them) in a
      file of the first hour before its root (which names the session) in a file of the second hour;
    - a session scored, then a late write without an idempotency key (re-scored); another scored, its
      rows dropped after `retain_s`, then a late span (its rows read back from the lake, re-scored);
    - a crashed session (no root: abandoned), a trace without a session id, a corrupt file.

    `kept(session)`: whether the follower's sample keeps it (the sessions scored at each step are checked).
    """

    def expect(*names: str) -> set[str]:
        return {n for n in names if kept(n)}

    registry = ProfileRegistry()
    registry.add(make_profile("follow-equal", FailureRates(duplicate_send=0.5, blind_retry=0.5)))
    cases = [c for c in load_cases(tasks_path()) if c.case_id in ("clear_01", "clear_02")]
    telemetry = tracevals.instrument(lake=lake, batch=True, capture_content="event_only")
    try:
        with SimulatedModelServer(registry=registry) as server:
            settings = {"base_url": server.base_url, "model": "follow-equal"}
            run_cases(order_support_agent, cases, k=1, run_id="equal", variant="live", settings=settings, seed=3)
    finally:
        telemetry.shutdown()
    assert any((lake / "logs").rglob("*.parquet"))
    follow.poll()
    writer = LakeWriter(lake)
    a, b, c = "a1" * 16, "b2" * 16, "c3" * 16
    writer.write_rows([  # hour 0: turn 1 whole, turn 2's children (no session id), a session that ends
        span(a, "1" * 16, None, "agent", "split", start_time=_at(0), end_time=_at(0, 5)),
        span(a, "2" * 16, "1" * 16, "tool", "split", tool_name="lookup", start_time=_at(0, 1), end_time=_at(0, 2)),
        span(b, "3" * 16, "4" * 16, "tool", None, tool_name="send_message", tool_effect="write",
             start_time=_at(1, 1), end_time=_at(1, 2)),
        span(c, "5" * 16, None, "agent", "late", start_time=_at(0, 10), end_time=_at(0, 20)),
        span(c, "6" * 16, "5" * 16, "session_end", "late", start_time=_at(0, 20), end_time=_at(0, 20)),
    ])  # fmt: skip
    assert scored_sessions(follow.poll()) == expect("late")
    clock.now += 5
    d, e, f = "d4" * 16, "e5" * 16, "f6" * 16
    writer.write_rows([  # hour 1: turn 2's root and its end marker, a crash, a trace of no session
        span(b, "4" * 16, None, "agent", "split", start_time=_at(1), end_time=_at(1, 9)),
        span(b, "7" * 16, "4" * 16, "session_end", "split", start_time=_at(1, 9), end_time=_at(1, 9)),
        span(d, "8" * 16, "9" * 16, "tool", "crash", tool_name="refund_order", tool_effect="irreversible",
             start_time=_at(1, 3), end_time=_at(1, 4)),
        span(e, "a" * 16, None, "agent", None, start_time=_at(1, 5), end_time=_at(1, 6)),
        span(f, "b" * 16, None, "agent", "evicted", start_time=_at(1, 7), end_time=_at(1, 8)),
        span(f, "c" * 16, "b" * 16, "session_end", "evicted", start_time=_at(1, 8), end_time=_at(1, 8)),
    ])  # fmt: skip
    # the partition of hour 1 (the demo attempts above are in today's partitions, maybe of the same hour)
    at = _at(1)
    [hour_1] = {p.parent for p in (lake / "spans" / f"date={at:%Y-%m-%d}" / f"hour={at:%H}").glob("*.parquet")}
    (hour_1 / "part-corrupt.parquet").write_bytes(b"PAR1 not really")
    assert scored_sessions(follow.poll()) == expect("split", "evicted")
    writer.write_rows([  # the late write of "late"
        span(c, "d" * 16, "5" * 16, "tool", "late", tool_name="send_message", tool_effect="write",
             start_time=_at(0, 12), end_time=_at(0, 13)),
    ])  # fmt: skip
    assert expect("late") <= scored_sessions(follow.poll())
    clock.now += 31  # past retain_s: "evicted" (and the others scored) are dropped, their ids kept
    follow.poll()
    assert ("evicted" in follow.evicted) == kept("evicted")
    writer.write_rows(
        [span(f, "e" * 16, "b" * 16, "tool", None, tool_name="lookup", start_time=_at(1, 7), end_time=_at(1, 7))]
    )
    assert expect("evicted") <= scored_sessions(follow.poll())  # read back from the lake, re-scored
    clock.now += 101  # the abandon time (10 x idle): the crash and the rest are scored
    follow.poll()
    assert not any(s.due for s in follow.sessions.values())


@pytest.mark.parametrize("sample", [None, (0.5, 2)], ids=["all", "sampled"])
def test_live_scores_equal_offline_scores_row_for_row(
    lake: Path, sample: tuple[float, int] | None, caplog: pytest.LogCaptureFixture
) -> None:
    """What `score --follow` leaves in the lake (the `scores` view: the newest row per trace and evaluator)
    is what `tracevals score` computes from the same lake, row for row, on a lake of what live scoring
    must get right: late spans, sessions over two files and two hours, content in log records, a reload
    after eviction, a crash, an unreadable file; and with a sample, the same sessions."""
    from tracevals.lake.sampling import session_sampled
    from tracevals.queries import open_lake
    from tracevals.queries.selection import Selection
    from tracevals.scoring.offline import score_lake

    tasks = load_cases(tasks_path())
    clock = Clock()
    follow = Follower(job(lake, sample, tasks=tasks), idle_s=10, retain_s=30, clock=clock)
    with caplog.at_level("WARNING", logger="tracevals.queries.live_source"):
        _varied_lake(lake, follow, clock, kept=lambda s: sample is None or session_sampled(s, *sample))
    assert any("part-corrupt" in r.getMessage() for r in caplog.records)
    con = open_lake(lake)
    try:
        live = con.sql("SELECT * FROM scores").pl()
    finally:
        con.close()
    selection = Selection(fraction=sample[0], seed=sample[1]) if sample else Selection()
    offline = score_lake(lake, tasks=tasks, selection=selection, write=False).scores
    assert offline.height > (20 if sample is None else 5)
    assert _rows(live) == _rows(offline)
    clock.now += 31  # everything scored, past retain_s: no row is held any more, only ids
    follow.poll()
    assert not follow.sessions and not follow.traces and not follow._tables.tables
    ids = set(live.get_column("session_id").to_list()) | set(live.get_column("trace_id").to_list())
    assert {s for s in ("split", "late", "crash", "evicted", "e5" * 16) if follow._sampled(s)} <= ids


def test_follow_prints_json_lines_as_json_dumps_does() -> None:
    """`--follow --format json` writes a round's rows a column at a time: the same text as json.dumps, strict
    (`model.json_text`: a score that is no number is null, which every JSON reader takes)."""
    import polars as pl

    from tracevals.cli.score import COLUMNS, _rows, json_lines, plain_table
    from tracevals.model.json_text import json_text

    frame = pl.DataFrame(
        {
            "session_id": ['s"1\\', None, "é\n\t\x01\u2028"],
            "trace_id": ["a", "b", "c"],
            "task_id": [None, "t", "x"],
            "attempt": [1, None, 3],
            "variant": ["v", "w", None],
            "evaluator": ["e", "e", "e"],
            "passed": [True, False, None],
            "score": [0.8333333333333334, float("nan"), 1e-05],
            "reason": ["r", "日本", "\x7f"],
        }
    )
    expected = [json_text(dict(zip(COLUMNS, r, strict=True)), ensure_ascii=False) for r in _rows(frame)]
    assert json_lines(frame) == expected
    scores = [json.loads(line, parse_constant=pytest.fail)["score"] for line in expected]
    assert scores == [0.8333333333333334, None, 1e-05]
    lines = plain_table(frame.slice(0, 1)).splitlines()
    assert lines[0].split() == COLUMNS and lines[1].split()[-1] == "r"


def test_a_memory_limit_given_bounds_the_live_connection(tmp_path: Path) -> None:
    """`score --follow --memory-limit` (the job's `memory_limit`) holds on the connection the rounds score on,
    as on the offline job's: it was read by the offline groups only."""
    lake = tmp_path / "lake"
    lake.mkdir()
    follow = Follower(job(lake, write=False, memory_limit="64MB"), idle_s=10)
    follow.prepare()
    try:
        assert follow._connection is not None
        [(limit,)] = follow._connection.con.execute("SELECT current_setting('memory_limit')").fetchall()
        assert limit == "61.0 MiB"  # 64MB
    finally:
        follow.close()
