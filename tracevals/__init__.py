"""tracevals: does your AI agent do its job again, not once?

The public API an agent uses (see docs/instrumentation.md):

>>> import tracevals
>>> telemetry = tracevals.instrument(lake="lake")
>>> @tracevals.tool(effect="irreversible")
... def delete_order(order_id: str) -> dict: ...
>>> with tracevals.session("s-1"), tracevals.agent("support"):
...     ...

Every name below is imported on first use (PEP 562), so `import tracevals.evaluators` or a CLI
command pays only for what it uses, never for the instrumentation and the OpenTelemetry SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracevals.model.lazy import lazy_names

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
# where each public name is defined: the agent contract in the model, the rest in the instrumentation
_HOME = {"AttemptContext": "tracevals.model.attempt"}


__getattr__, __dir__ = lazy_names(globals(), __all__, _HOME, default="tracevals.instrumentation")


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from tracevals.instrumentation import *  # noqa: F403
    from tracevals.model.attempt import AttemptContext
