"""The one shape of every model-call wrapper: span in, SDK call, response or stream out.

Each provider module says, in a `ModelApi`, how to read its request (`inputs`), its response
(`extract`) and its stream events (`accumulator`); `ModelApi.call` / `call_async` do the rest,
identically for every SDK method, so that a fix to error handling or context propagation lands
everywhere at once. They are also the model-interception seam: with an interceptor installed
(`interception.intercept_models`), `send()` (the SDK's own method) goes through it inside the span,
so a replayed call gets the span a live one gets.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

from tracevals.instrumentation.call_span import current_span
from tracevals.instrumentation.interception import (
    AsyncReplayedStream,
    ModelInterceptor,
    ModelInvocation,
    ReplayedStream,
    current_model_interceptor,
)
from tracevals.instrumentation.model_span import ModelCall, ModelResult
from tracevals.instrumentation.streams import Accumulator, TracedAsyncStream, TracedStream

_log = logging.getLogger(__name__)

Inputs = Callable[[Mapping[str, Any]], dict[str, Any]]
Extract = Callable[[Any], ModelResult]


def _result(extract: Extract, response: Any) -> ModelResult:
    try:
        return extract(response)
    except Exception:  # telemetry never raises into the host program
        _log.exception("tracevals: could not read a model response")
        return ModelResult()


# A wrapt wrapper: (the SDK's method, its instance, args, kwargs) -> what the method returns.
Wrapper = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]


def _operation(prefix: str, wrapped: Any) -> str:
    return f"{prefix}.{getattr(wrapped, '__name__', 'create')}"


class _Route(NamedTuple):
    interceptor: ModelInterceptor
    invocation: ModelInvocation


@dataclass(frozen=True)
class ModelApi:
    """How one SDK API reads: its requests (`inputs`), its responses (`extract`), its stream events
    (`accumulator`) and its stream classes (`stream_types`, imported when a call is made)."""

    provider: str
    inputs: Inputs
    extract: Extract
    accumulator: Callable[[], Accumulator]
    stream_types: Callable[[], tuple[type, ...]]

    def call(self, kwargs: Mapping[str, Any], send: Callable[[], Any], operation: str = "") -> Any:
        """Run `send()` (the SDK's own method) inside a model-call span; a stream keeps the span open.

        `operation` names the SDK method (`chat.completions.create`) for an installed model interceptor."""
        with self._sending(kwargs, operation) as (call, route):
            response = send() if route is None else route.interceptor.intercept(route.invocation, send)
        return self._answer(call, response, ReplayedStream, TracedStream)

    async def call_async(
        self, kwargs: Mapping[str, Any], send: Callable[[], Awaitable[Any]], operation: str = ""
    ) -> Any:
        """`call` for the async clients."""
        with self._sending(kwargs, operation) as (call, route):
            response = await (send() if route is None else route.interceptor.intercept_async(route.invocation, send))
        return self._answer(call, response, AsyncReplayedStream, TracedAsyncStream)

    def wrappers(self, prefix: str) -> tuple[Wrapper, Wrapper]:
        """wrapt wrappers (sync, async) of the SDK methods `{prefix}.create`, `{prefix}.parse` ..."""

        def sync(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            return self.call(kwargs, lambda: wrapped(*args, **kwargs), _operation(prefix, wrapped))

        async def asynchronous(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            return await self.call_async(kwargs, lambda: wrapped(*args, **kwargs), _operation(prefix, wrapped))

        return sync, asynchronous

    @contextmanager
    def _sending(self, kwargs: Mapping[str, Any], operation: str) -> Iterator[tuple[ModelCall, _Route | None]]:
        """The call's span, current while the request is sent (so HTTP-client spans, if instrumented, nest
        under it), and the installed model interceptor with what it is told of the call (None: none is)."""
        call = ModelCall(self.provider, kwargs, self.inputs)
        with current_span(call.span, call.fail):
            interceptor = current_model_interceptor()
            if interceptor is None:
                yield call, None
            else:
                yield (
                    call,
                    _Route(interceptor, ModelInvocation(self.provider, operation, kwargs, call.span, call.waited)),
                )

    def _answer(self, call: ModelCall, response: Any, replayed: type, traced: type) -> Any:
        """The response for the agent: a stream, traced until it ends; anything else, read now."""
        if isinstance(response, (*self.stream_types(), replayed)):
            return traced(response, call, self.accumulator())
        call.finish(_result(self.extract, _parsed(response)))
        return response


def _parsed(response: Any) -> Any:
    """What a raw response (`client.chat.completions.with_raw_response.create`, as LangChain calls OpenAI with
    `include_response_headers`, and Anthropic's alike) stands for: its `parse()`, which the SDK keeps, so that
    the caller's own `parse()` gets the same object and nothing is read twice. Only once its body has been read
    (a `with_streaming_response` body is the caller's to read, when it chooses) and not for a stream request,
    whose chunks the caller reads from what `parse()` gives; anything else is the response itself."""
    http = getattr(response, "http_response", None)
    parse = getattr(response, "parse", None)
    if http is None or not callable(parse) or not getattr(http, "is_stream_consumed", False):
        return response
    try:
        if "text/event-stream" in str(http.headers.get("content-type", "")):
            return response
        return parse()
    except Exception:  # telemetry never raises into the host program: read as the response itself
        _log.debug("tracevals: could not parse a raw model response", exc_info=True)
        return response
