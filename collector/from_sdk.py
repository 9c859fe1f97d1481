"""Span rows from the OpenTelemetry SDK's `ReadableSpan`, and the embedded-lake exporter.

`ParquetSpanExporter` is an SDK `SpanExporter`: put it behind a `BatchSpanProcessor` and an agent
writes its spans straight into the lake, no collector process needed (the embedded default).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, StatusCode

from tracevals.collector.from_otlp import service_name
from tracevals.collector.lake_writer import LakeWriter
from tracevals.collector.normalize import normalize

_log = logging.getLogger(__name__)

_KINDS = {
    SpanKind.INTERNAL: "internal",
    SpanKind.SERVER: "server",
    SpanKind.CLIENT: "client",
    SpanKind.PRODUCER: "producer",
    SpanKind.CONSUMER: "consumer",
}
_STATUS = {StatusCode.UNSET: "unset", StatusCode.OK: "ok", StatusCode.ERROR: "error"}


def _plain(value: Any) -> Any:
    """Attribute values as JSON-ready Python values, types kept (tuples become lists)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.hex()
    return value


def _attrs(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    return {str(k): _plain(v) for k, v in (attributes or {}).items()}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def row_from_span(span: ReadableSpan) -> dict[str, Any]:
    ctx = span.get_span_context()
    assert ctx is not None
    attrs = _attrs(span.attributes)
    resource = _attrs(span.resource.attributes if span.resource else None)
    status = _STATUS.get(span.status.status_code, "unset")
    start = span.start_time or 0
    end = span.end_time
    scope = span.instrumentation_scope
    row: dict[str, Any] = {
        "trace_id": f"{ctx.trace_id:032x}",
        "span_id": f"{ctx.span_id:016x}",
        "parent_span_id": f"{span.parent.span_id:016x}" if span.parent else None,
        "name": span.name,
        "span_kind": _KINDS.get(span.kind, "internal"),
        "start_time": start,
        "end_time": end,
        "duration_ms": (end - start) / 1e6 if end else None,
        "status_code": status,
        "status_message": span.status.description,
        "attributes": _json(attrs),
        "resource_attributes": _json(resource),
        "scope_name": scope.name if scope else None,
        "scope_version": scope.version if scope else None,
        "events": _json(
            [{"name": e.name, "time_unix_nano": e.timestamp, "attributes": _attrs(e.attributes)} for e in span.events]
        ),
        "links": _json(
            [
                {
                    "trace_id": f"{link.context.trace_id:032x}",
                    "span_id": f"{link.context.span_id:016x}",
                    "attributes": _attrs(link.attributes),
                }
                for link in span.links
            ]
        ),
        "service_name": service_name(resource),
    }
    row.update(normalize(attrs, span.name, status))
    if row["error_type"] is None and status == "error":
        row["error_type"] = _exception_type(span) or "error"
    return row


def _exception_type(span: ReadableSpan) -> str | None:
    for event in span.events:
        if event.name == "exception" and event.attributes:
            value = event.attributes.get("exception.type")
            if value:
                return str(value)
    return None


class ParquetSpanExporter(SpanExporter):
    """Writes finished spans into a lake directory as Parquet (the embedded default)."""

    def __init__(self, lake: str | os.PathLike[str]) -> None:
        self.writer = LakeWriter(lake)
        self._shutdown = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        try:
            self.writer.write_rows(row_from_span(s) for s in spans)
        except Exception:  # never raise into the host program; the SDK logs the failure
            _log.exception("tracevals: could not write %d spans to %s", len(spans), self.writer.lake)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._shutdown = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
