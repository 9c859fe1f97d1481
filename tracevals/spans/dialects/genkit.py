"""Genkit (Firebase Genkit, `genkit`): every action it runs is a span with its own attributes (`genkit:type`,
`genkit:metadata:subtype` — `flow`, `model`, `tool`, ... —, `genkit:name`, `genkit:input` / `genkit:output` as
JSON text), no GenAI conventions. A model action's input is the request (`{"messages": [...], "tools": ...}`), its
output the response (`{"message": {...}, "usage": {"inputTokens", "outputTokens"}, "finishReason"}`), messages in
Genkit's format: `role` user / model / tool / system, content parts `{"text"}`, `{"toolRequest": {"name", "ref",
"input"}}`, `{"toolResponse": {"name", "ref", "output"}}` (`ref` the provider's call id). A tool action's input
and output are the call's arguments and result. A flow is what a Genkit app runs, the agent of its model and
tool calls. The `generate` helper's spans (`genkit:type` util) wrap each step of the tool loop and repeat the
final response's usage: not calls."""

from __future__ import annotations

from tracevals.spans.declare import By, Dialect, Key, Messages, Parts

DIALECT = Dialect(
    "genkit",
    "Genkit (genkit:type, genkit:metadata:subtype, genkit:input / genkit:output as JSON)",
    recognise_keys=("genkit:type",),
    kind=(
        By("genkit:metadata:subtype", {"model": "llm", "tool": "tool", "flow": "agent"}, otherwise=None),
        By("genkit:type", {"util": "other"}, otherwise=None),
    ),
    columns={
        "input_tokens": (Key("genkit:output", ("usage", "inputTokens")),),
        "output_tokens": (Key("genkit:output", ("usage", "outputTokens")),),
    },
    tool_columns={
        "tool_args": (Key("genkit:input"),),
        "tool_result": (Key("genkit:output"),),
    },
    messages=(
        Messages("genkit:input", "input", 5, paths=("$.messages",)),
        Messages("genkit:output", "output", 5, paths=("$.message",)),
    ),
    parts=Parts(
        call_objects=("toolRequest",),
        result_objects=("toolResponse",),
        args=("$.toolRequest.input",),
        results=("$.toolResponse.output",),
        ids=("$.toolRequest.ref", "$.toolResponse.ref"),
        names=("$.toolRequest.name", "$.toolResponse.name"),
    ),
    precedence=6,
    since=15,
)
