"""The one shape of every model-call wrapper: span in, SDK call, response or stream out.

Each provider module says how to read its request (`inputs`), its response (`extract`) and its
stream events (`accumulator`); these two functions do the rest, identically for every SDK method,
so that a fix to error handling or context propagation lands everywhere at once. They are also the
model-interception seam: with an interceptor installed (`interception.intercept_models`), `send()` (the
SDK's own method) goes through it inside the span, so a replayed call gets the span a live one gets.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from tracevals.instrumentation.interception import (
    AsyncReplayedStream,
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


def call_model(
    provider: str,
    kwargs: Mapping[str, Any],
    inputs: Inputs,
    extract: Extract,
    accumulator: Callable[[], Accumulator],
    stream_types: tuple[type, ...],
    send: Callable[[], Any],
    operation: str = "",
) -> Any:
    """Run `send()` (the SDK's own method) inside a model-call span; a stream keeps the span open.

    `operation` names the SDK method (`chat.completions.create`) for an installed model interceptor."""
    call = ModelCall(provider, kwargs, inputs)
    # Current while the request is sent, so HTTP-client spans (if instrumented) nest under it.
    token = otel_context.attach(trace.set_span_in_context(call.span))
    try:
        interceptor = current_model_interceptor()
        if interceptor is None:
            response = send()
        else:
            response = interceptor.intercept(ModelInvocation(provider, operation, kwargs, call.span, call.waited), send)
    except BaseException as exc:
        otel_context.detach(token)
        call.fail(exc)
        raise
    otel_context.detach(token)
    if isinstance(response, (*stream_types, ReplayedStream)):
        return TracedStream(response, call, accumulator())
    call.finish(_result(extract, response))
    return response


async def call_model_async(
    provider: str,
    kwargs: Mapping[str, Any],
    inputs: Inputs,
    extract: Extract,
    accumulator: Callable[[], Accumulator],
    stream_types: tuple[type, ...],
    send: Callable[[], Awaitable[Any]],
    operation: str = "",
) -> Any:
    """`call_model` for the async clients."""
    call = ModelCall(provider, kwargs, inputs)
    token = otel_context.attach(trace.set_span_in_context(call.span))
    try:
        interceptor = current_model_interceptor()
        if interceptor is None:
            response = await send()
        else:
            invocation = ModelInvocation(provider, operation, kwargs, call.span, call.waited)
            response = await interceptor.intercept_async(invocation, send)
    except BaseException as exc:
        otel_context.detach(token)
        call.fail(exc)
        raise
    otel_context.detach(token)
    if isinstance(response, (*stream_types, AsyncReplayedStream)):
        return TracedAsyncStream(response, call, accumulator())
    call.finish(_result(extract, response))
    return response
