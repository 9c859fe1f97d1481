"""The collector's OTLP receivers with real clients: the SDK's gRPC and HTTP/protobuf exporters, and a
hand-made OTLP/JSON request as curl would send it; DuckDB reads back exactly what was sent."""

from __future__ import annotations

import datetime as dt
import email.utils
import gzip
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import grpc
import pyarrow as pa
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from tracevals.collector import otlp_decode
from tracevals.collector.batches import Queued
from tracevals.collector.config import parse_config
from tracevals.collector.conversion import columnar as otlp_columnar
from tracevals.collector.pipeline import Pipeline
from tracevals.collector.service import Collector
from tracevals.collector.testing import config_document, running_collector
from tracevals.collector.wal import TRACES, Ref

ATTRS: dict[str, Any] = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "refund_order",
    "gen_ai.conversation.id": "conv-42",
    "count": 2**53 + 1,  # past a double's exact range: only an int64 keeps it
    "ratio": 0.1,
    "flag": False,
    "tags": ("a", "b"),
    "sizes": (1, 2, 3),
    "unicode": "größe ✓",
}


class _Recording(SpanExporter):
    """Keeps what the SDK handed over, then passes it to the real OTLP exporter."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Any) -> SpanExportResult:
        result = self.inner.export(spans)
        assert result is SpanExportResult.SUCCESS
        self.spans.extend(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()


def _emit(exporter: SpanExporter, service: str) -> list[ReadableSpan]:
    recording = _Recording(exporter)
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(recording))
    tracer = provider.get_tracer("test.receivers", "1.0")
    with tracer.start_as_current_span("invoke_agent support", kind=SpanKind.INTERNAL) as parent:
        link = Link(parent.get_span_context(), {"why": "retry-of"})
        with tracer.start_as_current_span("execute_tool refund_order", attributes=ATTRS, links=[link]) as span:
            span.add_event("progress", {"step": 1})
            span.set_status(Status(StatusCode.ERROR, "declined"))
    provider.shutdown()
    return recording.spans


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    with running_collector(tmp_path / "lake") as c:
        yield c


def _read_back(lake: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """DuckDB alone over the lake's files (no tracevals views involved)."""
    cur = duckdb.execute(
        "select trace_id, span_id, parent_span_id, name, epoch_ns(start_time), epoch_ns(end_time), attributes, "
        "status_code, status_message, events, links, service_name, scope_name, kind, tool_name, session_id "
        f"from read_parquet('{lake}/spans/**/*.parquet', hive_partitioning = true)"
    )
    cols = [d[0] for d in cur.description]
    return {(r[0], r[1]): dict(zip(cols, r, strict=True)) for r in cur.fetchall()}


def _expect_equal(lake: Path, sent: list[ReadableSpan], service: str) -> None:
    rows = _read_back(lake)
    for span in sent:
        ctx = span.get_span_context()
        assert ctx is not None
        row = rows[(f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}")]
        assert row["name"] == span.name
        assert row["parent_span_id"] == (f"{span.parent.span_id:016x}" if span.parent else None)
        assert (row["epoch_ns(start_time)"], row["epoch_ns(end_time)"]) == (span.start_time, span.end_time)
        sent_attrs = {k: list(v) if isinstance(v, tuple) else v for k, v in (span.attributes or {}).items()}
        assert json.loads(row["attributes"]) == sent_attrs
        assert row["service_name"] == service and row["scope_name"] == "test.receivers"
    tool = next(r for r in rows.values() if r["name"] == "execute_tool refund_order")
    assert json.loads(tool["attributes"])["count"] == 2**53 + 1
    assert (tool["status_code"], tool["status_message"]) == ("error", "declined")
    assert [e["name"] for e in json.loads(tool["events"])] == ["progress"]
    assert json.loads(tool["links"])[0]["attributes"] == {"why": "retry-of"}
    assert (tool["kind"], tool["tool_name"], tool["session_id"]) == ("tool", "refund_order", "conv-42")


def test_sdk_http_and_grpc_exporters_land_exactly(collector: Collector, tmp_path: Path) -> None:
    http_sent = _emit(HttpSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces"), "via-http")
    grpc_sent = _emit(GrpcSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True), "via-grpc")
    assert collector.pipeline.flush()
    _expect_equal(tmp_path / "lake", http_sent, "via-http")
    _expect_equal(tmp_path / "lake", grpc_sent, "via-grpc")
    assert len(_read_back(tmp_path / "lake")) == 4
    # through the columnar path (otlp_columnar), which refused nothing
    assert collector.pipeline.stats.columnar_batches >= 1 and collector.pipeline.stats.columnar_refused == 0


def test_a_batch_the_columnar_path_refuses_lands_through_the_python_path(
    collector: Collector, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the native decoder or a kernel refuses after the request was acknowledged is converted
    request by request in Python: nothing acknowledged is lost, and the refusal is counted."""

    def refuse(payloads: Any) -> Any:
        raise ValueError("refused, as a malformed request would be")

    monkeypatch.setattr(otlp_columnar, "decode", refuse)
    sent = _emit(HttpSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces"), "via-http")
    assert collector.pipeline.flush()
    _expect_equal(tmp_path / "lake", sent, "via-http")
    assert collector.pipeline.stats.columnar_refused >= 1 and collector.pipeline.stats.columnar_batches == 0


TRACE_ID, SPAN_ID = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
JSON_DOC = {
    "resourceSpans": [
        {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "js-agent"}}]},
            "scopeSpans": [
                {
                    "scope": {"name": "js"},
                    "spans": [
                        {
                            "traceId": TRACE_ID,
                            "spanId": SPAN_ID,
                            "name": "chat gpt-4o",
                            "kind": 3,
                            "startTimeUnixNano": "1790607510974516740",  # int64 as a string
                            "endTimeUnixNano": 1790607510975130682,  # and as a number
                            "attributes": [
                                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                                {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "9007199254740993"}},
                                {"key": "temperature", "value": {"doubleValue": 0.7}},
                                {"key": "m", "value": {"kvlistValue": {"values": [{"key": "k", "value": {}}]}}},
                            ],
                        }
                    ],
                }
            ],
        }
    ]
}
LOG_DOC = {
    "resourceLogs": [
        {
            "scopeLogs": [
                {
                    "logRecords": [
                        {
                            "traceId": TRACE_ID,
                            "spanId": SPAN_ID,
                            "timeUnixNano": "1790607510975000000",
                            "eventName": "gen_ai.client.inference.operation.details",
                            "body": {"stringValue": "hello"},
                        }
                    ]
                }
            ]
        }
    ]
}


@pytest.mark.parametrize(("requests", "expected"), [(11, [120, 120, 90]), (9, [120, 150]), (2, [60])])
def test_the_exporter_converts_batches_and_a_small_remainder_joins_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, requests: int, expected: list[int]
) -> None:
    """Requests of 30 spans, send_batch_size 100: batches of at least 100 spans, and a remainder under half
    a batch is converted with the batch before it (a batch has a fixed cost); every span is written."""
    config = parse_config(config_document(tmp_path / "lake", {"processors": {"batch": {"send_batch_size": 100}}}))
    pipeline = Pipeline(config)
    sizes: list[int] = []
    real = pipeline.converter._columnar

    def counted(items: list[Queued]) -> pa.Table | None:
        sizes.append(sum(i.count for i in items))
        return real(items)

    monkeypatch.setattr(pipeline.converter, "_columnar", counted)
    items = []
    for r in range(requests):
        request = ExportTraceServiceRequest()
        scope = request.resource_spans.add().scope_spans.add()
        for i in range(30):
            scope.spans.add(
                name="chat", trace_id=bytes([r + 1]) * 16, span_id=bytes([i + 1]) * 8, start_time_unix_nano=1
            )
        items.append(Queued(TRACES, request.SerializeToString(), ref=Ref(1, 8 + r), reserved=0, count=30))
    pipeline._write(items)
    pipeline.sink.commit()
    assert sizes == expected
    count = duckdb.execute(f"SELECT count(*) FROM '{tmp_path}/lake/spans/**/*.parquet'").fetchall()
    assert count == [(30 * requests,)]


def post(
    port: int, path: str, body: bytes, ctype: str = "application/json", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", path, body, {"Content-Type": ctype, **(headers or {})})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_hand_made_json_request_gzip_lands_exactly(collector: Collector, tmp_path: Path) -> None:
    assert collector.http_port is not None
    status, headers, body = post(
        collector.http_port,
        "/v1/traces",
        gzip.compress(json.dumps(JSON_DOC).encode()),
        headers={"Content-Encoding": "gzip"},
    )
    assert (status, headers["content-type"], json.loads(body)) == (200, "application/json", {})
    status, _, _ = post(collector.http_port, "/v1/logs", json.dumps(LOG_DOC).encode())
    assert status == 200
    assert collector.pipeline.flush()
    row = _read_back(tmp_path / "lake")[(TRACE_ID, SPAN_ID)]
    assert (row["epoch_ns(start_time)"], row["epoch_ns(end_time)"]) == (1790607510974516740, 1790607510975130682)
    assert json.loads(row["attributes"]) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 9007199254740993,
        "temperature": 0.7,
        "m": {"k": None},
    }
    lake = tmp_path / "lake"
    joined = duckdb.execute(
        f"select s.name, l.body from read_parquet('{lake}/logs/**/*.parquet') l "
        f"join read_parquet('{lake}/spans/**/*.parquet') s using (trace_id, span_id)"
    ).fetchall()
    assert joined == [("chat gpt-4o", '"hello"')]


def _every_wire_type() -> ExportTraceServiceRequest:
    """A request with a field of every wire type OTLP uses: varints (a negative int64 takes ten bytes, enums),
    fixed64 (times, a double), fixed32 (flags), and length-delimited strings, bytes, nested messages,
    repeated ones; each string one of the markers `_NOT_UTF8` corrupts."""
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    resource.resource.attributes.add(key="service.name").value.string_value = "SVC1"
    scope = resource.scope_spans.add()
    scope.scope.name = "SCP1"
    span = scope.spans.add(
        trace_id=bytes.fromhex(TRACE_ID), span_id=bytes.fromhex(SPAN_ID), parent_span_id=b"\x01" * 8, name="NAM1",
        kind=3, start_time_unix_nano=1790607510974516740, end_time_unix_nano=1790607510975130682, flags=0x301,
    )  # fmt: skip
    values = span.attributes
    values.add(key="s").value.string_value = "VAL1"
    values.add(key="n").value.int_value = -(2**62)
    values.add(key="d").value.double_value = 0.1
    values.add(key="b").value.bool_value = True
    values.add(key="raw").value.bytes_value = b"\xe9\xff not text"  # bytes: never repaired
    values.add(key="list").value.array_value.values.add().string_value = "ARR1"
    values.add(key="map").value.kvlist_value.values.add(key="KEY1").value.string_value = "MAP1"
    span.events.add(name="EVT1", time_unix_nano=1790607510974516741)
    span.links.add(trace_id=bytes.fromhex(TRACE_ID), span_id=b"\x02" * 8)
    span.status.code = 2
    span.status.message = "MSG1"
    return request


_NOT_UTF8 = b"a\xe9\xff\xc3"  # a Latin-1 byte, one never valid, a lead byte with no continuation


def test_a_string_that_is_not_utf8_lands_with_replacement_characters(collector: Collector) -> None:
    """Python's protobuf refuses a request holding a string that is not UTF-8, and refused it whole (a 400, the
    exporter's batch lost), where the OpenTelemetry Collector takes it (a C++ exporter can send one). Each
    such string now reads with U+FFFD for its bad bytes; every other field, bytes included, as sent."""
    valid = _every_wire_type().SerializeToString()
    assert otlp_decode._whole_strings(valid, ExportTraceServiceRequest.DESCRIPTOR) == valid  # nothing to repair
    body = valid
    for marker in (b"SVC1", b"SCP1", b"NAM1", b"VAL1", b"ARR1", b"KEY1", b"MAP1", b"EVT1", b"MSG1"):
        body = body.replace(marker, _NOT_UTF8)
    with pytest.raises(Exception, match="UTF-8"):
        ExportTraceServiceRequest.FromString(body)
    assert collector.http_port is not None
    status, _, reply = post(collector.http_port, "/v1/traces", body, "application/x-protobuf")
    assert status == 200, reply
    assert collector.pipeline.flush()
    row = _read_back(collector.config.exporter.lake.local_folder)[(TRACE_ID, SPAN_ID)]
    cut = "a\ufffd\ufffd\ufffd"  # each bad byte its own replacement character
    assert (row["name"], row["service_name"], row["scope_name"], row["status_message"]) == (cut, cut, cut, cut)
    attributes = json.loads(row["attributes"])
    assert attributes["s"] == cut and attributes["list"] == [cut] and attributes["map"] == {cut: cut}
    assert (attributes["n"], attributes["d"], attributes["b"]) == (-(2**62), 0.1, True)
    assert json.loads(row["events"])[0]["name"] == cut
    with pytest.raises(otlp_decode.OTLPDecodeError, match="not a protobuf"):  # not wire format: refused as before
        otlp_decode.decode(otlp_decode.TRACES, body[:-3], is_json=False)


def _bad_ids_doc() -> dict[str, Any]:
    doc = json.loads(json.dumps(JSON_DOC))
    good = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    # neither hex nor a sure base64 id (a base64 id of 8 bytes would be read, and said)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"].append({**good, "spanId": "7uGbfsPBsX!=", "name": "garbled"})
    return doc


def test_partial_success_names_the_rejected_span(collector: Collector) -> None:
    request = json_format.ParseDict(
        {"resourceSpans": []}, ExportTraceServiceRequest()
    )  # built below as protobuf: JSON ids are checked strictly
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = bytes.fromhex(TRACE_ID), bytes.fromhex(SPAN_ID), "ok"
    bad = request.resource_spans[0].scope_spans[0].spans.add()
    bad.trace_id, bad.span_id, bad.name = bytes.fromhex(TRACE_ID), b"\x01\x02", "short id"
    assert collector.http_port is not None
    status, headers, body = post(
        collector.http_port, "/v1/traces", request.SerializeToString(), "application/x-protobuf"
    )
    response = ExportTraceServiceResponse.FromString(body)
    assert (status, headers["content-type"]) == (200, "application/x-protobuf")
    sent = email.utils.parsedate_to_datetime(headers["date"])  # RFC 9110 date of the reply, UTC
    assert sent.tzinfo is not None and abs((sent - dt.datetime.now(dt.timezone.utc)).total_seconds()) < 300
    assert response.partial_success.rejected_spans == 1
    assert "short id" in response.partial_success.error_message
    assert collector.pipeline.stats.spans_accepted == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [(AnyValue(int_value=7), "7"), (AnyValue(bool_value=True), "true"), (AnyValue(double_value=1.5), "1.5")],
)
def test_a_service_name_that_is_not_text_lands_as_its_json_text(
    collector: Collector, tmp_path: Path, value: AnyValue, expected: str
) -> None:
    """The spec says service.name is a string; a sender that makes it a number loses nothing (it once made
    the acknowledged request unwritable, dropped by the exporter) and the resource keeps the typed value."""
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    resource.resource.attributes.add(key="service.name", value=value)
    resource.scope_spans.add().spans.add(name="chat", trace_id=bytes.fromhex(TRACE_ID), span_id=b"\x01" * 8)
    status, _, _ = post(collector.http_port, "/v1/traces", request.SerializeToString(), "application/x-protobuf")
    assert status == 200
    assert collector.pipeline.flush()
    rows = duckdb.execute(
        f"SELECT service_name, resource_attributes FROM '{tmp_path}/lake/spans/**/*.parquet'"
    ).fetchall()
    assert [(r[0], json.loads(r[1])["service.name"]) for r in rows] == [(expected, json.loads(expected))]
    assert collector.pipeline.stats.items_failed == 0


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("trace_id", b"\x01" * 15, "traceId must be 16 bytes"),
        ("trace_id", bytes(16), "traceId must be 16 bytes, not all zero"),
        ("span_id", b"\x01" * 9, "spanId must be 8 bytes"),
        ("span_id", bytes(8), "spanId must be 8 bytes, not all zero"),
        ("parent_span_id", b"\x01" * 3, "parentSpanId must be 8 bytes or empty"),
        ("start_time_unix_nano", 2**63, "times past year 2262"),
        ("end_time_unix_nano", 2**64 - 1, "times past year 2262"),
    ],
)
def test_each_bad_span_is_rejected_among_good_ones(field: str, value: Any, message: str) -> None:
    """Wherever the bad span sits, it alone is rejected, named, and removed from what is logged."""
    for position in (0, 1, 2):
        request = ExportTraceServiceRequest()
        scope = request.resource_spans.add().scope_spans.add()
        for i in range(3):
            span = scope.spans.add(name=f"span {i}", trace_id=bytes.fromhex(TRACE_ID), span_id=bytes([i + 1]) * 8)
            if i == position:
                setattr(span, field, value)
        decoded = otlp_decode.decode(otlp_decode.TRACES, request.SerializeToString(), is_json=False)
        assert (decoded.accepted, decoded.rejected) == (2, 1)
        assert message in decoded.error and f"span {position}" in decoded.error
        kept = ExportTraceServiceRequest.FromString(decoded.payload).resource_spans[0].scope_spans[0].spans
        assert [s.name for s in kept] == [f"span {i}" for i in range(3) if i != position]


@pytest.mark.parametrize(
    ("path", "body", "ctype", "headers", "status", "message"),
    [
        ("/v1/traces", b"{not json", "application/json", {}, 400, "not JSON"),
        ("/v1/traces", b"\xff\xff\xff", "application/x-protobuf", {}, 400, "not a protobuf"),
        ("/v1/traces", json.dumps(_bad_ids_doc()).encode(), "application/json", {}, 400, "is not hex"),
        ("/v1/traces", b"x", "text/plain", {}, 415, "not supported"),
        ("/v1/traces", b"abc", "application/json", {"Content-Encoding": "br"}, 415, "'br' is not supported"),
        ("/v1/traces", gzip.compress(b"0" * (2 * 1024**2)), "application/json", {"Content-Encoding": "gzip"}, 413,
         "limit"),
        ("/v1/metrics", b"{}", "application/json", {}, 404, "no such endpoint"),
    ],
)  # fmt: skip
def test_http_errors_are_status_bodies_in_the_request_content_type(
    tmp_path: Path, path: str, body: bytes, ctype: str, headers: dict[str, str], status: int, message: str
) -> None:
    limits = {"receivers": {"otlp": {"protocols": {"http": {"max_request_body_size": "1MiB"}}}}}
    with running_collector(tmp_path / "lake", limits) as collector:
        assert collector.http_port is not None
        got, reply_headers, reply = post(collector.http_port, path, body, ctype, headers)
        assert got == status
        if reply_headers["content-type"] == "application/json":
            error = json.loads(reply)
        else:
            error = json_format.MessageToDict(status_pb2.Status.FromString(reply))
        assert message in error["message"]
        assert reply_headers["content-type"] == ("application/json" if ctype == "application/json" else
                                                 "application/x-protobuf")  # fmt: skip
        # and it keeps serving
        assert post(collector.http_port, "/v1/traces", json.dumps(JSON_DOC).encode())[0] == 200


def test_bearer_token_is_required_when_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TV_TEST_TOKEN", "s3cret")
    auth = {"auth": {"authenticator": "bearertokenauth"}}
    overrides = {
        "extensions": {"bearertokenauth": {"token": "${env:TV_TEST_TOKEN}"}},
        "receivers": {"otlp": {"protocols": {"http": auth, "grpc": auth}}},
        "service": {"extensions": ["bearertokenauth"]},
    }
    with running_collector(tmp_path / "lake", overrides) as collector:
        assert collector.http_port is not None
        body = json.dumps(JSON_DOC).encode()
        assert post(collector.http_port, "/v1/traces", body)[0] == 401
        assert post(collector.http_port, "/v1/traces", body, headers={"Authorization": "Bearer nope"})[0] == 401
        assert post(collector.http_port, "/v1/traces", body, headers={"Authorization": "Bearer s3cret"})[0] == 200
        # the scheme is case-insensitive (RFC 7235); the token is not
        assert post(collector.http_port, "/v1/traces", body, headers={"Authorization": "bearer  s3cret"})[0] == 200
        assert post(collector.http_port, "/v1/traces", body, headers={"Authorization": "Bearer S3CRET"})[0] == 401
        with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
            export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
            with pytest.raises(grpc.RpcError) as info:
                export(b"", timeout=5)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert export(b"", timeout=5, metadata=[("authorization", "Bearer s3cret")]) == b""
            assert export(b"", timeout=5, metadata=[("authorization", "BEARER s3cret")]) == b""


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(levels):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    return value


def test_poison_json_is_refused_before_the_acknowledgement_and_serving_goes_on(
    collector: Collector, tmp_path: Path
) -> None:
    """Each of these was acknowledged and then lost (or wedged the exporter); now a 400 naming why, and
    the next good request is stored."""
    assert collector.http_port is not None
    port, doc = collector.http_port, json.dumps(JSON_DOC).encode()
    deep = json.loads(json.dumps(JSON_DOC))
    deep["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"].append({"key": "deep", "value": _deep(40)})
    refused = {
        "a key twice": (b'{"resourceSpans": [], ' + doc[1:], {}),
        "camel and snake": (b'{"resource_spans": [], ' + doc[1:], {}),
        "nested 40 maps deep": (json.dumps(deep).encode(), {}),
        "nested past the parser": (b'{"resourceSpans": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", {}),
        "garbage after gzip": (gzip.compress(doc) + b"trailing", {"Content-Encoding": "gzip"}),
    }
    for what, (body, headers) in refused.items():
        status, _, answer = post(port, "/v1/traces", body, headers=headers)
        assert status == 400, (what, status, answer[:200])
    # two gzip members are one body (RFC 1952): both halves are read
    half = len(doc) // 2
    status, _, _ = post(
        port, "/v1/traces", gzip.compress(doc[:half]) + gzip.compress(doc[half:]), headers={"Content-Encoding": "gzip"}
    )
    assert status == 200
    assert collector.pipeline.flush()
    assert (TRACE_ID, SPAN_ID) in _read_back(tmp_path / "lake")
