"""The OTLP/JSON decoder against protobuf's own JSON parser: on every document they both accept, the
same message, bit for bit.

The reference here is `google.protobuf.json_format.ParseDict` after turning the hex ids into base64 (the
only place OTLP/JSON departs from protobuf's JSON mapping for these messages), i.e. the decoder this
project used before it read the documents itself, twenty times faster.
"""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path
from typing import Any

import pytest
from fixtures.json_docs import rewritten
from fixtures.otlp_lakes import CORPUS, DIALECTS, fixture_doc
from fixtures.requirements import needing
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracevals.collector.otlp_json import OTLPDecodeError, parse_json_logs, parse_json_traces

_IDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


def _b64_ids(node: Any, in_item: bool = False) -> Any:
    """The document with every span / link / log record id hex -> base64, as json_format reads bytes."""

    def rule(key: str, value: Any) -> Any:
        if key in _IDS and isinstance(value, str) and in_item:
            return base64.b64encode(bytes.fromhex(value)).decode()
        item = key in ("spans", "links", "logRecords", "log_records")
        return _b64_ids(value, item or (in_item and key not in ("attributes", "body", "events")))

    return rewritten(node, rule)


def reference(doc: dict[str, Any]) -> tuple[bytes, bytes]:
    spans, logs = ExportTraceServiceRequest(), ExportLogsServiceRequest()
    fixed = _b64_ids(doc)
    json_format.ParseDict(fixed, spans, ignore_unknown_fields=True)  # the other signal's key is unknown to each
    json_format.ParseDict(fixed, logs, ignore_unknown_fields=True)
    return spans.SerializeToString(deterministic=True), logs.SerializeToString(deterministic=True)


def decoded(doc: dict[str, Any]) -> tuple[bytes, bytes]:
    text = json.dumps(doc)
    return (
        parse_json_traces(text).SerializeToString(deterministic=True),
        parse_json_logs(text).SerializeToString(deterministic=True),
    )


RECORDINGS = sorted(p for p in CORPUS.rglob("*.json") if not p.name.endswith(".truth.json")) if CORPUS.is_dir() else []


@pytest.mark.parametrize("dialect", DIALECTS)
def test_fixtures_decode_as_protobufs_parser_does(dialect: str) -> None:
    doc = fixture_doc(dialect)
    spans, logs = decoded(doc)
    assert (spans, logs) == reference(doc)
    assert spans or logs


@pytest.mark.needs("corpus")
@pytest.mark.parametrize("path", needing("corpus", RECORDINGS, lambda p: str(p.relative_to(CORPUS))))
def test_corpus_decodes_as_protobufs_parser_does(path: Path) -> None:
    doc = json.loads(path.read_text())
    spans, logs = decoded(doc)
    assert (spans, logs) == reference(doc)
    assert spans or logs


# -- generated documents: every AnyValue kind, int64 as numbers and strings, enums as numbers and names,
# keys in lowerCamelCase and as in the .proto -----------------------------------------------------------

_hex = st.binary(min_size=1, max_size=1).flatmap(lambda _: st.binary(min_size=8, max_size=8)).map(bytes.hex)
_int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_uint64 = st.integers(min_value=0, max_value=2**64 - 1)
_double = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(["NaN", "Infinity", "-Infinity", "1.5"])


def _either(value: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    return value | value.map(str)


def _any_value(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.text(max_size=8).map(lambda v: {"stringValue": v}),
        st.booleans().map(lambda v: {"boolValue": v}),
        _either(_int64).map(lambda v: {"intValue": v}),
        _double.map(lambda v: {"doubleValue": v}),
        st.binary(max_size=6).map(lambda v: {"bytesValue": base64.b64encode(v).decode()}),
        st.lists(children, max_size=3).map(lambda vs: {"arrayValue": {"values": vs}}),
        st.lists(st.tuples(st.text(max_size=4), children), max_size=3).map(
            lambda kvs: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in kvs]}}
        ),
    )


_value = st.recursive(st.text(max_size=5).map(lambda v: {"stringValue": v}), _any_value, max_leaves=6)
_attrs = st.lists(st.tuples(st.text(max_size=6), _value | st.none()), max_size=4).map(
    lambda kvs: [{"key": k, "value": v} for k, v in kvs]
)
_kind = st.integers(min_value=0, max_value=5) | st.sampled_from(["SPAN_KIND_SERVER", "SPAN_KIND_CLIENT"])


@st.composite
def _span(draw: st.DrawFn) -> dict[str, Any]:
    camel = draw(st.booleans())
    key = (lambda c, s: c) if camel else (lambda c, s: s)
    span = {
        key("traceId", "trace_id"): draw(_hex) * 2,
        key("spanId", "span_id"): draw(_hex),
        "name": draw(st.text(max_size=10)),
        "kind": draw(_kind),
        key("startTimeUnixNano", "start_time_unix_nano"): draw(_either(_uint64)),
        key("endTimeUnixNano", "end_time_unix_nano"): draw(_either(_uint64)),
        "attributes": draw(_attrs),
        "status": {"code": draw(st.sampled_from([0, 1, 2, "STATUS_CODE_ERROR"])), "message": draw(st.text(max_size=5))},
        "events": [{"name": "e", "timeUnixNano": draw(_either(_uint64)), "attributes": draw(_attrs)}],
        "links": [{"traceId": draw(_hex) * 2, "spanId": draw(_hex), "attributes": draw(_attrs)}],
        "droppedAttributesCount": draw(st.integers(min_value=0, max_value=2**32 - 1)),
        "unknownField": {"ignored": True},
    }
    if draw(st.booleans()):
        span[key("parentSpanId", "parent_span_id")] = draw(_hex)
    return span


@st.composite
def _document(draw: st.DrawFn) -> dict[str, Any]:
    record = {
        "timeUnixNano": draw(_either(_uint64)),
        "severityNumber": draw(st.integers(min_value=0, max_value=24) | st.just("SEVERITY_NUMBER_INFO")),
        "body": draw(_value),
        "attributes": draw(_attrs),
        "traceId": draw(_hex) * 2,
        "spanId": draw(_hex),
        "eventName": draw(st.text(max_size=5)),
    }
    resource = {"attributes": draw(_attrs)}
    camel = draw(st.booleans())  # the protobuf JSON mapping's parsers take the proto names too
    return {
        "resourceSpans" if camel else "resource_spans": [
            {
                "resource": resource,
                "scopeSpans": [{"scope": {"name": "s", "version": "1"}, "spans": draw(st.lists(_span(), max_size=3))}],
            }
        ],
        "resourceLogs" if camel else "resource_logs": [
            {"resource": resource, "scopeLogs": [{"scope": {"name": "s"}, "logRecords": [record]}]}
        ],
    }


@settings(max_examples=150, deadline=None)
@given(_document())
def test_generated_documents_decode_as_protobufs_parser_does(doc: dict[str, Any]) -> None:
    assert decoded(doc) == reference(doc)


@pytest.mark.parametrize(
    ("patch", "where", "message"),
    [
        ({"startTimeUnixNano": "soon"}, "spans[0].startTimeUnixNano", "not an integer"),
        ({"kind": "SPAN_KIND_SIDEWAYS"}, "spans[0].kind", "not a SpanKind"),
        ({"attributes": {"a": 1}}, "spans[0].attributes", "expected an array"),
        (
            {"attributes": [{"key": "a", "value": {"intValue": 1.5}}]},
            "attributes[0].value.intValue",
            "expected an integer",
        ),
        ({"attributes": [{"key": 7, "value": {}}]}, "attributes[0].key", "expected a string"),
        ({"status": {"code": 2, "message": None}, "name": 3}, "spans[0].name", "expected a string"),
        ({"endTimeUnixNano": -1}, "", "not an OTLP traces document"),  # protobuf refuses a negative uint64
    ],
)
def test_bad_values_name_their_path(patch: dict[str, Any], where: str, message: str) -> None:
    doc = fixture_doc("genai_current")
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0].update(patch)
    with pytest.raises(OTLPDecodeError, match=message) as info:
        parse_json_traces(json.dumps(doc))
    assert where in str(info.value)


def test_non_finite_doubles_keep_their_value() -> None:
    doc = {
        "resourceSpans": [
            {"scopeSpans": [{"spans": [{"attributes": [{"key": "x", "value": {"doubleValue": "NaN"}}]}]}]}
        ]
    }
    (span,) = parse_json_traces(doc).resource_spans[0].scope_spans[0].spans
    assert math.isnan(span.attributes[0].value.double_value)


def test_a_large_document_decodes_the_same() -> None:
    doc = fixture_doc("openinference")
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"] = spans * 50
    assert decoded(doc) == reference(doc)


def test_null_is_an_unset_field_and_proto_names_are_read() -> None:
    """As the protobuf JSON mapping says: a null value is the field unset (a JavaScript exporter writes
    `"value": null` for an attribute it could not type), and the proto field names are read as well as
    the lowerCamelCase ones, at every level (the OpenTelemetry Collector reads both too)."""
    doc = {
        "resource_spans": [
            {
                "scope_spans": [
                    {
                        "spans": [
                            {
                                "trace_id": "5b8efff798038103d269b633813fc60c",
                                "span_id": "eee19b7ec3c1b174",
                                "name": "chat",
                                "attributes": [{"key": "a", "value": None}, {"key": "b", "value": {"intValue": 1}}],
                                "status": None,
                            }
                        ]
                    }
                ]
            }
        ]
    }
    (span,) = parse_json_traces(json.dumps(doc)).resource_spans[0].scope_spans[0].spans
    assert span.trace_id.hex() == "5b8efff798038103d269b633813fc60c" and span.name == "chat"
    assert [(kv.key, kv.HasField("value"), kv.value.int_value) for kv in span.attributes] == [
        ("a", False, 0),
        ("b", True, 1),
    ]
