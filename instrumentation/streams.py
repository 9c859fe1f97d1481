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


class WatchedStream(wrapt.ObjectProxy):
    """A transparent proxy of a sync SDK stream that sees every event as it passes (`_self_event`) and is
    told when the stream stops (`_self_stop`): at its end (complete), at an error it raises (one of
    `_self_failures`), at `close()` and on leaving its `with` block. A model call's span watches a stream
    this way (`TracedStream`), and so does the harness's recording of one (`RecordingStream`)."""

    _self_failures: tuple[type[BaseException], ...] = (BaseException,)

    def _self_event(self, event: Any) -> None:
        raise NotImplementedError

    def _self_stop(self, complete: bool = False, error: BaseException | None = None) -> None:
        raise NotImplementedError

    def __iter__(self) -> WatchedStream:
        return self

    def _self_raised(self, exc: BaseException, end: type[BaseException]) -> None:
        """What the wrapped stream raised instead of an event: `end` (Stop[Async]Iteration) stops the watch
        complete, a failure stops it with the error, anything else passes by."""
        if isinstance(exc, end):
            self._self_stop(complete=True)
        elif isinstance(exc, self._self_failures):
            self._self_stop(error=exc)

    def __next__(self) -> Any:
        try:
            event = next(self.__wrapped__)
        except BaseException as exc:
            self._self_raised(exc, StopIteration)
            raise
        self._self_event(event)
        return event

    def close(self) -> Any:
        self._self_stop()
        return self.__wrapped__.close()

    def __enter__(self) -> WatchedStream:
        self.__wrapped__.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        self._self_stop()
        return self.__wrapped__.__exit__(*exc)


class WatchedAsyncStream(WatchedStream):
    """`WatchedStream` for an async SDK stream."""

    def __aiter__(self) -> WatchedAsyncStream:
        return self

    async def __anext__(self) -> Any:
        try:
            event = await self.__wrapped__.__anext__()
        except BaseException as exc:
            self._self_raised(exc, StopAsyncIteration)
            raise
        self._self_event(event)
        return event

    async def close(self) -> Any:
        self._self_stop()
        return await self.__wrapped__.close()

    async def __aenter__(self) -> WatchedAsyncStream:
        await self.__wrapped__.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        self._self_stop()
        return await self.__wrapped__.__aexit__(*exc)


class TracedStream(WatchedStream):
    """A sync SDK stream whose events feed the model call's span."""

    def __init__(self, wrapped: Any, call: ModelCall, accumulator: Accumulator) -> None:
        super().__init__(wrapped)
        self._self_call = call
        self._self_accumulator = accumulator
        # Holds the call and accumulator, not the proxy, so the proxy can still be collected.
        self._self_finalizer = weakref.finalize(self, _finish, call, accumulator)

    def _self_event(self, event: Any) -> None:
        _observe(self._self_accumulator, event)

    def _self_stop(self, complete: bool = False, error: BaseException | None = None) -> None:
        if error is not None:
            self._self_call.fail(error)
        else:
            self._self_finalizer()


class TracedAsyncStream(TracedStream, WatchedAsyncStream):
    """An async SDK stream whose events feed the model call's span."""
