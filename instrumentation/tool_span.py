"""The `execute_tool` span around one tool call: start, interception, result or error, end.

Shared by `@tracevals.tool`, `ToolSet` and the MCP instrumentor, so that every tool call is traced,
interceptable and recorded the same way. This is the hot path of tool tracing (see
`bench/instrumentation_overhead.py`): the attributes go in with the span's start, the tracer is
cached per provider, and nothing is serialised unless content capture is on (except the short hash
of the arguments that lets evaluators see retries and duplicates without content).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import AsyncGeneratorType, GeneratorType
from typing import Any, TypeVar, cast

from opentelemetry import trace
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from tracevals.instrumentation.call_span import current_span
from tracevals.instrumentation.clock import current as attempt_clock
from tracevals.instrumentation.content import TOOL_EVENT, capture_enabled, record_content, record_failure
from tracevals.instrumentation.context import current_session_id
from tracevals.instrumentation.interception import ToolInvocation, current_interceptor
from tracevals.instrumentation.stepping import astepping, stepping
from tracevals.instrumentation.tool_error import ToolError
from tracevals.model import attributes as tv
from tracevals.model.calls import args_digest, idempotency_key_in

_log = logging.getLogger(__name__)
_TRACER = "tracevals.instrumentation.tools"
T = TypeVar("T")

# The model's tool call id for the call about to run (set by ToolSet.call or `tool_call_id()`).
_call_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("tracevals_tool_call_id", default=None)
_cached: tuple[object, Tracer | None] = (None, None)


class tool_call_id:  # lower case: used like a function, `with tool_call_id("call_1"): ...`
    """Tell the next tool span which model tool call (`gen_ai.tool.call.id`) it executes."""

    def __init__(self, call_id: str | None) -> None:
        self._call_id = call_id
        self._token: contextvars.Token[str | None] | None = None

    def __enter__(self) -> None:
        self._token = _call_id.set(self._call_id)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _call_id.reset(self._token)


def _tracer() -> Tracer:
    global _cached
    provider = trace.get_tracer_provider()
    if _cached[0] is not provider or _cached[1] is None:
        _cached = (provider, provider.get_tracer(_TRACER))
    assert _cached[1] is not None
    return _cached[1]


def args_hash(arguments: Mapping[str, Any]) -> str:
    """The digest of the arguments' canonical JSON, the idempotency key left out (`model.calls.args_digest`):
    an operation's identity without its content, so that two sends of the same message with fresh keys
    hash alike and stay visible as a duplicate even when content capture is off."""
    return args_digest(arguments)


def start_tool_span(
    name: str,
    effect: str | None,
    arguments: Mapping[str, Any],
    kind: SpanKind = SpanKind.INTERNAL,
    extra: Mapping[str, Any] | None = None,
) -> Span:
    attrs: dict[str, Any] = {
        gen_ai.GEN_AI_OPERATION_NAME: "execute_tool",
        gen_ai.GEN_AI_TOOL_NAME: name,
        gen_ai.GEN_AI_TOOL_TYPE: "function",
    }
    if effect is not None:  # undeclared: no effect recorded (unknown), never a guessed "read"
        attrs[tv.TOOL_EFFECT] = effect
    try:
        call_id = _call_id.get()
        if call_id:
            attrs[gen_ai.GEN_AI_TOOL_CALL_ID] = call_id
        session_id = current_session_id()
        if session_id is not None:
            attrs[gen_ai.GEN_AI_CONVERSATION_ID] = session_id
        key = idempotency_key_in(arguments)  # idempotency_key, idempotencyKey or Idempotency-Key
        if key is not None:
            attrs[tv.IDEMPOTENCY_KEY] = key
        if extra:
            attrs.update(extra)
        attrs[tv.TOOL_ARGS_HASH] = args_hash(arguments)
        clock = attempt_clock()
        if clock is not None:
            attrs[tv.CLOCK_START_MS] = clock.ms
    except Exception:  # telemetry never raises into the host program
        _log.exception("tracevals: could not annotate tool span %s", name)
    return _tracer().start_span(f"execute_tool {name}", kind=kind, attributes=attrs)


def _record_content(
    span: Span, name: str, arguments: Mapping[str, Any], result: Any = None, error: str | None = None
) -> None:
    values: dict[str, Any] = {gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS: dict(arguments)}
    if result is not None:
        values[gen_ai.GEN_AI_TOOL_CALL_RESULT] = result
    record_content(span, values, TOOL_EVENT, error, **{gen_ai.GEN_AI_TOOL_NAME: name})


def _ignore(exc: BaseException) -> None:
    """A step's failure is `stepping`'s to record, once, with the items given so far."""


def _record_clock_end(span: Span) -> None:
    clock = attempt_clock()
    if clock is not None:
        span.set_attribute(tv.CLOCK_END_MS, clock.ms)


def _finish_ok(
    span: Span, name: str, arguments: Mapping[str, Any], result: Any, soft_error: Callable[[Any], str | None] | None
) -> None:
    try:
        error_type = soft_error(result) if soft_error is not None else None
        if error_type:  # a failure the tool reports in its result instead of raising (MCP isError)
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, error_type))
        if capture_enabled():
            _record_content(span, name, arguments, result)
        _record_clock_end(span)
    except Exception:
        _log.exception("tracevals: could not record the result of tool %s", name)
    span.end()


def _finish_error(span: Span, name: str, arguments: Mapping[str, Any], exc: BaseException) -> None:
    try:
        if isinstance(exc, ToolError):
            span.set_attribute(tv.RETRYABLE, exc.retryable)
            if exc.status_code is not None:
                span.set_attribute("http.response.status_code", exc.status_code)
            if exc.retry_after_s is not None:
                span.set_attribute(tv.RETRY_AFTER_MS, float(exc.retry_after_s * 1000))
        message = record_failure(span, exc, exc.error_type if isinstance(exc, ToolError) else type(exc).__qualname__)
        if capture_enabled():
            _record_content(span, name, arguments, error=message)
        _record_clock_end(span)
    except Exception:
        _log.exception("tracevals: could not record the failure of tool %s", name)
    span.end()


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs a tool call ~0.5 µs more
class ToolRun:
    """One tool call to trace: its `execute_tool` span around the real tool, through the interceptor if
    one is set. `soft_error` reads a failure the tool reports in its result instead of raising (MCP's
    `isError`); `extra` attributes go on the span with its start.

    >>> ToolRun("get_orders", "read", {"customer_id": "c1"}).run(lambda: get_orders("c1"))
    """

    name: str
    effect: str | None
    arguments: Mapping[str, Any]
    kind: SpanKind = SpanKind.INTERNAL
    extra: Mapping[str, Any] | None = None
    soft_error: Callable[[Any], str | None] | None = None

    def run(self, call: Callable[[], T]) -> T:
        """Run `call()` (the real tool) inside the span. A tool that returns an awaitable (a function that
        hands back a coroutine, a future or a task) has not run yet: its span ends when that is done, with
        its outcome (`_pending`), not when the call returns."""
        span = start_tool_span(self.name, self.effect, self.arguments, self.kind, self.extra)
        with current_span(span, self._failed(span)):
            interceptor = current_interceptor()
            result = call() if interceptor is None else interceptor.intercept(self._asked(span), call)
        kind = type(result)
        if hasattr(kind, "__await__"):
            return cast(T, self._pending(span, cast(Awaitable[Any], result)))
        if kind is GeneratorType or kind is AsyncGeneratorType:
            return cast(T, self._stepped(span, result))
        return self._finished(span, result)

    def _stepped(self, span: Span, inner: Any) -> Any:
        """What the caller iterates in place of a tool's (async) generator (`stepping`): each step run with the
        span current, the span ended once the generator is done (its result: the items it gave), fails, or is
        closed by its reader (no failure: the items given so far; kept only when content is captured)."""

        def finish(items: list[Any], exc: BaseException | None) -> None:
            if exc is None:
                self._finished(span, items)
            else:
                _finish_error(span, self.name, self.arguments, exc)

        def start() -> tuple[Any, Any, Any]:
            return inner, lambda: current_span(span, _ignore), finish

        keep = capture_enabled()  # the items are the result only content capture records
        return (astepping if isinstance(inner, AsyncGeneratorType) else stepping)(start, keep)()

    def _pending(self, span: Span, awaitable: Awaitable[Any]) -> Awaitable[Any]:
        """What the caller awaits in place of `awaitable`: a future or a task, the same one (it may be
        cancelled, given callbacks), with the span ended by its outcome; anything else, a coroutine that
        awaits it with the span current (so that the spans it starts nest beneath) and then ends the span."""
        if isinstance(awaitable, asyncio.Future):
            awaitable.add_done_callback(lambda done: self._settled(span, done))
            return awaitable

        async def awaited() -> Any:
            with current_span(span, self._failed(span)):
                result = await awaitable
            return self._finished(span, result)

        return awaited()

    def _settled(self, span: Span, future: asyncio.Future[Any]) -> None:
        if future.cancelled():
            _finish_error(span, self.name, self.arguments, asyncio.CancelledError())
        elif future.exception() is not None:
            _finish_error(span, self.name, self.arguments, cast(BaseException, future.exception()))
        else:
            _finish_ok(span, self.name, self.arguments, future.result(), self.soft_error)

    async def run_async(self, call: Callable[[], Awaitable[T]]) -> T:
        """`run` for a coroutine function: `call()` returns the awaitable of the real tool."""
        span = start_tool_span(self.name, self.effect, self.arguments, self.kind, self.extra)
        with current_span(span, self._failed(span)):
            interceptor = current_interceptor()
            result = await (call() if interceptor is None else interceptor.intercept_async(self._asked(span), call))
        return self._finished(span, result)

    def _asked(self, span: Span) -> ToolInvocation:
        """What an interceptor is told of the call."""
        return ToolInvocation(self.name, self.effect, self.arguments, _call_id.get(), span)

    def _failed(self, span: Span) -> Callable[[BaseException], None]:
        return lambda exc: _finish_error(span, self.name, self.arguments, exc)

    def _finished(self, span: Span, result: T) -> T:
        _finish_ok(span, self.name, self.arguments, result, self.soft_error)
        return result
