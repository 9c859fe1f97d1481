"""One sampling rule: the collector's `session_sampler` and `tracevals score --sample` (the nightly job)
keep exactly the same sessions for the same fraction and seed.

The same spans of 2,000 sessions go, through the real OTLP/HTTP exporter, to a real collector that samples
10% with seed 7, and, unsampled, into an embedded lake; scoring that lake with `--sample 0.1 --seed 7`
must score exactly the sessions the collector kept.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tracevals.collector.testing import running_collector
from tracevals.lake.sampling import SessionSampler, sampled_sql, session_sampled
from tracevals.queries.selection import Selection
from tracevals.scoring import score_lake
from tracevals.spans.exporters import ParquetSpanExporter

SESSIONS = [f"conversation-{i}" for i in range(2000)]


def _sessions(lake: Path) -> set[str]:
    con = duckdb.connect()
    rows = con.execute(
        f"SELECT DISTINCT session_id FROM read_parquet('{lake}/spans/**/*.parquet') WHERE session_id IS NOT NULL"
    ).fetchall()
    return {r[0] for r in rows}


def test_the_collector_and_score_sample_keep_the_same_sessions(tmp_path: Path) -> None:
    collected, embedded = tmp_path / "collected", tmp_path / "embedded"
    sampler = {"processors": {"session_sampler": {"sampling_percentage": 10, "hash_seed": 7}}}
    overrides = {
        **sampler,
        "service": {
            "pipelines": {
                "traces": {
                    "receivers": ["otlp"],
                    "processors": ["memory_limiter", "session_sampler", "batch"],
                    "exporters": ["parquet"],
                }
            }
        },
    }
    with running_collector(collected, overrides) as collector:
        provider = TracerProvider(resource=Resource.create({"service.name": "sampling-test"}))
        endpoint = f"http://127.0.0.1:{collector.http_port}/v1/traces"
        for exporter in (OTLPSpanExporter(endpoint=endpoint), ParquetSpanExporter(embedded)):
            provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=len(SESSIONS) * 2))
        tracer = provider.get_tracer("test")
        for session in SESSIONS:
            with tracer.start_as_current_span("invoke_agent support", attributes={"gen_ai.conversation.id": session}):
                # tracevals' instrumentation puts the session id on every span of a session, as here
                chat = {"gen_ai.operation.name": "chat", "gen_ai.conversation.id": session}
                with tracer.start_as_current_span("chat m", attributes=chat):
                    pass
        provider.shutdown()
    kept = _sessions(collected)
    assert _sessions(embedded) == set(SESSIONS)  # the embedded lake has every session
    assert 100 < len(kept) < 300  # about 10% of 2,000

    run = score_lake(embedded, selection=Selection(fraction=0.1, seed=7), write=False)
    assert set(run.scores.get_column("session_id").to_list()) == kept

    # and the rule's three spellings agree with each other on every id
    in_python = {s for s in SESSIONS if session_sampled(s, 0.1, 7)}
    collector_rule = SessionSampler(10.0, 7)
    assert in_python == {s for s in SESSIONS if collector_rule.keep(s, "t")} == kept
    con = duckdb.connect()
    con.execute("CREATE TABLE ids AS SELECT unnest(?) AS sid", [SESSIONS])
    in_sql = {r[0] for r in con.execute(f"SELECT sid FROM ids WHERE {sampled_sql('sid', 0.1, 7)}").fetchall()}
    assert in_sql == in_python
