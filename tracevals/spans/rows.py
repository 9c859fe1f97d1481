"""OTLP spans and log records to lake rows: the one conversion every writer uses.

What a span becomes in the lake is defined here, a span (or log record) at a time: its raw columns copied, its
attributes written as JSON with their types kept, and its canonical columns from the normalizer
(`tracevals.spans.normalize`). The collector converts the requests it receives with it (and its columnar fast
path, `tracevals.collector.conversion.columnar`, must equal it value for value, tests/test_otlp_columnar.py);
the embedded exporters (`tracevals.spans.exporters`) encode the SDK's spans and log records as OTLP first, with
the OpenTelemetry exporters' own encoder, and convert them here too: one definition, two writers.

A span becomes one tuple in `SPAN_SCHEMA` column order (`span_row`); `rows_table` transposes the tuples into
a table. Scalar attribute values are read without a call per value. Oversized attribute values are truncated
and flagged: the keys cut are listed in the `tracevals.truncated` attribute, so a reader can tell a cut value
from a short one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from operator import itemgetter
from typing import Any

import pyarrow as pa
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tracevals.lake.rows import service_name
from tracevals.lake.schema import CANONICAL_FIELDS, empty_table, python_table
from tracevals.spans.normalize import normalize

TRUNCATED = "tracevals.truncated"
# The longest attribute value a writer keeps by default (strings by their UTF-8 bytes, arrays and maps by their
# JSON): the collector's `max_attribute_value_bytes`, and the embedded writer's, so that an agent's spans land
# the same through either.
MAX_VALUE_BYTES = 64 * 1024
_KINDS = ("unspecified", "internal", "server", "client", "producer", "consumer")
_STATUS = ("unset", "ok", "error")
_SCALARS = frozenset({"string_value", "int_value", "double_value", "bool_value"})
_CANONICAL = itemgetter(*(f.name for f in CANONICAL_FIELDS))
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode

# (session_id, trace_id) -> keep?; None: keep everything.
Keep = Callable[[Any, str], bool]


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


def _attrs(kvs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in kvs:
        value = kv.value
        which = value.WhichOneof("value")
        out[kv.key] = getattr(value, which) if which in _SCALARS else any_value(value)
    return out


def truncate_values(attrs: dict[str, Any], limit: int) -> list[str]:
    """Cut values longer than `limit` UTF-8 bytes in place; returns the keys cut.

    Strings keep their first `limit` bytes (on a character boundary); arrays and maps, whose size is
    only known as JSON, become their JSON text cut the same way.
    """
    cut: list[str] = []
    for key, value in attrs.items():
        if isinstance(value, str):
            if len(value) * 4 <= limit:  # cannot be over: a character is at most 4 bytes
                continue
            raw = value.encode()
        elif isinstance(value, (list, dict)):
            raw = _dumps(value).encode()
        else:
            continue
        if len(raw) > limit:
            attrs[key] = raw[:limit].decode("utf-8", errors="ignore")
            cut.append(key)
    if cut:
        attrs[TRUNCATED] = flagged(attrs, cut)
    return cut


def flagged(attrs: dict[str, Any], cut: list[str]) -> list[str]:
    """`tracevals.truncated` with the keys `cut` added: what the sender put there is kept as text (a list of
    keys as it should be; a string or a number, which it should not be, as one more entry)."""
    given = attrs.get(TRUNCATED)
    if given is None:
        given = []
    elif not isinstance(given, list):
        given = [given]
    return sorted({*cut, *(v if isinstance(v, str) else _dumps(v) for v in given)})


def _events(span: Span, limit: int | None) -> str:
    out = []
    for event in span.events:
        attrs = _attrs(event.attributes)
        if limit is not None:
            truncate_values(attrs, limit)
        out.append({"name": event.name, "time_unix_nano": event.time_unix_nano, "attributes": attrs})
    return _dumps(out)


def _links(span: Span) -> str:
    return _dumps(
        [
            {"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex(), "attributes": _attrs(link.attributes)}
            for link in span.links
        ]
    )


def _exception(span: Span) -> tuple[str | None, str | None]:
    """The type and message of the span's first exception event (a type given, else a message), if any."""
    for event in span.events:
        if event.name == "exception":
            attrs = _attrs(event.attributes)
            kind, message = attrs.get("exception.type"), attrs.get("exception.message")
            if kind or message:
                return (str(kind) if kind else None), (str(message) if message else None)
    return None, None


def span_row(
    span: Span,
    resource_json: str,
    service: Any,
    scope_name: str | None,
    scope_version: str | None,
    max_value_bytes: int | None = None,
    keep: Keep | None = None,
) -> tuple[Any, ...] | None:
    """One span's row, in `SPAN_SCHEMA` column order; None for a span with malformed ids or not kept."""
    trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
    if len(trace_id) != 16 or len(span_id) != 8 or (parent and len(parent) != 8):
        return None  # the receivers reject these before acknowledging; never written
    attrs = _attrs(span.attributes)
    limit = max_value_bytes if max_value_bytes is not None and span.ByteSize() > max_value_bytes else None
    if limit is not None:
        truncate_values(attrs, limit)
    status = _STATUS[span.status.code] if 0 <= span.status.code < 3 else "unset"
    exception_type, exception_message = _exception(span) if span.events else (None, None)
    messages = (exception_message, span.status.message or None)
    canonical = normalize(attrs, span.name, status, exception_type, messages)
    trace_hex = trace_id.hex()
    if keep is not None and not keep(canonical["session_id"], trace_hex):
        return None
    start = span.start_time_unix_nano
    end = span.end_time_unix_nano or None
    kind = span.kind
    return (
        trace_hex,
        span_id.hex(),
        parent.hex() if parent else None,
        span.name,
        _KINDS[kind] if 0 <= kind < 6 else "unspecified",
        start,
        end,
        (end - start) / 1e6 if end else None,
        status,
        span.status.message or None,
        _dumps(attrs),
        resource_json,
        scope_name,
        scope_version,
        _events(span, limit) if span.events else "[]",
        _links(span) if span.links else "[]",
        service,
        *_CANONICAL(canonical),
    )


def scopes(request: ExportTraceServiceRequest) -> Iterator[tuple[str, Any, str | None, str | None, Any]]:
    """(resource JSON, service.name, scope name, scope version, the ScopeSpans) of each scope, in order."""
    for resource_spans in request.resource_spans:
        resource = _attrs(resource_spans.resource.attributes)
        resource_json = _dumps(resource)
        service = service_name(resource)
        for scope_spans in resource_spans.scope_spans:
            yield resource_json, service, scope_spans.scope.name or None, scope_spans.scope.version or None, scope_spans


def span_tuples(
    request: ExportTraceServiceRequest, max_value_bytes: int | None = None, keep: Keep | None = None
) -> list[tuple[Any, ...]]:
    """One tuple per span, in `SPAN_SCHEMA` column order; spans with malformed ids are skipped."""
    rows: list[tuple[Any, ...]] = []
    for resource_json, service, scope_name, scope_version, scope_spans in scopes(request):
        for span in scope_spans.spans:
            row = span_row(span, resource_json, service, scope_name, scope_version, max_value_bytes, keep)
            if row is not None:
                rows.append(row)
    return rows


def log_tuples(
    request: ExportLogsServiceRequest, max_value_bytes: int | None = None, keep: Keep | None = None
) -> list[tuple[Any, ...]]:
    """One tuple per log record, in `LOG_SCHEMA` column order."""
    rows: list[tuple[Any, ...]] = []
    for resource_logs in request.resource_logs:
        resource = _attrs(resource_logs.resource.attributes)
        resource_json = _dumps(resource)
        for scope_logs in resource_logs.scope_logs:
            scope_name = scope_logs.scope.name or None
            for record in scope_logs.log_records:
                trace_id, span_id = record.trace_id, record.span_id
                if (trace_id and len(trace_id) != 16) or (span_id and len(span_id) != 8):
                    continue
                trace_hex = trace_id.hex() if trace_id else None
                if keep is not None and not keep(None, trace_hex or ""):
                    continue
                attrs = _attrs(record.attributes)
                body: Any = any_value(record.body) if record.HasField("body") else None
                if max_value_bytes is not None and record.ByteSize() > max_value_bytes:
                    holder = {"body": body}
                    if truncate_values(holder, max_value_bytes):
                        body = holder["body"]
                        attrs[TRUNCATED] = flagged(attrs, ["body"])
                    truncate_values(attrs, max_value_bytes)
                observed = record.observed_time_unix_nano or None
                rows.append(
                    (
                        trace_hex,
                        span_id.hex() if span_id else None,
                        record.time_unix_nano or observed or 0,
                        observed,
                        record.event_name or None,
                        record.severity_number or None,
                        record.severity_text or None,
                        _dumps(body) if record.HasField("body") else None,
                        _dumps(attrs),
                        resource_json,
                        scope_name,
                        service_name(resource),
                    )
                )
    return rows


def rows_table(rows: list[tuple[Any, ...]], schema: pa.Schema) -> pa.Table:
    if not rows:
        return empty_table(schema)
    return python_table(list(zip(*rows, strict=True)), schema)
