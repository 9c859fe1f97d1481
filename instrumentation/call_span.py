"""The span of one call, current while the call runs.

Tool calls (`tool_span`) and model calls (`model_wrappers`) run the same way: their span is made
current so that the spans the call starts (an HTTP client's, a tool's own) nest under it, and a failure
is recorded on the span, after the span has stopped being current, before the exception goes on to the
caller.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span


class current_span:  # lower case: used like a function, `with current_span(span, fail): ...`
    """`span` is current inside the block; an exception leaving the block is handed to `fail` (which
    records it and ends the span) and raised again. Ending the span on success is the caller's: it reads
    the call's result first. A class, not a generator: this runs on every tool and model call
    (`bench/instrumentation_overhead.py`), and a generator's context manager costs twice as much."""

    __slots__ = ("_fail", "_span", "_token")

    def __init__(self, span: Span, fail: Callable[[BaseException], None]) -> None:
        self._span = span
        self._fail = fail

    def __enter__(self) -> Span:
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self._span

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        otel_context.detach(self._token)
        if exc is not None:
            self._fail(exc)  # the exception goes on to the caller: __exit__ returns None
