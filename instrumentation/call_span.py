"""The span of one call, current while the call runs.

Tool calls (`tool_span`) and model calls (`model_wrappers`) run the same way: their span is made
current so that the spans the call starts (an HTTP client's, a tool's own) nest under it, and a failure
is recorded on the span, after the span has stopped being current, before the exception goes on to the
caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span


@contextmanager
def current_span(span: Span, fail: Callable[[BaseException], None]) -> Iterator[Span]:
    """`span` is current inside the block; an exception leaving the block is handed to `fail` (which
    records it and ends the span) and raised again. Ending the span on success is the caller's: it reads
    the call's result first."""
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield span
    except BaseException as exc:
        otel_context.detach(token)
        fail(exc)
        raise
    otel_context.detach(token)
