"""The embedded lake: OpenTelemetry SDK exporters that write spans and log records as lake rows.

`ParquetSpanExporter` is an SDK `SpanExporter`: put it behind a `BatchSpanProcessor` and an agent
writes its spans straight into the lake, no collector process needed (the embedded default).
`ParquetLogExporter` is its logs twin: with `event_only` / `span_and_event` content capture, message
content travels as log records (`gen_ai.client.inference.operation.details`,
`tracevals.tool.call.details`), which land in `LAKE/logs/` (the `logs` view), joined to their span by
(trace_id, span_id), exactly as the collector stores OTLP log records.

Both encode what the SDK hands them as OTLP, with the OpenTelemetry exporters' own encoder (what an OTLP
exporter would send the collector), and convert that with the collector's one conversion
(`tracevals.spans.rows`): the same rows, the same normalizer, one definition for both writers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import pyarrow as pa
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tracevals.lake.lake import LakeLike
from tracevals.lake.schema import LOG_SCHEMA, LOGS_DIR, SPAN_SCHEMA, SPANS_DIR
from tracevals.lake.writer import LakeWriter
from tracevals.spans.rows import MAX_VALUE_BYTES, log_tuples, rows_table, span_tuples

_log = logging.getLogger(__name__)


def spans_table(spans: Sequence[ReadableSpan], max_value_bytes: int | None = MAX_VALUE_BYTES) -> pa.Table:
    """SDK spans as lake rows: encoded as an OTLP request, then converted as the collector converts one (values
    longer than `max_value_bytes` cut and flagged, as the collector's default cuts them)."""
    return rows_table(span_tuples(encode_spans(spans), max_value_bytes), SPAN_SCHEMA)


def logs_table(records: Sequence[ReadableLogRecord], max_value_bytes: int | None = MAX_VALUE_BYTES) -> pa.Table:
    """SDK log records as lake rows, by the same road as `spans_table`."""
    return rows_table(log_tuples(encode_logs(records), max_value_bytes), LOG_SCHEMA)


class _LakeExporter:
    """What both embedded exporters do: rows into the lake through one `LakeWriter`, never raising into
    the host program (a failure is logged and reported to the SDK, which logs it too)."""

    table = SPANS_DIR
    what = "spans"

    def __init__(self, lake: LakeLike) -> None:
        self.writer = LakeWriter(lake)
        self._shutdown = False
        self._said: set[tuple[type, int | None]] = set()

    def _write(self, build: Callable[[], pa.Table], count: int) -> bool:
        if self._shutdown:
            return False
        try:
            self.writer.write_table(build(), self.table)
        except OSError as exc:
            # the lake's place, not a fault of ours: one line, once for each kind of error (a wrong path or a
            # full disk fails every batch; a traceback each time buried the agent's own output)
            said = (type(exc), exc.errno)
            log = _log.debug if said in self._said else _log.error
            self._said.add(said)
            log(
                "tracevals: could not write %d %s to %s: %s; they are dropped, and later ones too until it can be "
                "written: give instrument(lake=...) or TRACEVALS_LAKE a folder this process can write (said once)",
                count, self.what, self.writer.lake, f"{exc.strerror}: {exc.filename}" if exc.filename else exc,
            )  # fmt: skip
            return False
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
        ok = self._write(lambda: spans_table(spans), len(spans))
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE


class ParquetLogExporter(_LakeExporter, LogRecordExporter):
    """Writes log records into a lake directory as Parquet (`LAKE/logs/date=…/hour=…/`)."""

    table = LOGS_DIR
    what = "log records"

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        ok = self._write(lambda: logs_table(batch), len(batch))
        return LogRecordExportResult.SUCCESS if ok else LogRecordExportResult.FAILURE
