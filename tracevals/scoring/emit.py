"""Scores sent back as OpenTelemetry `gen_ai.evaluation.result` events (OTLP log records).

One event per score row, through the OpenTelemetry SDK's logs API, parented to the judged trace (the
trace id, and its root span id when known), so a trace backend shows the verdict on the trace:

| attribute | value |
|---|---|
| `gen_ai.evaluation.name` | the evaluator (`retry_discipline`) |
| `gen_ai.evaluation.score.value` | the score in [0, 1] |
| `gen_ai.evaluation.score.label` | `pass` or `fail` |
| `gen_ai.evaluation.explanation` | the reason, with its arithmetic |
| `gen_ai.conversation.id` | the session id |
| `tracevals.task.id`, `tracevals.attempt`, `tracevals.variant`, `tracevals.evaluator.version` | as in the score row |

The exporter is the OTLP one (`OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`,
protocol from `OTEL_EXPORTER_OTLP_PROTOCOL`, `http/protobuf` by default, or `grpc`); a `tracevals
collect` receiver writes the events into the lake's `logs/`. Export failures are logged, never raised.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

import polars as pl
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from tracevals import env

EVENT_NAME = "gen_ai.evaluation.result"
_log = logging.getLogger(__name__)


def otlp_log_exporter() -> LogRecordExporter:
    """The OTLP log exporter the standard environment variables describe."""
    protocol = (
        os.environ.get(env.OTLP_LOGS_PROTOCOL) or os.environ.get(env.OTLP_PROTOCOL) or ""
    ).strip() or "http/protobuf"
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcExporter

        return GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpExporter

    return HttpExporter()


class EvaluationEmitter:
    """Emit score rows as `gen_ai.evaluation.result` events; `shutdown()` flushes (idempotent)."""

    def __init__(self, exporter: LogRecordExporter | None = None, service_name: str = "tracevals-score") -> None:
        self._provider = LoggerProvider(resource=Resource.create({"service.name": service_name}))
        self._provider.add_log_record_processor(BatchLogRecordProcessor(exporter or otlp_log_exporter()))
        self._logger = self._provider.get_logger("tracevals.evaluators")
        self._closed = False

    def __call__(self, scores: pl.DataFrame, root_spans: Mapping[str, str] | None = None) -> None:
        self.emit(scores, root_spans)

    def emit(self, scores: pl.DataFrame, root_spans: Mapping[str, str] | None = None) -> int:
        """Send one event per row; `root_spans` maps a trace id to its root span id. Returns the count."""
        if self._closed:
            return 0
        sent = 0
        for row in scores.iter_rows(named=True):
            try:
                self._logger.emit(
                    event_name=EVENT_NAME,
                    context=_context(row["trace_id"], (root_spans or {}).get(row["trace_id"])),
                    body=row["reason"],
                    attributes=_attributes(row),
                )
                sent += 1
            except Exception:  # telemetry never stops scoring
                _log.exception("tracevals: could not emit %s for trace %s", EVENT_NAME, row.get("trace_id"))
        return sent

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._provider.force_flush()
            self._provider.shutdown()
        except Exception:
            _log.exception("tracevals: could not flush %s events", EVENT_NAME)


def _attributes(row: Mapping[str, object]) -> dict[str, str | int | float | bool]:
    out: dict[str, str | int | float | bool] = {
        "gen_ai.evaluation.name": str(row["evaluator"]),
        "gen_ai.evaluation.score.value": float(row["score"]),  # type: ignore[arg-type]
        "gen_ai.evaluation.score.label": "pass" if row["passed"] else "fail",
        "gen_ai.evaluation.explanation": str(row["reason"]),
        "tracevals.evaluator.version": int(row["evaluator_version"]),  # type: ignore[call-overload]
    }
    for key, column in (
        ("gen_ai.conversation.id", "session_id"),
        ("tracevals.task.id", "task_id"),
        ("tracevals.attempt", "attempt"),
        ("tracevals.variant", "variant"),
    ):
        value = row.get(column)
        if value is not None:
            out[key] = value  # type: ignore[assignment]
    return out


def _context(trace_id: str | None, span_id: str | None) -> Context | None:
    """A context holding the judged trace (and root span) as a remote parent, or None when unknown."""
    try:
        tid = int(trace_id or "", 16)
        sid = int(span_id, 16) if span_id else 0
    except ValueError:
        return None
    if tid == 0:
        return None
    # A span id of 0 is invalid; the record then carries no parent, so use a stand-in derived from the
    # trace id: backends still file the event under the trace.
    sid = sid or (tid & 0xFFFFFFFFFFFFFFFF) or 1
    return set_span_in_context(NonRecordingSpan(SpanContext(tid, sid, is_remote=True, trace_flags=TraceFlags(1))))
