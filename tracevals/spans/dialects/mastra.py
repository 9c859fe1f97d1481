"""Mastra's OpenTelemetry exporter (`@mastra/otel-exporter`): the GenAI conventions (`chat` for the model call,
`invoke_agent`, `execute_tool` with `gen_ai.tool.call.arguments` / `result`, `gen_ai.conversation.id` from the
thread) plus `mastra.span.type` and, on the spans the conventions do not cover, `mastra.<span type>.input` /
`.output`: an agent run's conversation in `mastra.agent_run.input` / `.output`."""

from __future__ import annotations

from tracevals.spans.declare import Dialect, Messages

DIALECT = Dialect(
    "mastra",
    "Mastra's OpenTelemetry exporter (mastra.*, beside the GenAI conventions)",
    recognise_keys=("mastra.span.type",),
    messages=(
        Messages("mastra.agent_run.input", "input", 6, on="agent"),
        Messages("mastra.agent_run.output", "output", 6, on="agent"),
    ),
    no_error_types=("unknown",),  # Mastra's error id where it has none: not a type
    precedence=5,
)
