"""AutoGen AgentChat (`autogen-agentchat`) as OpenInference records it
(`openinference-instrumentation-autogen-agentchat`): an agent's turn is an AGENT span
`<agent>.on_messages_stream` (or `.on_messages`) with no `agent.name`, the agent only in its name (and in
`graph.node.id`); under it AutoGen's own GenAI spans (`invoke_agent`, `execute_tool`)."""

from __future__ import annotations

from tracevals.spans.declare import Dialect

DIALECT = Dialect(
    "autogen",
    "AutoGen AgentChat (OpenInference): the agent named by its span's name only",
    agent_span_names=(r"^(.+)\.on_messages(?:_stream)?$",),
)
