"""Sessions, agents and hand-overs: `session()`, `agent()`, `handoff()`, `end_session()`.

`session(id)` puts `gen_ai.conversation.id` on every span started beneath it: tracevals' own spans
set it themselves, and `SessionSpanProcessor` (installed by `tracevals.instrument()`) sets it on the
spans of other instrumentations too. It opens no span of its own: a session spans many traces (one
per turn), and a span around it all would make them one trace.

`session()` and `agent()` are context managers and decorators, for sync and async functions alike
(a decorated coroutine function enters the context when it runs, not when it is called).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from tracevals.instrumentation.content import record_failure
from tracevals.instrumentation.redact import current_redactor
from tracevals.instrumentation.stepping import astepping, stepping
from tracevals.model import attributes as tv
from tracevals.model.json_text import whole_text

_log = logging.getLogger(__name__)
_TRACER = "tracevals.instrumentation.context"
F = TypeVar("F", bound=Callable[..., Any])

_session_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("tracevals_session_id", default=None)


def current_session_id() -> str | None:
    return _session_id.get()


class _Scope:
    """A context manager that is also a decorator of sync and async functions, and of sync and async generator
    functions; each use is fresh.

    A scope is opened once (`_open`: what it holds for its life, an agent's span) and made current
    (`_activate`, undone by `_deactivate`) for as long as its code runs: the whole block, or, for a generator,
    each step of it and not the time between, when the code that iterates it runs (a streaming response's
    writer): nothing of the scope leaks into that code, and a step taken from another task finds its own
    context. Closed (`_close`) with the exception that left it, if any; a generator closed before its end (the
    reader stopped) is no failure."""

    def _open(self) -> Any:
        return None

    def _activate(self, held: Any) -> Any:
        raise NotImplementedError

    def _deactivate(self, held: Any, token: Any) -> None:
        raise NotImplementedError

    def _close(self, held: Any, exc: BaseException | None) -> None:
        pass

    def _value(self, held: Any) -> Any:
        return held

    def _enter(self) -> tuple[Any, Any]:
        held = self._open()
        return held, self._activate(held)

    def _exit(self, state: tuple[Any, Any], exc: BaseException | None) -> None:
        held, token = state
        self._deactivate(held, token)
        self._close(held, exc)

    def __enter__(self) -> Any:
        state = self._enter()
        self.__dict__.setdefault("_states", []).append(state)  # a stack: the same object may nest
        return self._value(state[0])

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self._exit(self.__dict__["_states"].pop(), exc)

    @contextmanager
    def _entered(self) -> Iterator[None]:
        """One use as a decorator's: its own state, so that calls running at once (threads, tasks) do not
        share the stack `__enter__` keeps."""
        state = self._enter()
        try:
            yield
        except BaseException as exc:
            self._exit(state, exc)
            raise
        self._exit(state, None)

    def __call__(self, fn: F) -> F:
        if isinstance(fn, (staticmethod, classmethod)):  # above `@staticmethod`: the function inside, kept one
            return cast(F, type(fn)(self(fn.__func__)))
        if inspect.isasyncgenfunction(fn):
            return cast(F, functools.wraps(fn)(astepping(self._starting(fn))))
        if inspect.isgeneratorfunction(fn):
            return cast(F, functools.wraps(fn)(stepping(self._starting(fn))))
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with self._entered():
                    return await fn(*args, **kwargs)

            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self._entered():
                return fn(*args, **kwargs)

        return cast(F, wrapper)

    def _starting(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """What a decorated generator does on its first step (`stepping`): make the generator, open the scope
        (when it first runs, as a coroutine's scope opens when it runs), and say how to make it current and
        how to close it."""

        def start(*args: Any, **kwargs: Any) -> tuple[Any, Any, Any]:
            inner = fn(*args, **kwargs)
            held = self._open()
            return inner, lambda: self._current(held), lambda items, exc: self._close(held, exc)

        return start

    @contextmanager
    def _current(self, held: Any) -> Iterator[None]:
        token = self._activate(held)
        try:
            yield
        finally:
            self._deactivate(held, token)


class session(_Scope):  # lower case: used like a function, `with tracevals.session("s-1"):`
    """Mark everything inside as one conversation (`gen_ai.conversation.id`).

    >>> with tracevals.session("s-1"): ...
    >>> @tracevals.session("s-1")
    ... async def handle(message: str) -> str: ...
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = whole_text(session_id) if isinstance(session_id, str) else session_id

    def _open(self) -> Any:
        return self.session_id

    def _activate(self, held: Any) -> contextvars.Token[str | None]:
        return _session_id.set(held)

    def _deactivate(self, held: Any, token: contextvars.Token[str | None]) -> None:
        _session_id.reset(token)


class agent(_Scope):  # lower case: used like a function, `with tracevals.agent("support"):`
    """An `invoke_agent {name}` span around an agent's work; a context manager or a decorator."""

    def __init__(self, name: str, description: str | None = None) -> None:
        self.name = whole_text(name) if isinstance(name, str) else name
        self.description = description

    def _open(self) -> Span:
        attrs: dict[str, Any] = {gen_ai.GEN_AI_OPERATION_NAME: "invoke_agent", gen_ai.GEN_AI_AGENT_NAME: self.name}
        if self.description:
            attrs[gen_ai.GEN_AI_AGENT_DESCRIPTION] = self.description
        sid = _session_id.get()
        if sid is not None:
            attrs[gen_ai.GEN_AI_CONVERSATION_ID] = sid
        return trace.get_tracer(_TRACER).start_span(
            f"invoke_agent {self.name}", kind=SpanKind.INTERNAL, attributes=attrs
        )

    def _activate(self, held: Span) -> object:
        return otel_context.attach(trace.set_span_in_context(held))

    def _deactivate(self, held: Span, token: object) -> None:
        otel_context.detach(token)  # type: ignore[arg-type]

    def _close(self, held: Span, exc: BaseException | None) -> None:
        if exc is not None:
            try:
                record_failure(held, exc, type(exc).__qualname__)
            except Exception:  # telemetry never raises into the host program
                _log.exception("tracevals: could not record the failure of agent %s", self.name)
        held.end()


def handoff(
    reason: str,
    completed: Sequence[str] = (),
    pending: Sequence[str] = (),
    candidates: Sequence[str] = (),
) -> None:
    """Record a structured hand-over to a human: why, what is done, what waits, the candidates.

    These fields are what a person needs to take over, passed explicitly by the agent's code, so
    they are recorded whether or not message content capture is on; secrets are redacted from them
    as from captured content.
    """
    try:
        clean = current_redactor().redact  # secrets never leave, even in a hand-over note
        attrs: dict[str, Any] = {
            tv.HANDOFF_REASON: clean(str(reason)),
            tv.HANDOFF_COMPLETED: [clean(str(x)) for x in completed],
            tv.HANDOFF_PENDING: [clean(str(x)) for x in pending],
            tv.HANDOFF_CANDIDATES: [clean(str(x)) for x in candidates],
        }
        sid = _session_id.get()
        if sid is not None:
            attrs[gen_ai.GEN_AI_CONVERSATION_ID] = sid
        trace.get_tracer(_TRACER).start_span("handoff", kind=SpanKind.INTERNAL, attributes=attrs).end()
    except Exception:  # telemetry never raises into the host program
        _log.exception("tracevals: could not record hand-over")


def end_session(session_id: str | None = None, status: str = "finished") -> None:
    """Mark the end of a session explicitly, so "is it finished?" needs no idle timer.

    A `session.end` span with `tracevals.session.end=true`; `status` other than "finished" (e.g.
    "error", "abandoned") makes it an ERROR span, so that a failed session is visible as one.
    """
    sid = session_id or _session_id.get()
    if sid is None:
        _log.warning("tracevals.end_session() called outside a session and without an id")
        return
    try:
        attrs: dict[str, Any] = {tv.SESSION_END: True, tv.SESSION_STATUS: status, gen_ai.GEN_AI_CONVERSATION_ID: sid}
        span = trace.get_tracer(_TRACER).start_span("session.end", kind=SpanKind.INTERNAL, attributes=attrs)
        if status != "finished":
            span.set_status(Status(StatusCode.ERROR, status))
        span.end()
    except Exception:
        _log.exception("tracevals: could not record the end of session %s", sid)


class SessionSpanProcessor(SpanProcessor):
    """Copies the current session id onto every span as it starts (spans of any instrumentation); where no
    session is current (a thread the context did not reach), the session of the span's parent in this
    process, so that a span beneath a session's span is in that session."""

    def on_start(self, span: SdkSpan, parent_context: otel_context.Context | None = None) -> None:
        if not span.is_recording() or gen_ai.GEN_AI_CONVERSATION_ID in (span.attributes or {}):
            return
        sid = _session_id.get()
        if sid is None:
            parent = getattr(trace.get_current_span(parent_context), "attributes", None)
            given = parent.get(gen_ai.GEN_AI_CONVERSATION_ID) if parent else None
            sid = given if isinstance(given, str) else None
        if sid is not None:
            span.set_attribute(gen_ai.GEN_AI_CONVERSATION_ID, sid)

    def on_end(self, span: ReadableSpan) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
