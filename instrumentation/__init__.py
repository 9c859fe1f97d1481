"""Instrumentation: spans for every model call, tool call, agent run and session of an agent."""

from tracevals.instrumentation.configure import Telemetry, enable_instrumentors, instrument
from tracevals.instrumentation.context import agent, current_session_id, end_session, handoff, session
from tracevals.instrumentation.tools import ToolError, ToolSet, tool, tool_call_id, wrap_tools

__all__ = [
    "Telemetry",
    "ToolError",
    "ToolSet",
    "agent",
    "current_session_id",
    "enable_instrumentors",
    "end_session",
    "handoff",
    "instrument",
    "session",
    "tool",
    "tool_call_id",
    "wrap_tools",
]
