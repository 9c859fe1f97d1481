"""The OTLP/gRPC receiver's answers when the fault is the server's: always UNAVAILABLE with a RetryInfo, the
one answer every OTLP exporter retries. grpcio's own concurrency refusal (RESOURCE_EXHAUSTED without
RetryInfo, which the spec lets exporters drop) and its UNKNOWN for an exception are never sent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracevals.collector import otlp_grpc
from tracevals.collector.service import Collector
from tracevals.collector.testing import running_collector

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _body(name: str) -> bytes:
    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.add(name=name, trace_id=b"\x01" * 16, span_id=b"\x02" * 8)
    return request.SerializeToString()


def _answer(port: int, body: bytes) -> tuple[grpc.StatusCode, float | None]:
    """The status of one Export call, and the retry delay its RetryInfo offers (None: no RetryInfo)."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            channel.unary_unary(EXPORT)(body, timeout=20)
        except grpc.RpcError as exc:
            trailers = dict(exc.trailing_metadata() or ())  # type: ignore[attr-defined]
            info = trailers.get("google.rpc.retryinfo-bin")
            delay = error_details_pb2.RetryInfo.FromString(info).retry_delay.ToTimedelta() if info else None
            return exc.code(), None if delay is None else delay.total_seconds()  # type: ignore[attr-defined]
        return grpc.StatusCode.OK, None


@pytest.fixture
def one_stream(tmp_path: Path) -> Iterator[Collector]:
    limits = {"receivers": {"otlp": {"protocols": {"grpc": {"max_concurrent_streams": 1}}}}}
    with running_collector(tmp_path / "lake", limits) as collector:
        yield collector


def test_busy_streams_are_unavailable_with_retry_info_not_resource_exhausted(
    one_stream: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One stream held by a slow decode, four more calls at once: each is told to retry later (the last
    was RESOURCE_EXHAUSTED past 4 x max_concurrent_streams, with no RetryInfo)."""
    entered, release = threading.Event(), threading.Event()
    real = otlp_grpc.decode

    def slow(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(otlp_grpc, "decode", slow)
    port = one_stream.grpc_port or 0
    with ThreadPoolExecutor(5) as pool:
        holder = pool.submit(_answer, port, _body("held"))
        assert entered.wait(10)
        others = [pool.submit(_answer, port, _body(f"other {i}")) for i in range(4)]
        answers = [f.result() for f in others]
        release.set()
        assert holder.result() == (grpc.StatusCode.OK, None)
    assert answers == [(grpc.StatusCode.UNAVAILABLE, 1.0)] * 4


def test_a_fault_of_ours_is_unavailable_with_retry_info(one_stream: Collector, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(otlp_grpc, "decode", broken)
    assert _answer(one_stream.grpc_port or 0, _body("x")) == (grpc.StatusCode.UNAVAILABLE, 1.0)
    monkeypatch.undo()
    assert _answer(one_stream.grpc_port or 0, _body("y")) == (grpc.StatusCode.OK, None)  # and the slot is free
