"""The embedded lake: OpenTelemetry SDK exporters that write spans and log records as lake rows.

`ParquetSpanExporter` is an SDK `SpanExporter`: put it behind a `BatchSpanProcessor` and an agent
writes its spans straight into the lake, no collector process needed (the embedded default).
`ParquetLogExporter` is its logs twin: with `event_only` / `span_and_event` content capture, message
content travels as log records (`gen_ai.client.inference.operation.details`,
`tracevals.tool.call.details`), which land in `LAKE/logs/` (the `logs` view), joined to their span by
(trace_id, span_id), exactly as the collector stores OTLP log records. Both write through the one
`LakeWriter`, and fill the canonical columns with the one normalizer, as the collector does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, StatusCode

from tracevals.lake.lake import LakeLike
from tracevals.lake.normalize import normalize
from tracevals.lake.rows import json_text, plain, service_name
from tracevals.lake.schema import LOGS_DIR, SPANS_DIR
from tracevals.lake.writer import LakeWriter

_log = logging.getLogger(__name__)

_KINDS = {
    SpanKind.INTERNAL: "internal",
    SpanKind.SERVER: "server",
    SpanKind.CLIENT: "client",
    SpanKind.PRODUCER: "producer",
    SpanKind.CONSUMER: "consumer",
}
_STATUS = {StatusCode.UNSET: "unset", StatusCode.OK: "ok", StatusCode.ERROR: "error"}


def _attrs(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    return {str(k): plain(v) for k, v in (attributes or {}).items()}


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
        "attributes": json_text(attrs),
        "resource_attributes": json_text(resource),
        "scope_name": scope.name if scope else None,
        "scope_version": scope.version if scope else None,
        "events": json_text(
            [{"name": e.name, "time_unix_nano": e.timestamp, "attributes": _attrs(e.attributes)} for e in span.events]
        ),
        "links": json_text(
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
    row.update(normalize(attrs, span.name, status, _exception_type(span) if status == "error" else None))
    return row


def _exception_type(span: ReadableSpan) -> str | None:
    for event in span.events:
        if event.name == "exception" and event.attributes:
            value = event.attributes.get("exception.type")
            if value:
                return str(value)
    return None


class _LakeExporter:
    """What both embedded exporters do: rows into the lake through one `LakeWriter`, never raising into
    the host program (a failure is logged and reported to the SDK, which logs it too)."""

    table = SPANS_DIR
    what = "spans"

    def __init__(self, lake: LakeLike) -> None:
        self.writer = LakeWriter(lake)
        self._shutdown = False

    def _write(self, rows: Iterable[dict[str, Any]], count: int) -> bool:
        if self._shutdown:
            return False
        try:
            self.writer.write_rows(rows, self.table)
        except Exception:
            _log.exception("tracevals: could not write %d %s to %s", count, self.what, self.writer.lake)
            return False
        return True

    def shutdown(self) -> None:
        self._shutdown = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class ParquetSpanExporter(_LakeExporter, SpanExporter):
    """Writes finished spans into a lake directory as Parquet (the embedded default)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        ok = self._write((row_from_span(s) for s in spans), len(spans))
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE


def row_from_log(record: ReadableLogRecord) -> dict[str, Any]:
    log = record.log_record
    resource = plain(dict(record.resource.attributes)) if record.resource else {}
    observed = log.observed_timestamp or None
    return {
        "trace_id": f"{log.trace_id:032x}" if log.trace_id else None,
        "span_id": f"{log.span_id:016x}" if log.span_id else None,
        "time": log.timestamp or observed or 0,
        "observed_time": observed,
        "event_name": log.event_name or None,
        "severity_number": log.severity_number.value if log.severity_number is not None else None,
        "severity_text": log.severity_text,
        "body": json_text(plain(log.body)) if log.body is not None else None,
        "attributes": json_text(plain(dict(log.attributes or {}))),
        "resource_attributes": json_text(resource),
        "scope_name": record.instrumentation_scope.name if record.instrumentation_scope else None,
        "service_name": resource.get("service.name"),
    }


class ParquetLogExporter(_LakeExporter, LogRecordExporter):
    """Writes log records into a lake directory as Parquet (`LAKE/logs/date=…/hour=…/`)."""

    table = LOGS_DIR
    what = "log records"

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        ok = self._write((row_from_log(r) for r in batch), len(batch))
        return LogRecordExportResult.SUCCESS if ok else LogRecordExportResult.FAILURE
