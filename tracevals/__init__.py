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

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'tracevals' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME.get(name, "tracevals.instrumentation")), name)
    globals()[name] = value  # once imported, a plain attribute
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from tracevals.instrumentation import *  # noqa: F403
    from tracevals.model.attempt import AttemptContext
