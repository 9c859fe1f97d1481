"""`tracevals.instrument()`: one call that sets up tracing for an agent process.

Where spans go, in order of precedence:
1. `lake=` given: the embedded Parquet writer, in-process, no server;
2. `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set: an OTLP exporter, with
   the protocol from `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` by default, or `grpc`);
3. otherwise the embedded writer into `$TRACEVALS_LAKE`, or `./lake`.

The global tracer provider can be set only once per process, so tracevals installs one switchable
span processor into it and later calls replace what that processor delegates to.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter

from tracevals.collector.from_sdk import ParquetSpanExporter
from tracevals.instrumentation.content import set_capture
from tracevals.instrumentation.context import SessionSpanProcessor

_log = logging.getLogger(__name__)

LAKE_ENV = "TRACEVALS_LAKE"


class _SwitchableProcessor(SpanProcessor):
    """Delegates to whatever the latest `instrument()` call configured."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._delegates: tuple[SpanProcessor, ...] = ()

    def swap(self, delegates: tuple[SpanProcessor, ...]) -> tuple[SpanProcessor, ...]:
        with self._lock:
            old, self._delegates = self._delegates, delegates
        return old

    def on_start(self, span: SdkSpan, parent_context: object = None) -> None:
        for p in self._delegates:
            p.on_start(span, parent_context=parent_context)  # type: ignore[arg-type]

    def on_end(self, span: ReadableSpan) -> None:
        for p in self._delegates:
            p.on_end(span)

    def shutdown(self) -> None:
        for p in self.swap(()):
            p.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all(p.force_flush(timeout_millis) for p in self._delegates)


_switch: _SwitchableProcessor | None = None
_switch_lock = threading.Lock()


@dataclass
class Telemetry:
    """What `instrument()` set up; `shutdown()` flushes and detaches it."""

    provider: TracerProvider
    exporter: SpanExporter
    destination: str
    _processors: tuple[SpanProcessor, ...]

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all(p.force_flush(timeout_millis) for p in self._processors)

    def shutdown(self) -> None:
        self.force_flush()
        if _switch is not None:
            with _switch._lock:
                if _switch._delegates == self._processors:
                    _switch._delegates = ()
        for p in self._processors:
            p.shutdown()


def _otlp_exporter() -> tuple[SpanExporter, str] | None:
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not endpoint:
        return None
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    ).strip() or "http/protobuf"
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(), f"otlp grpc {endpoint}"
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(), f"otlp http {endpoint}"


def _provider(service_name: str | None) -> TracerProvider:
    global _switch
    with _switch_lock:
        current = trace.get_tracer_provider()
        if not isinstance(current, TracerProvider):
            attrs = {"service.name": service_name} if service_name else {}
            current = TracerProvider(resource=Resource.create(attrs))
            trace.set_tracer_provider(current)
            current = trace.get_tracer_provider()  # another thread may have won the race
            assert isinstance(current, TracerProvider)
        if _switch is None:
            _switch = _SwitchableProcessor()
            current.add_span_processor(_switch)
        return current


def instrument(
    lake: str | os.PathLike[str] | None = None,
    *,
    service_name: str | None = None,
    capture_content: bool | None = None,
    batch: bool = True,
    instrumentors: bool = True,
) -> Telemetry:
    """Trace this process's agent: model calls, tool calls, agents and sessions.

    >>> telemetry = tracevals.instrument(lake="lake")   # embedded: spans go to ./lake as Parquet
    >>> ...                                            # run the agent
    >>> telemetry.shutdown()                           # flush before exit

    `capture_content` overrides `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (off by default).
    """
    if capture_content is not None:
        set_capture(capture_content)
    exporter: SpanExporter
    otlp = None if lake is not None else _otlp_exporter()
    if otlp is not None:
        exporter, destination = otlp
    else:
        path = Path(lake if lake is not None else os.environ.get(LAKE_ENV, "lake"))
        exporter, destination = ParquetSpanExporter(path), f"lake {path}"
    provider = _provider(service_name)
    span_processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    processors: tuple[SpanProcessor, ...] = (SessionSpanProcessor(), span_processor)
    assert _switch is not None
    for old in _switch.swap(processors):
        old.shutdown()
    if instrumentors:
        enable_instrumentors()
    _log.debug("tracevals: spans go to %s", destination)
    return Telemetry(provider=provider, exporter=exporter, destination=destination, _processors=processors)


def enable_instrumentors() -> None:
    """Turn on tracevals' model-client instrumentors for the libraries that are installed."""
    try:
        import openai  # noqa: F401
    except ImportError:
        return
    from tracevals.instrumentation.openai_chat import OpenAIInstrumentor

    instrumentor = OpenAIInstrumentor()
    if not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument()
