"""Sessions, agents and hand-overs: `session()`, `agent()`, `handoff()`, `end_session()`.

`session(id)` puts `gen_ai.conversation.id` on every span started beneath it (through
`SessionSpanProcessor`, which `tracevals.instrument()` installs), so that spans of other
instrumentations join the session too. It opens no span of its own: a session spans many traces
(one per turn), and a span around it all would make them one trace.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from tracevals import attributes as tv

_log = logging.getLogger(__name__)
_TRACER = "tracevals.instrumentation.context"

_session_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("tracevals_session_id", default=None)


def current_session_id() -> str | None:
    return _session_id.get()


@contextmanager
def session(session_id: str) -> Iterator[str]:
    """Mark everything inside as one conversation (`gen_ai.conversation.id`)."""
    token = _session_id.set(session_id)
    try:
        yield session_id
    finally:
        _session_id.reset(token)


@contextmanager
def agent(name: str, description: str | None = None) -> Iterator[Span]:
    """An `invoke_agent` span around an agent's work; usable as a decorator too."""
    tracer = trace.get_tracer(_TRACER)
    with tracer.start_as_current_span(f"invoke_agent {name}", kind=SpanKind.INTERNAL) as span:
        span.set_attribute(gen_ai.GEN_AI_OPERATION_NAME, "invoke_agent")
        span.set_attribute(gen_ai.GEN_AI_AGENT_NAME, name)
        if description:
            span.set_attribute(gen_ai.GEN_AI_AGENT_DESCRIPTION, description)
        yield span


def handoff(
    reason: str,
    completed: Sequence[str] = (),
    pending: Sequence[str] = (),
    candidates: Sequence[str] = (),
) -> None:
    """Record a structured hand-over to a human: why, what is done, what waits, the candidates.

    These fields are what a person needs to take over, passed explicitly by the agent's code, so
    they are recorded whether or not message content capture is on. Keep secrets out of them.
    """
    try:
        tracer = trace.get_tracer(_TRACER)
        with tracer.start_as_current_span("handoff", kind=SpanKind.INTERNAL) as span:
            span.set_attribute(tv.HANDOFF_REASON, reason)
            span.set_attribute(tv.HANDOFF_COMPLETED, [str(x) for x in completed])
            span.set_attribute(tv.HANDOFF_PENDING, [str(x) for x in pending])
            span.set_attribute(tv.HANDOFF_CANDIDATES, [str(x) for x in candidates])
    except Exception:  # telemetry never raises into the host program
        _log.exception("tracevals: could not record hand-over")


def end_session(session_id: str | None = None, status: str = "finished") -> None:
    """Mark the end of a session explicitly, so "is it finished?" needs no idle timer."""
    sid = session_id or _session_id.get()
    if sid is None:
        _log.warning("tracevals.end_session() called outside a session and without an id")
        return
    token = _session_id.set(sid)
    try:
        tracer = trace.get_tracer(_TRACER)
        with tracer.start_as_current_span("session.end", kind=SpanKind.INTERNAL) as span:
            span.set_attribute(tv.SESSION_END, True)
            span.set_attribute("tracevals.session.status", status)
            if status != "finished":
                span.set_status(Status(StatusCode.ERROR, status))
    finally:
        _session_id.reset(token)


class SessionSpanProcessor(SpanProcessor):
    """Copies the current session id onto every span as it starts."""

    def on_start(self, span: SdkSpan, parent_context: otel_context.Context | None = None) -> None:
        sid = _session_id.get()
        if sid is not None and span.is_recording():
            span.set_attribute(gen_ai.GEN_AI_CONVERSATION_ID, sid)

    def on_end(self, span: ReadableSpan) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
