"""The tool-interception seam: code that acts inside every traced tool call, when one is installed.

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
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from opentelemetry.trace import Span


@dataclass(frozen=True)
class ToolInvocation:
    """One tool call, as an interceptor sees it."""

    name: str
    effect: str | None  # read | write | irreversible; None: the tool declared none
    arguments: Mapping[str, Any]
    call_id: str | None  # the model's tool call id, when the agent passed it
    span: Span  # the call's execute_tool span: mark injections and replays here


@runtime_checkable
class ToolInterceptor(Protocol):
    def intercept(self, call: ToolInvocation, proceed: Callable[[], Any]) -> Any:
        """Handle a call of a sync tool: return a result, raise, or `return proceed()`."""
        ...

    async def intercept_async(self, call: ToolInvocation, proceed: Callable[[], Awaitable[Any]]) -> Any:
        """Handle a call of an async tool: return a result, raise, or `return await proceed()`."""
        ...


_interceptor: contextvars.ContextVar[ToolInterceptor | None] = contextvars.ContextVar(
    "tracevals_tool_interceptor", default=None
)


def current_interceptor() -> ToolInterceptor | None:
    return _interceptor.get()


@contextmanager
def intercept_tools(interceptor: ToolInterceptor) -> Iterator[ToolInterceptor]:
    """Route every traced tool call inside the block through `interceptor`."""
    token = _interceptor.set(interceptor)
    try:
        yield interceptor
    finally:
        _interceptor.reset(token)
