"""OTel log records (GenAI content events) into the embedded lake, beside the spans.

With `event_only` / `span_and_event` content capture, message content travels as log records
(`gen_ai.client.inference.operation.details`, `tracevals.tool.call.details`). `tracevals.instrument()`
puts `ParquetLogExporter` behind the global LoggerProvider so that, in the embedded default, those
records land in `LAKE/logs/` (the `logs` view), joined to their span by (trace_id, span_id), exactly
as the collector stores OTLP log records. The logs counterpart of `collector/from_sdk.py`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk._logs import LogRecordProcessor, ReadableLogRecord, ReadWriteLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

from tracevals.collector.lake_writer import LakeWriter
from tracevals.collector.schema import LOGS_DIR

_log = logging.getLogger(__name__)


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.hex()
    return value


def _json(value: Any) -> str:
    return json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":"), default=str)


def row_from_log(record: ReadableLogRecord) -> dict[str, Any]:
    log = record.log_record
    resource = _plain(dict(record.resource.attributes)) if record.resource else {}
    observed = log.observed_timestamp or None
    return {
        "trace_id": f"{log.trace_id:032x}" if log.trace_id else None,
        "span_id": f"{log.span_id:016x}" if log.span_id else None,
        "time": log.timestamp or observed or 0,
        "observed_time": observed,
        "event_name": log.event_name or None,
        "severity_number": log.severity_number.value if log.severity_number is not None else None,
        "severity_text": log.severity_text,
        "body": _json(log.body) if log.body is not None else None,
        "attributes": _json(dict(log.attributes or {})),
        "resource_attributes": _json(resource),
        "scope_name": record.instrumentation_scope.name if record.instrumentation_scope else None,
        "service_name": resource.get("service.name"),
    }


class ParquetLogExporter(LogRecordExporter):
    """Writes log records into a lake directory as Parquet (`LAKE/logs/date=…/hour=…/`)."""

    def __init__(self, lake: str | os.PathLike[str]) -> None:
        self.writer = LakeWriter(lake)
        self._shutdown = False

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        if self._shutdown:
            return LogRecordExportResult.FAILURE
        try:
            self.writer.write_rows((row_from_log(r) for r in batch), LOGS_DIR)
        except Exception:  # never raise into the host program
            _log.exception("tracevals: could not write %d log records to %s", len(batch), self.writer.lake)
            return LogRecordExportResult.FAILURE
        return LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        self._shutdown = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class SwitchableLogProcessor(LogRecordProcessor):
    """Delegates to whatever the latest `instrument()` call configured (the logs twin of the span one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.delegates: tuple[LogRecordProcessor, ...] = ()

    def swap(self, delegates: tuple[LogRecordProcessor, ...]) -> tuple[LogRecordProcessor, ...]:
        with self._lock:
            old, self.delegates = self.delegates, delegates
        return old

    def release(self, mine: tuple[LogRecordProcessor, ...]) -> None:
        """Detach `mine`, unless a later `instrument()` call has replaced them already."""
        with self._lock:
            if self.delegates == mine:
                self.delegates = ()

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        for p in self.delegates:
            p.on_emit(log_record)

    def shutdown(self) -> None:
        for p in self.swap(()):
            p.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all(p.force_flush(timeout_millis) for p in self.delegates)
