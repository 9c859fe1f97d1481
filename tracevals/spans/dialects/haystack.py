"""Haystack's tracer (`haystack.*`, sent through `opentelemetry-haystack` or Haystack's own OpenTelemetry
tracer). The kind is in the span's name: `haystack.agent.run` (the agent), `haystack.agent.step.llm` and
`haystack.chat_generator.run` (model calls), `haystack.agent.step.tool` (a tool call, `haystack.tool.name`).
With content tracing on, the messages are in the llm span's input (`{"messages": [...]}`) and output
(`{"replies": [...]}`) as Haystack's ChatMessage (`{"role", "content": [{"text"}, {"tool_call": {...}},
{"tool_call_result": {...}}], "meta": {"usage": ...}}`); the token counts are only there, in each reply's meta.
A tool that raised is flagged `haystack.tool.error`, its output `{"error": "..."}`, the span's status unset."""

from __future__ import annotations

from tracevals.spans.declare import NAME, By, Dialect, Key, Messages, Parts

_LLM_OUT = ("haystack.agent.step.llm.output", "haystack.component.output")


def _reply(*path: str | int) -> tuple[Key, ...]:
    return tuple(Key(key, ("replies", 0, "meta", *path)) for key in _LLM_OUT)


DIALECT = Dialect(
    "haystack",
    "Haystack's tracer (haystack.*, e.g. through opentelemetry-haystack): the kind is in the span's name",
    recognise_prefixes=("haystack.",),
    kind=(
        By(
            NAME,
            {
                "haystack.agent.run": "agent",
                "haystack.agent.step.llm": "llm",
                "haystack.chat_generator.run": "llm",
                "haystack.agent.step.tool": "tool",
            },
            otherwise=None,
        ),
    ),
    columns={
        "model": _reply("model"),
        "input_tokens": _reply("usage", "prompt_tokens"),
        "output_tokens": _reply("usage", "completion_tokens"),
        "tool_name": ("haystack.tool.name",),
    },
    tool_columns={
        "tool_args": (Key("haystack.agent.step.tool.input", envelope=True),),
        "tool_result": (Key("haystack.agent.step.tool.output", envelope=True),),
    },
    messages=(
        Messages("haystack.agent.step.llm.input", "input", 5, paths=("$.messages",)),
        Messages("haystack.agent.step.llm.output", "output", 5, paths=("$.replies",)),
        Messages("haystack.component.input", "input", 5, paths=("$.messages",)),
        Messages("haystack.component.output", "output", 5, paths=("$.replies",)),
        Messages("haystack.agent.input", "input", 6, paths=("$.messages",), on="agent"),
        Messages("haystack.agent.output", "output", 6, paths=("$.last_message", "$.messages"), on="agent"),
    ),
    parts=Parts(
        call_objects=("tool_call",),
        result_objects=("tool_call_result",),
        args=("$.tool_call.arguments",),
        results=("$.tool_call_result.result",),
        ids=("$.tool_call.id", "$.tool_call_result.origin.id"),
        names=("$.tool_call.tool_name", "$.tool_call_result.origin.tool_name"),
    ),
    error_flags=("haystack.tool.error",),
    error_messages=(Key("haystack.agent.step.tool.output", ("error",)),),
    precedence=3,
)
