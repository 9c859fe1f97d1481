"""`tracevals.instrument()`: one call that sets up tracing for an agent process.

Where spans (and content log records) go, in order of precedence:
1. `lake=` given: the embedded Parquet writer, in-process, no server;
2. `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set: an OTLP exporter, with
   the protocol from `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` by default, or `grpc`);
3. otherwise the embedded writer into `$TRACEVALS_LAKE`, or `./lake`.

The global tracer and logger providers can be set only once per process, so tracevals installs one
switchable processor into each and later calls replace what that processor delegates to.
"""

from __future__ import annotations

import importlib.util
import logging
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import wrapt
from opentelemetry import _logs, trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter

from tracevals import env
from tracevals.instrumentation.content import CaptureMode, set_capture
from tracevals.instrumentation.context import SessionSpanProcessor
from tracevals.instrumentation.redact import Redactor, set_redactor
from tracevals.instrumentation.switch import SwitchableLogProcessor, SwitchableSpanProcessor
from tracevals.lake.lake import Lake, LakeLike
from tracevals.spans.exporters import ParquetLogExporter, ParquetSpanExporter

_log = logging.getLogger(__name__)

LAKE_ENV = env.LAKE


_switch: SwitchableSpanProcessor | None = None
_log_switch: SwitchableLogProcessor | None = None
_switch_lock = threading.Lock()


@dataclass
class Telemetry:
    """What `instrument()` set up; `shutdown()` flushes and detaches it."""

    provider: TracerProvider
    exporter: SpanExporter
    destination: str
    _processors: tuple[SpanProcessor, ...]
    _log_processors: tuple[LogRecordProcessor, ...] = ()
    log_exporter: LogRecordExporter | None = None  # where content events (event capture modes) go

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        spans = all(p.force_flush(timeout_millis) for p in self._processors)
        return all(p.force_flush(timeout_millis) for p in self._log_processors) and spans

    def shutdown(self) -> None:
        self.force_flush()
        if _switch is not None:
            _switch.release(self._processors)
        if _log_switch is not None:
            _log_switch.release(self._log_processors)
        for p in self._processors:
            p.shutdown()
        for lp in self._log_processors:
            lp.shutdown()


def pipeline_active() -> bool:
    """Whether an `instrument()` call's processors are in place (and not shut down)."""
    return _switch is not None and bool(_switch.delegates)


def _otlp_endpoint() -> str | None:
    return os.environ.get(env.OTLP_TRACES_ENDPOINT) or os.environ.get(env.OTLP_ENDPOINT)


def _otlp_protocol() -> str:
    return (os.environ.get(env.OTLP_TRACES_PROTOCOL) or os.environ.get(env.OTLP_PROTOCOL) or "").strip() or (
        "http/protobuf"
    )


def _otlp_exporters() -> tuple[SpanExporter, LogRecordExporter, str] | None:
    endpoint = _otlp_endpoint()
    if not endpoint:
        return None
    if _otlp_protocol() == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans

        return GrpcSpans(), GrpcLogs(), f"otlp grpc {endpoint}"
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogs
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans

    return HttpSpans(), HttpLogs(), f"otlp http {endpoint}"


Exporters = Callable[[], tuple[SpanExporter, LogRecordExporter]]


def _exporters(lake: LakeLike | None) -> tuple[SpanExporter, LogRecordExporter, str, Exporters | None]:
    """The span and log exporters `instrument(lake)` writes with (see the module docstring), where they write,
    and how to make another pair like them (for a forked child)."""
    otlp = None if lake is not None else _otlp_exporters()
    if otlp is not None:

        def otlp_again() -> tuple[SpanExporter, LogRecordExporter]:
            again = _otlp_exporters()
            assert again is not None
            return again[0], again[1]

        # gRPC in a forked child needs grpcio's fork support (off by default): a channel made there may hang the
        # call that exports, so a child keeps the parent's processors (its batch is lost at exit, as before)
        return otlp[0], otlp[1], otlp[2], (None if _otlp_protocol() == "grpc" else otlp_again)
    target = Lake.open(lake if lake is not None else os.environ.get(LAKE_ENV, "lake"))  # a dir or s3://…

    def lake_again() -> tuple[SpanExporter, LogRecordExporter]:
        return ParquetSpanExporter(target), ParquetLogExporter(target)

    # an object store's client (the AWS SDK under pyarrow's S3) is not fork-safe either: as gRPC above
    return *lake_again(), f"lake {target}", (None if "://" in str(target) else lake_again)


def _providers(service_name: str | None) -> tuple[TracerProvider, SwitchableSpanProcessor, SwitchableLogProcessor]:
    global _switch, _log_switch
    with _switch_lock:
        resource = Resource.create({"service.name": service_name} if service_name else {})
        current = trace.get_tracer_provider()
        if not isinstance(current, TracerProvider):
            trace.set_tracer_provider(TracerProvider(resource=resource))
            current = trace.get_tracer_provider()  # another thread may have won the race
            assert isinstance(current, TracerProvider)
        if _switch is None:
            _switch = SwitchableSpanProcessor()
            current.add_span_processor(_switch)
        logs = _logs.get_logger_provider()
        if not isinstance(logs, LoggerProvider):
            _logs.set_logger_provider(LoggerProvider(resource=current.resource))
            logs = _logs.get_logger_provider()
        if _log_switch is None and isinstance(logs, LoggerProvider):
            _log_switch = SwitchableLogProcessor()
            logs.add_log_record_processor(_log_switch)
        assert _log_switch is not None
        return current, _switch, _log_switch


def instrument(
    lake: LakeLike | None = None,
    *,
    service_name: str | None = None,
    capture_content: bool | str | CaptureMode | None = None,
    redact_pii: bool | None = None,
    pii_names: Sequence[str] | Mapping[str, str] | None = None,
    batch: bool = True,
    instrumentors: bool = True,
) -> Telemetry:
    """Trace this process's agent: model calls, tool calls, agents and sessions.

    >>> telemetry = tracevals.instrument(lake="lake")   # embedded: spans go to ./lake as Parquet
    >>> ...                                            # run the agent
    >>> telemetry.shutdown()                           # flush before exit

    `capture_content` (True, False or a mode: "span_only", "event_only", "span_and_event") overrides
    `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (off by default). Captured content always
    loses its secrets; `redact_pii` / `pii_names` also replace emails, phone numbers and the listed
    names by stable pseudonyms (default: `TRACEVALS_REDACT_PII`, `TRACEVALS_REDACT_NAMES`).
    """
    if capture_content is not None:
        set_capture(capture_content)
    if redact_pii is not None or pii_names is not None:
        env = Redactor.from_env()
        names = pii_names if pii_names is not None else env.names
        set_redactor(Redactor(pii=bool(redact_pii) if redact_pii is not None else True, names=names, salt=env.salt))
    span_exporter, log_exporter, destination, exporters = _exporters(lake)
    provider, switch, log_switch = _providers(service_name)
    _say_if_sampling_traces(provider)
    # a process pool's worker ends with os._exit (or its pool's SIGTERM), which no batch queue survives: there,
    # each span and record is exported as it ends (`_in_a_forked_child` for a worker forked after this call)
    batch = batch and multiprocessing.parent_process() is None
    _export_in_forked_children(exporters)
    span_processor = BatchSpanProcessor(span_exporter) if batch else SimpleSpanProcessor(span_exporter)
    processors: tuple[SpanProcessor, ...] = (SessionSpanProcessor(), span_processor)
    log_processor = BatchLogRecordProcessor(log_exporter) if batch else SimpleLogRecordProcessor(log_exporter)
    for old in switch.swap(processors):
        old.shutdown()
    for old_log in log_switch.swap((log_processor,)):
        old_log.shutdown()
    if instrumentors:
        enable_instrumentors()
    _log.debug("tracevals: spans go to %s", destination)
    return Telemetry(provider, span_exporter, destination, processors, (log_processor,), log_exporter)


_WHOLE = ("AlwaysOnSampler", "ParentBased{root:AlwaysOnSampler,")  # samplers that keep every trace
_said_sampling = False


def _say_if_sampling_traces(provider: TracerProvider) -> None:
    """One warning when the provider samples traces (`OTEL_TRACES_SAMPLER=traceidratio` ...): a session is many
    traces, one a turn, each kept or dropped on its own, so the lake holds sessions with turns missing, which
    its evaluators would read as what the agent did. Sessions are sampled whole by the collector's
    `session_sampler`."""
    global _said_sampling
    try:
        described = provider.sampler.get_description()
    except Exception:  # telemetry never raises into the host program
        return
    if _said_sampling or described.startswith(_WHOLE):
        return
    _said_sampling = True
    _log.warning(
        "tracevals: the tracer provider samples traces (%s): a session's turns are kept or dropped one by one, "
        "so the lake would hold sessions with turns missing; keep every trace here and sample whole sessions "
        "with the collector's session_sampler (docs/collector.md)",
        described.split(",")[0],
    )


_child_exporters: Exporters | None = None
_fork_hook = False


def _export_in_forked_children(exporters: Exporters | None) -> None:
    """What a child forked from now on exports with: new exporters from `exporters`, each span as it ends (None:
    the parent's processors, unchanged)."""
    global _child_exporters, _fork_hook
    _child_exporters = exporters
    if not _fork_hook and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_in_a_forked_child)
        _fork_hook = True


def _in_a_forked_child() -> None:
    """In a forked child (a `multiprocessing` pool's or a `ProcessPoolExecutor`'s worker on Linux): its spans
    and records are exported as each ends, by exporters of its own (an HTTP exporter's pooled connection or a
    writer's state is the parent's). The parent's batch queue is not the child's to flush: the child ends with
    `os._exit`, or its pool's SIGTERM, and a batch of its spans would go with it. Only this thread runs here:
    no lock is taken."""
    exporters = _child_exporters
    if exporters is None or _switch is None:
        return
    try:
        spans, logs = exporters()
        _switch.delegates = (SessionSpanProcessor(), SimpleSpanProcessor(spans))
        if _log_switch is not None:
            _log_switch.delegates = (SimpleLogRecordProcessor(logs),)
    except Exception:  # telemetry never raises into the host program
        _log.exception("tracevals: could not set up export in a forked process")


_hooked: set[str] = set()


def _enable(load: Callable[[], BaseInstrumentor]) -> None:
    try:
        instrumentor = load()
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument()  # checks the library's version; logs, never raises, on a mismatch
    except Exception:  # telemetry never raises into the host program
        _log.exception("tracevals: could not turn on an instrumentor")


def enable_instrumentors() -> None:
    """Turn on tracevals' instrumentors: now for client libraries already imported, on import for the rest."""
    from tracevals.instrumentation.registry import INSTRUMENTORS, disabled

    off = disabled()
    for name, (module, load) in INSTRUMENTORS.items():
        if name in off:
            continue
        if module in sys.modules:
            _enable(load)
        elif name not in _hooked and importlib.util.find_spec(module) is not None:
            _hooked.add(name)
            wrapt.register_post_import_hook(lambda _module, load=load: _enable(load), module)  # type: ignore[misc]
