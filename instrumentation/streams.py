"""Streamed responses: the model call's span ends when the stream does, not when `create()` returns.

`TracedStream` / `TracedAsyncStream` are transparent proxies (wrapt) of the SDK's stream object: the
agent, and the SDK's own helpers (`chat.completions.stream()`, `responses.stream()`,
`messages.stream()`), see the same object with every attribute and method. Each event passes through
an `Accumulator` that keeps what the span needs (ids, usage, finish reasons, tool calls, and text
only with content capture on). The span ends at whichever comes first: the last event, an error,
`close()` / leaving a `with` block, or the proxy being garbage-collected (a stream abandoned
half-read still gets its span, with what was read).
"""

from __future__ import annotations

import logging
import weakref
from typing import Any, Protocol

import wrapt

from tracevals.instrumentation.model_span import ModelCall, ModelResult

_log = logging.getLogger(__name__)


class Accumulator(Protocol):
    def add(self, event: Any) -> None: ...

    def result(self) -> ModelResult: ...


def _finish(call: ModelCall, accumulator: Accumulator) -> None:
    try:
        result = accumulator.result()
    except Exception:  # telemetry never raises into the host program
        _log.exception("tracevals: could not summarise a streamed response")
        result = ModelResult()
    call.finish(result)


def _observe(accumulator: Accumulator, event: Any) -> None:
    try:
        accumulator.add(event)
    except Exception:
        _log.exception("tracevals: could not read a stream event")


class TracedStream(wrapt.ObjectProxy):
    """A sync SDK stream whose events feed the model call's span."""

    def __init__(self, wrapped: Any, call: ModelCall, accumulator: Accumulator) -> None:
        super().__init__(wrapped)
        self._self_call = call
        self._self_accumulator = accumulator
        # Holds the call and accumulator, not the proxy, so the proxy can still be collected.
        self._self_finalizer = weakref.finalize(self, _finish, call, accumulator)

    def __iter__(self) -> TracedStream:
        return self

    def __next__(self) -> Any:
        try:
            event = next(self.__wrapped__)
        except StopIteration:
            self._self_finalizer()
            raise
        except BaseException as exc:
            self._self_call.fail(exc)
            raise
        _observe(self._self_accumulator, event)
        return event

    def close(self) -> Any:
        self._self_finalizer()
        return self.__wrapped__.close()

    def __enter__(self) -> TracedStream:
        self.__wrapped__.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        self._self_finalizer()
        return self.__wrapped__.__exit__(*exc)


class TracedAsyncStream(wrapt.ObjectProxy):
    """An async SDK stream whose events feed the model call's span."""

    def __init__(self, wrapped: Any, call: ModelCall, accumulator: Accumulator) -> None:
        super().__init__(wrapped)
        self._self_call = call
        self._self_accumulator = accumulator
        self._self_finalizer = weakref.finalize(self, _finish, call, accumulator)

    def __aiter__(self) -> TracedAsyncStream:
        return self

    async def __anext__(self) -> Any:
        try:
            event = await self.__wrapped__.__anext__()
        except StopAsyncIteration:
            self._self_finalizer()
            raise
        except BaseException as exc:
            self._self_call.fail(exc)
            raise
        _observe(self._self_accumulator, event)
        return event

    async def close(self) -> Any:
        self._self_finalizer()
        return await self.__wrapped__.close()

    async def __aenter__(self) -> TracedAsyncStream:
        await self.__wrapped__.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        self._self_finalizer()
        return await self.__wrapped__.__aexit__(*exc)
