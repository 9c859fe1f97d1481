"""tracevals' instrumentors by entry-point name: what `instrument()` turns on, and what
`opentelemetry-instrument` finds under the `opentelemetry_instrumentor` entry point.

The names are the ones `OTEL_PYTHON_DISABLED_INSTRUMENTATIONS` takes to turn one off (under
`opentelemetry-instrument` and in `instrument()` alike). Each comes
with the module whose import it waits for: `instrument()` patches a client library already imported,
and one imported later as soon as it is (importing `anthropic` or `mcp` costs a second or more, which
a process that never uses them should not pay).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]


def _openai() -> BaseInstrumentor:
    from tracevals.instrumentation.openai_chat import OpenAIInstrumentor

    return OpenAIInstrumentor()


def _anthropic() -> BaseInstrumentor:
    from tracevals.instrumentation.anthropic_messages import AnthropicInstrumentor

    return AnthropicInstrumentor()


def _mcp() -> BaseInstrumentor:
    from tracevals.instrumentation.mcp_tools import MCPInstrumentor

    return MCPInstrumentor()


def _threads() -> BaseInstrumentor:
    from tracevals.instrumentation.threads import ThreadContextInstrumentor

    return ThreadContextInstrumentor()


# entry-point name -> (the library module it patches, the instrumentor)
INSTRUMENTORS: dict[str, tuple[str, Callable[[], BaseInstrumentor]]] = {
    "tracevals_openai": ("openai", _openai),
    "tracevals_anthropic": ("anthropic", _anthropic),
    "tracevals_mcp": ("mcp", _mcp),
    "tracevals_threads": ("threading", _threads),
}


def disabled() -> set[str]:
    """The entry-point names `OTEL_PYTHON_DISABLED_INSTRUMENTATIONS` turns off (comma-separated, as
    `opentelemetry-instrument` reads it; `*` is every one), for `instrument()` as for that command."""
    names = {name.strip() for name in os.environ.get("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "").split(",")}
    return set(INSTRUMENTORS) if "*" in names else names & set(INSTRUMENTORS)
