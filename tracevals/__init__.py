"""tracevals: does your AI agent do its job again, not once?

The public API an agent uses (see docs/instrumentation.md):

>>> import tracevals
>>> telemetry = tracevals.instrument(lake="lake")
>>> @tracevals.tool(effect="irreversible")
... def delete_order(order_id: str) -> dict: ...
>>> with tracevals.session("s-1"), tracevals.agent("support"):
...     ...
"""

from tracevals.instrumentation import (
    Redactor,
    Telemetry,
    ToolError,
    ToolInterceptor,
    ToolInvocation,
    ToolSet,
    agent,
    end_session,
    handoff,
    instrument,
    intercept_tools,
    session,
    tool,
    tool_call_id,
    wrap_tools,
)
from tracevals.model.attempt import AttemptContext

__version__ = "0.1.0"

__all__ = [
    "AttemptContext",
    "Redactor",
    "Telemetry",
    "ToolError",
    "ToolInterceptor",
    "ToolInvocation",
    "ToolSet",
    "__version__",
    "agent",
    "end_session",
    "handoff",
    "instrument",
    "intercept_tools",
    "session",
    "tool",
    "tool_call_id",
    "wrap_tools",
]
