"""Instrumentation: spans for every model call, tool call, agent run and session of an agent.

See docs/instrumentation.md. Modules: `configure` (`instrument()`), `context` (sessions, agents,
hand-overs), `tools` / `tool_span` / `interception` (tool calls), `openai_chat`,
`openai_responses`, `anthropic_messages`, `mcp_tools` (the instrumentors), `model_span`, `streams`,
`genai_messages` (model-call spans), `content` and `redact` (what content is recorded, and how).
"""

from tracevals.instrumentation.configure import Telemetry, enable_instrumentors, instrument
from tracevals.instrumentation.content import CaptureMode, set_capture
from tracevals.instrumentation.context import agent, current_session_id, end_session, handoff, session
from tracevals.instrumentation.interception import ToolInterceptor, ToolInvocation, intercept_tools
from tracevals.instrumentation.redact import Redactor, set_redactor
from tracevals.instrumentation.tools import ToolError, ToolSet, tool, tool_call_id, wrap_tools

__all__ = [
    "CaptureMode",
    "Redactor",
    "Telemetry",
    "ToolError",
    "ToolInterceptor",
    "ToolInvocation",
    "ToolSet",
    "agent",
    "current_session_id",
    "enable_instrumentors",
    "end_session",
    "handoff",
    "instrument",
    "intercept_tools",
    "session",
    "set_capture",
    "set_redactor",
    "tool",
    "tool_call_id",
    "wrap_tools",
]
