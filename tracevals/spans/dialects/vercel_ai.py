"""The Vercel AI SDK up to version 6 (`ai` on npm), which emits its own spans when a call has
`experimental_telemetry: {isEnabled: true}`: `ai.generateText` / `ai.streamText` around the whole loop (prompt
in `ai.prompt`, the final `ai.response.text`, usage summed), one `ai.generateText.doGenerate` /
`ai.streamText.doStream` per model call (the only spans that also carry `gen_ai.*`: messages in
`ai.prompt.messages`, the answer in `ai.response.text` and `ai.response.toolCalls`), and one `ai.toolCall` per
tool call (`ai.toolCall.name`, `.id`, `.args`, `.result`). Every span names the call's `functionId` (the
agent, as far as the SDK knows one) and carries its metadata as `ai.telemetry.metadata.<key>` (the session,
under a key the application chose). AI SDK 7 moved telemetry to `@ai-sdk/otel`, which writes the GenAI
conventions. A failing tool's error message is what the SDK hands the model as the tool's result."""

from __future__ import annotations

from tracevals.spans.declare import By, Dialect, Key, Messages, Parts

_LOOPS = ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject")
_CALLS = (
    "ai.generateText.doGenerate",
    "ai.streamText.doStream",
    "ai.generateObject.doGenerate",
    "ai.streamObject.doStream",
)

DIALECT = Dialect(
    "vercel_ai",
    "Vercel AI SDK up to 6 (ai.*; only its model spans also carry gen_ai.*)",
    # a tool span OpenLLMetry JS re-exports keeps `ai.toolCall.*` and loses `ai.operationId`
    recognise_keys=("ai.operationId", "ai.toolCall.name"),
    kind=(
        By(
            "ai.operationId",
            {**dict.fromkeys(_LOOPS, "chain"), **dict.fromkeys(_CALLS, "llm"), "ai.toolCall": "tool"},
            otherwise=None,
        ),
    ),
    columns={
        "session_id": (Key("ai.telemetry.metadata.", pattern=r"(?i)^(session|conversation|thread|chat)[_.-]?id$"),),
        "agent_name": ("ai.telemetry.functionId",),
        "provider": ("ai.model.provider",),
        "model": ("ai.response.model", "ai.model.id"),
        "input_tokens": ("ai.usage.inputTokens", "ai.usage.promptTokens"),
        "output_tokens": ("ai.usage.outputTokens", "ai.usage.completionTokens"),
        "tool_name": ("ai.toolCall.name",),
        "tool_call_id": ("ai.toolCall.id",),
        "operation": ("ai.operationId",),
        "tool_args": ("ai.toolCall.args", "ai.toolCall.input"),
        "tool_result": ("ai.toolCall.result", "ai.toolCall.output"),
    },
    messages=(
        Messages("ai.prompt.messages", "input", 5),
        Messages("ai.response.text", "output", 5, tool_calls="ai.response.toolCalls"),
    ),
    parts=Parts(
        call_types=("tool-call",),
        result_types=("tool-result",),
        call_keys=("toolName",),
        args=("$.input", "$.args"),
        results=("$.output.value", "$.output"),
        ids=("$.toolCallId",),
        names=("$.toolName",),
    ),
    error_results=True,  # a failing tool's error message is what the SDK hands the model (its `tool-error`)
    precedence=2,
    since=12,
)
