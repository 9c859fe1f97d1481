"""The interception seam: code that acts inside every traced tool call (and model call), when one is installed.

Fault injection, prompt injection and record/replay all need to stand between an agent and its
tools without the agent's code knowing. A `ToolInterceptor` installed with `intercept_tools()` (a
context variable, so it holds for one attempt, its threads' copied contexts and its tasks) receives
each call of a `@tracevals.tool`, a `ToolSet` or an instrumented MCP `ClientSession.call_tool`,
inside the call's `execute_tool` span, and decides: return a result of its own, raise, or call
`proceed()` to run the real tool (and then perhaps alter what it returned).

    class FailFirstSend:
        def intercept(self, call: ToolInvocation, proceed):
            if call.name == "send_message":
                call.span.set_attribute("tracevals.injection.kind", "fault")
                raise ToolError("injected timeout", error_type="timeout", retryable=True)
            return proceed()

        async def intercept_async(self, call: ToolInvocation, proceed):
            return await proceed()

    with intercept_tools(FailFirstSend()):
        agent(...)

Outside `intercept_tools()` nothing is installed and a tool wrapper only traces. Whatever the
interceptor returns or raises is recorded on the span as the tool's own result or error would be.
For an MCP call, `proceed()` returns the `CallToolResult` and an interceptor returns one too.

Model calls have the same seam (`intercept_models()`, `ModelInvocation`, `ModelInterceptor`, below): the
harness records and replays them through it. Outside `intercept_models()` a model call only traces.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from opentelemetry.trace import Span


@dataclass(frozen=True)
class ToolInvocation:
    """One tool call, as an interceptor sees it."""

    name: str
    effect: str | None  # read | write | irreversible; None: the tool declared none
    arguments: Mapping[str, Any]
    call_id: str | None  # the model's tool call id, when the agent passed it
    span: Span  # the call's execute_tool span: mark injections and replays here


C = TypeVar("C", contravariant=True)
Installed = TypeVar("Installed")


@runtime_checkable
class Interceptor(Protocol[C]):
    """Stands between an agent and its tools (or its model): it sees each call (`C`: a `ToolInvocation`, a
    `ModelInvocation`) and returns an answer of its own (a result; a response or stream), raises, or makes
    the real call with `return proceed()` (sync) / `return await proceed()` (async)."""

    def intercept(self, call: C, proceed: Callable[[], Any]) -> Any:
        """Handle a call of a sync tool or client."""
        ...

    async def intercept_async(self, call: C, proceed: Callable[[], Awaitable[Any]]) -> Any:
        """Handle a call of an async tool or client."""
        ...


class _Seam(Generic[Installed]):
    """Where an interceptor is installed: a context variable, so it holds for one attempt, its threads'
    copied contexts and its tasks."""

    def __init__(self, name: str) -> None:
        self._installed: contextvars.ContextVar[Installed | None] = contextvars.ContextVar(name, default=None)

    def current(self) -> Installed | None:
        return self._installed.get()

    @contextmanager
    def install(self, interceptor: Installed) -> Iterator[Installed]:
        token = self._installed.set(interceptor)
        try:
            yield interceptor
        finally:
            self._installed.reset(token)


@runtime_checkable
class ToolInterceptor(Interceptor[ToolInvocation], Protocol):
    """An interceptor of tool calls: returns a result, raises, or `return proceed()`."""


_tools: _Seam[ToolInterceptor] = _Seam("tracevals_tool_interceptor")


def current_interceptor() -> ToolInterceptor | None:
    return _tools.current()


def intercept_tools(interceptor: ToolInterceptor) -> AbstractContextManager[ToolInterceptor]:
    """Route every traced tool call inside the block through `interceptor`."""
    return _tools.install(interceptor)


# --- model calls ----------------------------------------------------------------------------------
#
# The same seam for model calls: every instrumented call of the openai (chat completions, Responses)
# and anthropic (messages) clients goes through `model_wrappers.ModelApi.call` / `call_async`, which
# hand the SDK's own request (`proceed()`) to the interceptor installed with `intercept_models()`, inside
# the call's `chat {model}` span. Whatever the interceptor returns is read for that span exactly as the
# SDK's answer would be: a response object, an SDK stream, or a `ReplayedStream` / `AsyncReplayedStream`
# of recorded events (an interceptor's own answer to a `stream=True` call).


@dataclass(frozen=True)
class ModelInvocation:
    """One model call, as an interceptor sees it."""

    provider: str  # openai | anthropic
    operation: str  # the SDK method: chat.completions.create, responses.parse, messages.create, messages.stream ...
    kwargs: Mapping[str, Any]  # the request as the agent passed it (do not change it)
    span: Span  # the call's model span: mark replays here
    # A replayed call says how long the recorded one waited on the model, in ms: the attempt's logical
    # clock advances by that instead of the replay's own (near zero) duration, so an agent whose wait
    # between a 429 and its retry is the model round trip keeps its verdict when the model is replayed.
    waited: Callable[[float], None] | None = field(default=None, compare=False)

    @property
    def stream(self) -> bool:
        return self.kwargs.get("stream") is True or self.operation.endswith(".stream")


@runtime_checkable
class ModelInterceptor(Interceptor[ModelInvocation], Protocol):
    """An interceptor of model calls: returns a response (or stream), raises, or `return proceed()`."""


_models: _Seam[ModelInterceptor] = _Seam("tracevals_model_interceptor")


def current_model_interceptor() -> ModelInterceptor | None:
    return _models.current()


def intercept_models(interceptor: ModelInterceptor) -> AbstractContextManager[ModelInterceptor]:
    """Route every instrumented model call inside the block through `interceptor`."""
    return _models.install(interceptor)


class ReplayedResponse:
    """What a replayed stream has for the SDK's `stream.response` (the SDK's stream helpers read its
    headers and close it); there was no HTTP response."""

    def __init__(self) -> None:
        self.status_code = 200
        self.headers: dict[str, str] = {}

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class ReplayedStream:
    """A stream of recorded events for a sync client: iterable, a context manager, closable; `error`, if
    any, is raised after the last event (the stream failed there)."""

    def __init__(self, events: Iterable[Any], error: BaseException | None = None) -> None:
        self._events = iter(list(events))
        self._error = error
        self.response = ReplayedResponse()

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._events)
        except StopIteration:
            if self._error is not None:
                error, self._error = self._error, None
                raise error from None
            raise

    def close(self) -> None:
        self._events = iter(())
        self._error = None

    def __enter__(self) -> ReplayedStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncReplayedStream:
    """`ReplayedStream` for an async client."""

    def __init__(self, events: Iterable[Any], error: BaseException | None = None) -> None:
        self._sync = ReplayedStream(events, error)
        self.response = self._sync.response

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        try:
            return next(self._sync)
        except StopIteration:
            raise StopAsyncIteration from None

    async def close(self) -> None:
        self._sync.close()

    async def __aenter__(self) -> AsyncReplayedStream:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
