"""A collector fleet: a session whose turns went to two collectors, in two hours, is one session.

Two real collectors (each its own ports and write-ahead log) write one lake, as a fleet behind the OTel
Collector's load-balancing exporter does when it routes by trace id: the turns of one conversation then
land in different collectors' files, and here also in different hours. Every view that carries a
session id gives those turns the same one, `sessions` has one row for it, and scoring the lake a group
of files at a time (a collector's file of an hour a group, so the session crosses groups) gives the
rows of scoring it whole.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracevals.collector.testing import running_collector
from tracevals.queries import open_lake
from tracevals.scoring.offline import score_lake

T0 = dt.datetime(2026, 11, 30, 9, 50, tzinfo=dt.timezone.utc)
SPLIT = "split-session"


def _ns(at: dt.datetime) -> int:
    return int(at.timestamp() * 1e9)


def _turn(tracer: trace.Tracer, at: dt.datetime, session: str, n: int) -> int:
    """One trace (an agent span, a chat asking for a tool, the tool, a closing chat); its trace id."""
    same = {"gen_ai.conversation.id": session}
    root = tracer.start_span(
        "invoke_agent support", start_time=_ns(at), attributes={**same, "gen_ai.operation.name": "invoke_agent"}
    )
    ctx = trace.set_span_in_context(root)
    ask = tracer.start_span("chat m", ctx, start_time=_ns(at) + 1_000_000, attributes={
        **same, "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 10, "tracevals.tool_calls.ids": [f"call_{n}"],
        "tracevals.tool_calls.names": ["get_orders"],
    })  # fmt: skip
    ask.end(end_time=_ns(at) + 20_000_000)
    call = tracer.start_span("execute_tool get_orders", ctx, start_time=_ns(at) + 21_000_000, attributes={
        **same, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_orders",
        "gen_ai.tool.call.id": f"call_{n}", "gen_ai.tool.call.arguments": f'{{"customer_id": "c{n}"}}',
        "gen_ai.tool.call.result": '{"orders": []}',
    })  # fmt: skip
    call.end(end_time=_ns(at) + 25_000_000)
    answer = tracer.start_span("chat m", ctx, start_time=_ns(at) + 26_000_000, attributes={
        **same, "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 150,
        "gen_ai.usage.output_tokens": 20,
    })  # fmt: skip
    answer.end(end_time=_ns(at) + 40_000_000)
    root.end(end_time=_ns(at) + 41_000_000)
    return root.get_span_context().trace_id


@pytest.fixture(scope="module")
def fleet_lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The lake two collectors wrote; the split session's trace ids (09:50 to the first, 10:10 to the second)."""
    base = tmp_path_factory.mktemp("fleet")
    lake = base / "lake"
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("fleet")
    split = [_turn(tracer, T0, SPLIT, 0), _turn(tracer, T0 + dt.timedelta(minutes=20), SPLIT, 1)]
    for i in range(8):  # other sessions, in both hours
        _turn(tracer, T0 + dt.timedelta(minutes=3 * i), f"plain-{i}", 10 + i)
    provider.shutdown()
    by_trace: dict[int, list[ReadableSpan]] = {}
    for span in memory.get_finished_spans():
        assert span.context is not None
        by_trace.setdefault(span.context.trace_id, []).append(span)
    overrides = {"processors": {"batch": {"timeout": "50ms"}}}
    first = {**overrides, "exporters": {"parquet": {"wal": {"dir": str(base / "wal-a")}}}}
    second = {**overrides, "exporters": {"parquet": {"wal": {"dir": str(base / "wal-b")}}}}
    with running_collector(lake, first) as a, running_collector(lake, second) as b:
        exporters = [OTLPSpanExporter(endpoint=f"http://127.0.0.1:{c.http_port}/v1/traces", timeout=10) for c in (a, b)]
        for trace_id, spans in by_trace.items():
            # routed by trace id, as the load-balancing exporter's `routing_key: traceID` does; the split
            # session's first turn to the first collector, its second to the second
            target = split.index(trace_id) if trace_id in split else trace_id % 2
            assert exporters[target].export(spans) is SpanExportResult.SUCCESS
        for exporter in exporters:
            exporter.shutdown()
    return lake, [f"{t:032x}" for t in split]


def test_the_split_session_lies_in_two_collectors_files_and_two_hours(fleet_lake: tuple[Path, list[str]]) -> None:
    lake, split = fleet_lake
    con = open_lake(lake)
    try:
        files = con.execute(
            "SELECT DISTINCT source_file, hour FROM raw_spans WHERE trace_id IN (?, ?)", split
        ).fetchall()
    finally:
        con.close()
    assert len({f for f, _ in files}) >= 2 and len({h for _, h in files}) == 2, files


def test_every_view_gives_the_split_turns_one_session(fleet_lake: tuple[Path, list[str]]) -> None:
    lake, split = fleet_lake
    con = open_lake(lake)
    try:
        views = [
            name
            for (name,) in con.execute(
                "SELECT DISTINCT table_name FROM information_schema.columns WHERE column_name = 'session_id' "
                "AND table_name IN (SELECT table_name FROM information_schema.columns WHERE column_name = 'trace_id') "
                "AND table_name NOT LIKE 'raw%' AND table_name NOT LIKE 'tv_%' ORDER BY 1"
            ).fetchall()
        ]
        assert {"spans", "attempts", "model_calls", "tool_calls", "steps", "trajectories"} <= set(views)
        for view in views:
            seen = con.execute(f"SELECT DISTINCT session_id FROM {view} WHERE trace_id IN (?, ?)", split).fetchall()
            assert seen in ([(SPLIT,)], []), f"{view}: {seen}"
        row = con.execute("SELECT turn_count, turns, finished FROM sessions WHERE session_id = ?", [SPLIT]).fetchall()
        assert row == [(2, split, True)]
        [(count,)] = con.execute("SELECT count(*) FROM sessions").fetchall()
        assert count == 9
    finally:
        con.close()


def test_scoring_a_group_per_file_gives_the_rows_of_the_whole_lake(fleet_lake: tuple[Path, list[str]]) -> None:
    lake, split = fleet_lake
    columns = ["trace_id", "session_id", "evaluator", "passed", "score", "reason", "details"]
    whole = score_lake(lake, write=False, max_rows=10**9)
    grouped = score_lake(lake, write=False, max_rows=15)  # 40 rows in 4 files: a file a group
    assert whole.groups == 1 and grouped.groups > 2
    assert whole.scores.height > 0
    assert grouped.scores.select(columns).sort(columns).equals(whole.scores.select(columns).sort(columns))
    mine = whole.scores.filter(pl.col("trace_id").is_in(split))
    assert mine.height > 0 and mine.get_column("session_id").unique().to_list() == [SPLIT]
