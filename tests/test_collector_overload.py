"""Overload and garbage: memory stays bounded by refusing (503 / UNAVAILABLE with a retry delay), the
SDK exporters' retries then deliver every span; malformed input gets a 4xx and the collector keeps serving."""

from __future__ import annotations

import gzip
import http.client
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import grpc
import pyarrow as pa
import pytest
from google.rpc import error_details_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracevals.collector import admission as admission_module
from tracevals.collector.batches import Queued
from tracevals.collector.config import parse_config
from tracevals.collector.pipeline import Pipeline, Throttled
from tracevals.collector.service import Collector
from tracevals.collector.testing import config_document, local_config, running_collector
from tracevals.collector.wal import TRACES, Ref
from tracevals.lake.sink import RotatingParquetSink

TRACES_PATH = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


class GatedSink(RotatingParquetSink):
    """Writes nothing until the gate opens: the queue fills as if the disk had stalled."""

    gate = threading.Event()

    def write(self, table_name: str, table: pa.Table) -> None:
        assert self.gate.wait(60)
        super().write(table_name, table)


def _batches(n: int, size: int) -> list[list[ReadableSpan]]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test.overload")
    for i in range(n * size):
        with tracer.start_as_current_span(
            "chat m", attributes={"gen_ai.operation.name": "chat", "i": i, "pad": "x" * 200}
        ):
            pass
    spans = list(memory.get_finished_spans())
    return [spans[i : i + size] for i in range(0, len(spans), size)]


def test_overload_is_refused_then_retries_deliver_every_span(tmp_path: Path) -> None:
    queue = 64 * 1024
    config = local_config(
        tmp_path / "lake",
        {
            "processors": {"memory_limiter": {"retry_after": "200ms"}},
            "exporters": {"parquet": {"sending_queue": {"queue_size": queue}}},
        },
    )
    collector = Collector(config)
    GatedSink.gate.clear()
    collector.pipeline.sink = GatedSink(config.exporter.lake)
    collector.start()
    try:
        exporters = [
            HttpSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", timeout=30),
            HttpSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", timeout=30),
            GrpcSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, timeout=30),
            GrpcSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, timeout=30),
        ]
        work = _batches(n=16, size=40)  # ~16 KB a batch: the 64 KiB queue holds four
        results: list[SpanExportResult] = []

        def send(exporter: Any, batches: list[list[ReadableSpan]]) -> None:
            results.extend(exporter.export(batch) for batch in batches)

        threads = [threading.Thread(target=send, args=(e, work[i::4])) for i, e in enumerate(exporters)]
        for thread in threads:
            thread.start()
        for _ in range(600):  # bounded wait for the refusals (the gate is closed: they must come)
            if collector.pipeline.stats.requests_throttled >= 4:
                break
            time.sleep(0.05)
        assert collector.pipeline.stats.requests_throttled >= 4
        GatedSink.gate.set()
        for thread in threads:
            thread.join(timeout=90)
        assert results == [SpanExportResult.SUCCESS] * len(work)
        largest = max(sum(len(s.to_json()) for s in b) for b in work)  # generous bound on one request
        assert collector.pipeline.stats.reserved_high_water <= queue + largest
        assert collector.pipeline.flush()
    finally:
        GatedSink.gate.set()
        collector.stop()
    sent = {f"{s.context.span_id:016x}" for b in work for s in b if s.context}
    lake = tmp_path / "lake"
    found = {r[0] for r in duckdb.execute(f"select span_id from read_parquet('{lake}/spans/**/*.parquet')").fetchall()}
    assert found == sent


def post(port: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", "/v1/traces", body, {"Content-Type": ctype, **(headers or {})})
        resp = conn.getresponse()
        resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


VALID = json.dumps(
    {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {"spans": [{"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "ok", "startTimeUnixNano": 1}]}
                ]
            }
        ]
    }
).encode()


def test_memory_limiter_refuses_with_retry_after(tmp_path: Path) -> None:
    overrides = {"processors": {"memory_limiter": {"limit_mib": 8, "spike_limit_mib": 0, "check_interval": "20ms"}}}
    with running_collector(tmp_path / "lake", overrides) as collector:  # any Python process is over 8 MiB
        for _ in range(250):  # bounded wait for the first check
            if collector.pipeline.stats.requests_throttled or collector.pipeline.admission.memory_over:
                break
            time.sleep(0.02)
        assert collector.http_port is not None
        status, headers = post(collector.http_port, VALID, "application/json")
        assert (status, headers["retry-after"]) == (503, "1")
        with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel, pytest.raises(grpc.RpcError) as info:
            channel.unary_unary(TRACES_PATH)(b"", timeout=5)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        trailers = dict(info.value.trailing_metadata() or ())
        retry = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
        assert retry.retry_delay.seconds == 1


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    limits = {
        "receivers": {
            "otlp": {
                "protocols": {
                    "http": {"max_request_body_size": "64KiB"},
                    "grpc": {"max_recv_msg_size_mib": 1},
                }
            }
        }
    }
    with running_collector(tmp_path_factory.mktemp("fuzz") / "lake", limits) as collector:
        yield collector


def _any_json() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
        max_leaves=20,
    )


def _span_doc(trace_id: Any, span_id: Any, start: Any) -> bytes:
    span = {"traceId": trace_id, "spanId": span_id, "name": "fuzz", "startTimeUnixNano": start}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


_ids = st.one_of(st.text(max_size=40), st.binary(max_size=20).map(bytes.hex), st.integers(), st.none())
_bodies: st.SearchStrategy[tuple[bytes, str, dict[str, str]]] = st.one_of(
    st.binary(max_size=300).map(lambda b: (b, "application/x-protobuf", {})),
    _any_json().map(lambda d: (json.dumps(d).encode(), "application/json", {})),
    st.builds(_span_doc, _ids, _ids, st.one_of(st.integers(), st.text(max_size=25))).map(
        lambda b: (b, "application/json", {})
    ),
    st.integers(70_000, 5_000_000).map(  # gzip bombs: small on the wire, past the limit inflated
        lambda n: (gzip.compress(b"\0" * n), "application/x-protobuf", {"Content-Encoding": "gzip"})
    ),
    st.binary(max_size=64).map(lambda b: (b, "application/json", {"Content-Encoding": "gzip"})),
)


@settings(
    max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=_bodies)
def test_http_garbage_gets_4xx_and_the_collector_keeps_serving(
    shared: Collector, case: tuple[bytes, str, dict[str, str]]
) -> None:
    body, ctype, headers = case
    assert shared.http_port is not None
    status, _ = post(shared.http_port, body, ctype, headers)
    assert status in (200, 400, 413, 415), status  # 200 only when the bytes happen to be valid OTLP
    assert post(shared.http_port, VALID, "application/json")[0] == 200


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.one_of(st.binary(max_size=300), st.binary(min_size=8, max_size=8).map(lambda b: b"\x0a\x06" + b[:6])))
def test_grpc_garbage_gets_invalid_argument_and_keeps_serving(shared: Collector, body: bytes) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{shared.grpc_port}") as channel:
        export = channel.unary_unary(TRACES_PATH)
        try:
            export(body, timeout=10)
        except grpc.RpcError as exc:
            assert exc.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED), exc
        assert export(b"", timeout=10) == b""


def test_after_the_garbage_everything_accepted_is_written(shared: Collector, tmp_path: Path) -> None:
    assert shared.pipeline.flush()
    lake = shared.config.exporter.lake.root
    ((rows,),) = duckdb.execute(f"select count(*) from read_parquet('{lake}/spans/**/*.parquet')").fetchall()
    assert rows >= 1
    assert shared.pipeline.stats.spans_accepted >= 1 and TRACES == 1


def _limited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident_mib: int, queued: bool) -> Pipeline:
    """A pipeline under a 512 MiB memory limiter (soft limit 410) whose process holds `resident_mib`, with one
    request waiting for the exporter when `queued`."""
    limits = {"processors": {"memory_limiter": {"limit_mib": 512, "spike_limit_mib": 102}}}
    pipeline = Pipeline(parse_config(config_document(tmp_path / "lake", limits)))
    monkeypatch.setattr(admission_module, "resident_bytes", lambda: resident_mib * 1024**2)
    if queued:
        pipeline._pending.append(Queued(TRACES, b"", ref=Ref(1, 8), reserved=0, count=1))
    return pipeline


@pytest.mark.parametrize(
    ("resident_mib", "queued", "refused"),
    [
        (300, True, False),  # under the soft limit (410 MiB)
        (450, True, True),  # over it with data queued: writing that out frees memory
        (450, False, False),  # over it idle: refusing would free nothing (and would refuse for ever)
        (600, False, True),  # over the hard limit (512 MiB): refused even idle
    ],
)
def test_memory_limiter_refuses_only_when_refusing_can_help(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident_mib: int, queued: bool, refused: bool
) -> None:
    pipeline = _limited(tmp_path, monkeypatch, resident_mib, queued)
    pipeline.admission.check_memory()
    if refused:
        with pytest.raises(Throttled, match="memory limit"):
            pipeline.admission.admit(1024)
    else:
        pipeline.admission.admit(1024)


@pytest.mark.parametrize("drained", [True, False])
def test_a_large_parse_waits_for_room_while_the_exporter_can_free_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, drained: bool
) -> None:
    """A parse that would take resident memory past `limit_mib` waits while the exporter has rows to write
    out (it frees memory), and starts once they are written; if they never are, it is refused at its
    deadline. The periodic check alone let such a parse start just under the limit and end far over it."""
    pipeline = _limited(tmp_path, monkeypatch, 450, True)
    resident = {"mib": 450}
    monkeypatch.setattr(admission_module, "resident_bytes", lambda: resident["mib"] * 1024**2)
    written = threading.Event()

    def exporter() -> None:  # what the exporter does: the queue written out, its memory handed back
        time.sleep(0.3)
        with pipeline._cond:
            pipeline._pending.clear()
            resident["mib"] = 200
            written.set()

    if drained:
        threading.Thread(target=exporter).start()
        with pipeline.admission.large(100 * 1024**2, 0, timeout=30) as large:
            assert large and written.is_set()
        assert pipeline.admission.memory_over  # meanwhile new data was refused (until the next check)
    else:
        with pytest.raises(Throttled, match="memory limit"), pipeline.admission.large(100 * 1024**2, 0, timeout=0.3):
            pytest.fail("the parse started with no room for it")


@pytest.mark.parametrize(("resident_mib", "queued"), [(300, True), (450, False)])
def test_a_large_parse_starts_at_once_with_room_or_with_nothing_to_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident_mib: int, queued: bool
) -> None:
    """Room under the limit, or nothing the exporter could write out (waiting would free nothing): no wait."""
    pipeline = _limited(tmp_path, monkeypatch, resident_mib, queued)
    with pipeline.admission.large(100 * 1024**2, 0, timeout=0.0) as large:
        assert large
    assert not pipeline.admission.memory_over
