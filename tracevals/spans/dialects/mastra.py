"""Mastra's OpenTelemetry exporter (`@mastra/otel-exporter`): the GenAI conventions (`chat` for the model call,
`invoke_agent`, `execute_tool` with `gen_ai.tool.call.arguments` / `result`, `gen_ai.conversation.id` from the
thread) plus `mastra.span.type` and, on the spans the conventions do not cover, `mastra.<span type>.input` /
`.output`: an agent run's conversation in `mastra.agent_run.input` / `.output`."""

from __future__ import annotations

from tracevals.spans.declare import By, Dialect, Messages, Parts

DIALECT = Dialect(
    "mastra",
    "Mastra's OpenTelemetry exporter (mastra.*, beside the GenAI conventions)",
    recognise_keys=("mastra.span.type",),
    # a model step is the model call (its chat span nested in it is the request it sent): its output holds the
    # tool calls the chat span's output messages leave out, so it comes first (priority 0)
    kind=(By("mastra.span.type", {"model_step": "llm"}, otherwise=None),),
    messages=(
        Messages("mastra.model_step.input", "input", 5),
        Messages("mastra.model_step.output", "output", 0),
        Messages("mastra.agent_run.input", "input", 6, on="agent"),
        Messages("mastra.agent_run.output", "output", 6, on="agent"),
    ),
    parts=Parts(message_texts=("$.text",), message_calls=("$.toolCalls",)),
    no_error_types=("unknown",),  # Mastra's error id where it has none: not a type
    error_results=True,  # a failing tool's error message is what the agent hands the model (its tool result)
    precedence=5,
    since=10,
)
