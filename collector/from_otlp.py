"""Span rows from OTLP: protobuf `ExportTraceServiceRequest`s and their JSON encoding.

The OTLP/JSON encoding differs from protobuf's canonical JSON mapping in ways
`google.protobuf.json_format` gets wrong on its own: trace and span ids are hex, not base64 (parsed
as base64 they silently become 24-byte ids), and enums are integers. `parse_json_traces` fixes the ids
before handing the document to `json_format`, and rejects ids of the wrong length.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tracevals.collector.normalize import normalize

_KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_STATUS = {Status.STATUS_CODE_UNSET: "unset", Status.STATUS_CODE_OK: "ok", Status.STATUS_CODE_ERROR: "error"}


class OTLPDecodeError(ValueError):
    """The payload is not valid OTLP; the message says where."""


def any_value(value: AnyValue) -> Any:
    """An OTLP AnyValue as a plain Python value, its type kept."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "bool_value":
        return value.bool_value
    if which == "int_value":
        return value.int_value
    if which == "double_value":
        return value.double_value
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return value.bytes_value.hex()
    return None


def attributes(kvs: Iterator[KeyValue] | Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in kvs}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _hex_id(raw: bytes, size: int, what: str) -> str:
    if len(raw) != size:
        raise OTLPDecodeError(f"{what} must be {size} bytes, got {len(raw)}")
    return raw.hex()


def row_from_span(
    span: Span, resource: Mapping[str, Any], resource_json: str, scope: tuple[str, str]
) -> dict[str, Any]:
    attrs = attributes(span.attributes)
    status = _STATUS.get(span.status.code, "unset")
    start = span.start_time_unix_nano
    end = span.end_time_unix_nano or None
    row: dict[str, Any] = {
        "trace_id": _hex_id(span.trace_id, 16, "traceId"),
        "span_id": _hex_id(span.span_id, 8, "spanId"),
        "parent_span_id": _hex_id(span.parent_span_id, 8, "parentSpanId") if span.parent_span_id else None,
        "name": span.name,
        "span_kind": _KINDS.get(span.kind, "unspecified"),
        "start_time": start,
        "end_time": end,
        "duration_ms": (end - start) / 1e6 if end else None,
        "status_code": status,
        "status_message": span.status.message or None,
        "attributes": _json(attrs),
        "resource_attributes": resource_json,
        "scope_name": scope[0] or None,
        "scope_version": scope[1] or None,
        "events": _json(
            [
                {"name": e.name, "time_unix_nano": e.time_unix_nano, "attributes": attributes(e.attributes)}
                for e in span.events
            ]
        ),
        "links": _json(
            [
                {
                    "trace_id": link.trace_id.hex(),
                    "span_id": link.span_id.hex(),
                    "attributes": attributes(link.attributes),
                }
                for link in span.links
            ]
        ),
        "service_name": resource.get("service.name"),
    }
    row.update(normalize(attrs, span.name, status))
    if row["error_type"] is None and status == "error":
        row["error_type"] = _exception_type(span) or "error"
    return row


def _exception_type(span: Span) -> str | None:
    for event in span.events:
        if event.name == "exception":
            value = attributes(event.attributes).get("exception.type")
            if value:
                return str(value)
    return None


def rows_from_request(request: ExportTraceServiceRequest) -> list[dict[str, Any]]:
    """One lake row per span of the request (see `collector/schema.py`)."""
    rows: list[dict[str, Any]] = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        resource_json = _json(resource)
        for scope_spans in resource_spans.scope_spans:
            scope = (scope_spans.scope.name, scope_spans.scope.version)
            for span in scope_spans.spans:
                rows.append(row_from_span(span, resource, resource_json, scope))
    return rows


def _hex_to_b64(value: Any, size: int, where: str) -> str:
    if not isinstance(value, str):
        raise OTLPDecodeError(f"{where}: expected a hex string, got {type(value).__name__}")
    if value == "":
        return ""
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise OTLPDecodeError(f"{where}: {value!r} is not hex (OTLP/JSON ids are hex, not base64)") from None
    if len(raw) != size:
        raise OTLPDecodeError(f"{where}: {value!r} is {len(raw)} bytes, expected {size}")
    return base64.b64encode(raw).decode()


def _fix_ids(obj: Mapping[str, Any], where: str, keys: Mapping[str, int]) -> dict[str, Any]:
    fixed = dict(obj)
    for key, size in keys.items():
        if key in fixed and fixed[key] is not None:
            fixed[key] = _hex_to_b64(fixed[key], size, f"{where}.{key}")
    return fixed


_SPAN_IDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}
_LINK_IDS = {"traceId": 16, "spanId": 8}


def _load(body: bytes | str | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(body, Mapping):
        return body
    try:
        doc = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise OTLPDecodeError(f"body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise OTLPDecodeError("body must be a JSON object with resourceSpans / resourceLogs")
    return doc


def _fixed(
    doc: Mapping[str, Any],
    keys: tuple[str, str, str],
    fix_item: Callable[[Mapping[str, Any], str], dict[str, Any]],
) -> list[dict[str, Any]]:
    """`doc[outer][i][scope][j][items][k]` with every item fixed by `fix_item(item, where)`."""
    outer, scope, items = keys
    fixed = []
    for i, resource in enumerate(doc.get(outer) or []):
        resource = dict(resource)
        scopes = []
        for j, scoped in enumerate(resource.get(scope) or []):
            scoped = dict(scoped)
            scoped[items] = [
                fix_item(item, f"{outer}[{i}].{scope}[{j}].{items}[{k}]")
                for k, item in enumerate(scoped.get(items) or [])
            ]
            scopes.append(scoped)
        resource[scope] = scopes
        fixed.append(resource)
    return fixed


def _fix_span(span: Mapping[str, Any], where: str) -> dict[str, Any]:
    fixed = _fix_ids(span, where, _SPAN_IDS)
    fixed["links"] = [_fix_ids(ln, f"{where}.links[{n}]", _LINK_IDS) for n, ln in enumerate(span.get("links") or [])]
    return fixed


def _parse(fixed: dict[str, Any], request: Any, what: str) -> None:
    try:
        json_format.ParseDict(fixed, request, ignore_unknown_fields=True)
    except (json_format.ParseError, binascii.Error, TypeError, ValueError) as exc:
        raise OTLPDecodeError(f"not an OTLP {what} document: {str(exc).splitlines()[0]}") from None


def parse_json_traces(body: bytes | str | Mapping[str, Any]) -> ExportTraceServiceRequest:
    """An OTLP/JSON traces document (hex ids) as an `ExportTraceServiceRequest`."""
    request = ExportTraceServiceRequest()
    spans = _fixed(_load(body), ("resourceSpans", "scopeSpans", "spans"), _fix_span)
    _parse({"resourceSpans": spans}, request, "traces")
    return request


def parse_json_logs(body: bytes | str | Mapping[str, Any]) -> ExportLogsServiceRequest:
    """An OTLP/JSON logs document (hex ids) as an `ExportLogsServiceRequest`."""
    request = ExportLogsServiceRequest()
    records = _fixed(
        _load(body), ("resourceLogs", "scopeLogs", "logRecords"), lambda rec, where: _fix_ids(rec, where, _LINK_IDS)
    )
    _parse({"resourceLogs": records}, request, "logs")
    return request


def rows_from_logs_request(request: ExportLogsServiceRequest) -> list[dict[str, Any]]:
    """One lake row per log record (see `LOG_SCHEMA`); records with no time take their observed time."""
    rows: list[dict[str, Any]] = []
    for resource_logs in request.resource_logs:
        resource = attributes(resource_logs.resource.attributes)
        resource_json = _json(resource)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                observed = record.observed_time_unix_nano or None
                rows.append(
                    {
                        "trace_id": _hex_id(record.trace_id, 16, "traceId") if record.trace_id else None,
                        "span_id": _hex_id(record.span_id, 8, "spanId") if record.span_id else None,
                        "time": record.time_unix_nano or observed or 0,
                        "observed_time": observed,
                        "event_name": record.event_name or None,
                        "severity_number": record.severity_number or None,
                        "severity_text": record.severity_text or None,
                        "body": _json(any_value(record.body)) if record.HasField("body") else None,
                        "attributes": _json(attributes(record.attributes)),
                        "resource_attributes": resource_json,
                        "scope_name": scope_logs.scope.name or None,
                        "service_name": resource.get("service.name"),
                    }
                )
    return rows
