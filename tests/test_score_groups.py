"""Scoring a lake a group of whole sessions at a time gives the rows of scoring it in one go.

The lake is varied on purpose: a session whose turns lie in two hours and several files, a trace that
runs over the hour, OTLP-retry duplicates in two files of two groups, a log record filed an hour after
its span, a trace without a session id, a trace with two session ids, and harness attempts of two runs.
Each is scored whole (one group) and in groups of a few rows (one hour cut between its files), under
the selections a nightly job uses: everything, a sample, a time range, some runs.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tracevals.lake.lake import Lake
from tracevals.lake.writer import LakeWriter
from tracevals.model.tasks import case_from_dict
from tracevals.queries import open_lake
from tracevals.queries.groups import find_crossing, plan_groups
from tracevals.queries.selection import Selection
from tracevals.scoring.job import SESSION_MARGIN
from tracevals.scoring.offline import score_connection, score_lake
from tracevals.scoring.results import ScoringRun
from tracevals.spans.exporters import ParquetLogExporter, ParquetSpanExporter

T0 = dt.datetime(2026, 11, 29, 9, 0, tzinfo=dt.timezone.utc)
CASES = [
    case_from_dict({"case_id": "lookup", "input": "where is my order", "expected_steps": ["get_orders"]}),
    case_from_dict({"case_id": "send", "input": "tell me when it ships", "expected_steps": ["send_message"]}),
]


def _ns(at: dt.datetime) -> int:
    return int(at.timestamp() * 1e9)


def _turn(tracer: Any, at: dt.datetime, session: str | None, n: int, **extra: Any) -> None:
    """One trace: an agent span, a chat asking for a tool, the tool, a closing chat (`n` varies ids and args)."""
    root_attrs = {"gen_ai.operation.name": "invoke_agent", **extra}
    if session is not None:
        root_attrs["gen_ai.conversation.id"] = session
    same = {"gen_ai.conversation.id": session} if session is not None else {}
    tool = "get_orders" if n % 3 else "send_message"
    root = tracer.start_span("invoke_agent support", start_time=_ns(at), attributes=root_attrs)
    ctx = trace.set_span_in_context(root)
    ask = tracer.start_span("chat m", ctx, start_time=_ns(at) + 1_000_000, attributes={
        **same, "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 100 + n,
        "gen_ai.usage.output_tokens": 10, "tracevals.tool_calls.ids": [f"call_{n}"],
        "tracevals.tool_calls.names": [tool],
    })  # fmt: skip
    ask.end(end_time=_ns(at) + 20_000_000)
    call = tracer.start_span(f"execute_tool {tool}", ctx, start_time=_ns(at) + 21_000_000, attributes={
        **same, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.id": f"call_{n}",
        "gen_ai.tool.call.arguments": f'{{"customer_id": "c{n}"}}', "gen_ai.tool.call.result": '{"orders": []}',
    })  # fmt: skip
    call.end(end_time=_ns(at) + 25_000_000)
    answer = tracer.start_span("chat m", ctx, start_time=_ns(at) + 26_000_000, attributes={
        **same, "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 150,
        "gen_ai.usage.output_tokens": 20,
    })  # fmt: skip
    answer.end(end_time=_ns(at) + 40_000_000)
    root.end(end_time=_ns(at) + 41_000_000)


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lake = tmp_path_factory.mktemp("groups") / "lake"
    provider = TracerProvider(resource=Resource.create({"service.name": "groups-test"}))
    # a file per 16 spans (and hour): a session's spans lie in one file or in several
    provider.add_span_processor(BatchSpanProcessor(ParquetSpanExporter(lake), max_export_batch_size=16))
    tracer = provider.get_tracer("test")
    for i in range(30):  # plain sessions over three hours, a third of them two turns 40 minutes apart
        at = T0 + dt.timedelta(minutes=6 * i)
        _turn(tracer, at, f"s-{i}", i)
        if i % 3 == 0:
            _turn(tracer, at + dt.timedelta(minutes=40), f"s-{i}", 100 + i)
    _turn(tracer, T0.replace(minute=59, second=59, microsecond=990_000), "over-the-hour", 200)  # 09:59 and 10:00
    _turn(tracer, T0 + dt.timedelta(minutes=5), None, 201)  # no session id: a session of its own
    _turn(tracer, T0 + dt.timedelta(minutes=7), "two-ids", 202)
    _turn(tracer, T0 + dt.timedelta(hours=2), "two-ids-b", 203)
    for i, run in enumerate(("r1", "r1", "r2")):
        harness = {"tracevals.run.id": run, "tracevals.task.id": "lookup", "tracevals.attempt": i + 1}
        _turn(tracer, T0 + dt.timedelta(minutes=31 + i), f"run-{i}", 1 + 3 * i, **harness)
    _turn(tracer, T0 - dt.timedelta(hours=1), "early", 204)  # starts before the range, a turn inside it
    _turn(tracer, T0 + dt.timedelta(minutes=20), "early", 205)
    # a span with two session ids: the child carries another one than its trace's root
    began, until = _ns(T0 + dt.timedelta(minutes=8)), _ns(T0 + dt.timedelta(minutes=9))
    root = tracer.start_span("invoke_agent support", start_time=began, attributes={"gen_ai.conversation.id": "two-ids"})
    other = {"gen_ai.operation.name": "chat", "gen_ai.conversation.id": "two-ids-b"}
    child = tracer.start_span("chat m", trace.set_span_in_context(root), start_time=began, attributes=other)
    child.end(end_time=until)
    root.end(end_time=until)
    provider.shutdown()
    # OTLP retries: some spans again, in other files of their hour, and one filed two hours later (a writer
    # that partitions by arrival), in another group
    spans = pl.read_parquet(str(lake / "spans" / "**" / "*.parquet"), hive_partitioning=False)
    again = spans.filter(pl.col("name").str.starts_with("execute_tool")).sort("start_time").head(4)
    LakeWriter(lake).write_table(
        again.with_columns(end_time=pl.col("end_time") + pl.duration(milliseconds=1)).to_arrow()
    )
    late = lake / "spans" / "date=2026-11-29" / "hour=12"
    pq.write_table(spans.filter(pl.col("session_id") == "s-2").head(1).to_arrow(), late / "part-late-copy.parquet")
    # a log record of a model call of session s-1 (09:06), filed at 10:30 (its own timestamp)
    logs = LoggerProvider(resource=Resource.create({"service.name": "groups-test"}))
    logs.add_log_record_processor(SimpleLogRecordProcessor(ParquetLogExporter(lake)))
    first = spans.filter((pl.col("kind") == "llm") & (pl.col("session_id") == "s-1")).row(0, named=True)
    ctx = trace.set_span_in_context(
        trace.NonRecordingSpan(
            trace.SpanContext(int(first["trace_id"], 16), int(first["span_id"], 16), False, trace.TraceFlags(1))
        )
    )
    logs.get_logger("test").emit(
        timestamp=_ns(T0 + dt.timedelta(hours=1, minutes=30)),
        context=ctx,
        event_name="gen_ai.user.message",
        body={"content": "where is my order"},
    )
    logs.shutdown()
    return lake


SELECTIONS = {
    "all": None,
    "everything": Selection(),
    "sample": Selection(fraction=0.5, seed=3),
    "range": Selection(since=T0, until=T0 + dt.timedelta(hours=2)),
    "runs": Selection(runs=("r1",)),
}
COLUMNS = ["trace_id", "session_id", "task_id", "evaluator", "passed", "score", "reason", "details"]


def _rows(scores: pl.DataFrame) -> pl.DataFrame:
    return scores.select(COLUMNS).sort(COLUMNS, nulls_last=True)


def _whole(lake: Path, selection: Selection | None) -> ScoringRun:
    """One pass over the whole lake: the connection `score_lake` opens for a lake of one group."""
    lower = selection.since - SESSION_MARGIN if selection is not None and selection.since is not None else None
    con = open_lake(lake, since=lower, materialize=False)
    try:
        return score_connection(con, tasks=CASES, selection=selection)
    finally:
        con.close()


@pytest.mark.parametrize("name", list(SELECTIONS))
def test_groups_of_a_few_rows_score_as_the_whole_lake(varied: Path, name: str) -> None:
    selection = SELECTIONS[name]
    whole = _whole(varied, selection)
    grouped = score_lake(varied, tasks=CASES, selection=selection, write=False, max_rows=40)
    assert grouped.groups > 6
    assert whole.scores.height > 0
    assert _rows(grouped.scores).equals(_rows(whole.scores))
    assert (grouped.traces, grouped.sessions, grouped.root_spans) == (whole.traces, whole.sessions, whole.root_spans)


def test_the_plan_sets_apart_exactly_the_sessions_that_cross_blocks(varied: Path, tmp_path: Path) -> None:
    plan = plan_groups(Lake.open(varied), max_rows=90)  # blocks of whole hours: 08-09, 10, 11-12
    assert plan is not None
    find_crossing(plan, tmp_path)
    assert plan.crossing is not None and len(plan.groups) > plan.blocks  # crossing groups follow the blocks
    block = {path: g.index for g in plan.groups[: plan.blocks] for path in (*g.spans, *g.logs)}
    rows = pl.concat(
        [
            pl.read_parquet(
                path, columns=[c for c in ("trace_id", "session_id") if c in pq.read_schema(path).names]
            ).with_columns(pl.col("^session_id$").cast(pl.Utf8), block=pl.lit(number))
            for path, number in block.items()
        ],
        how="diagonal_relaxed",
    ).filter(pl.col("trace_id").is_not_null())
    traces = rows.group_by("trace_id").agg(
        key=pl.coalesce(pl.col("session_id").max(), pl.col("trace_id").first()), blocks=pl.col("block").unique()
    )
    traces = traces.with_columns(key=pl.col("key").replace({"two-ids-b": "two-ids"}))  # joined by one trace
    sessions = traces.explode("blocks").group_by("key").agg(pl.col("blocks").n_unique())
    crossing = set(sessions.filter(pl.col("blocks") > 1).get_column("key"))
    expected = set(traces.filter(pl.col("key").is_in(list(crossing))).get_column("trace_id"))
    assert set(pl.read_parquet(plan.crossing).get_column("trace_id")) == expected
    # a session whose turns lie in two hours, a trace over the hour, a log record an hour later, a copy of a
    # span filed two hours later, two sessions joined by a trace that carries both ids
    assert {"s-6", "over-the-hour", "s-1", "s-2", "two-ids"} <= crossing


def test_workers_and_counts_only_give_the_same_rows_and_summary(varied: Path) -> None:
    selection = Selection(fraction=0.7, seed=1)
    whole = _whole(varied, selection)
    parallel = score_lake(varied, tasks=CASES, selection=selection, write=False, max_rows=40, workers=2)
    assert parallel.groups > 2
    assert _rows(parallel.scores).equals(_rows(whole.scores))
    counted = score_lake(varied, tasks=CASES, selection=selection, write=False, max_rows=40, keep_scores=False)
    assert counted.scores.height == 0 and counted.score_count == whole.scores.height
    assert counted.summary().equals(ScoringRun(whole.scores, 0, 0).summary())


def test_each_group_writes_its_own_scores_file(varied: Path, tmp_path: Path) -> None:
    import shutil

    lake = tmp_path / "lake"
    shutil.copytree(varied, lake)
    seen: list[int] = []
    run = score_lake(lake, tasks=CASES, max_rows=40, keep_scores=False, sinks=[lambda s, _r: seen.append(s.height)])
    assert len(run.files) > 1 and all(f.parent == lake / "scores" for f in run.files)
    assert sum(seen) == run.score_count == pl.read_parquet(str(lake / "scores" / "**" / "*.parquet")).height


def test_a_kept_batch_holds_every_scored_trajectory(varied: Path) -> None:
    selection = Selection(runs=("r1",))
    whole = _whole(varied, selection)
    kept = score_lake(varied, tasks=CASES, selection=selection, write=False, max_rows=40, keep_batch=True)
    assert kept.groups > 6 and len(kept.trajectories()) == whole.traces == kept.traces > 0
    assert sorted(t.trace_id for t in kept.trajectories()) == sorted(whole.scores.get_column("trace_id").unique())
