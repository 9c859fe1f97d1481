"""LangSmith's OpenTelemetry export (`langsmith[otel]`, LANGSMITH_OTEL_ENABLED): every LangChain run a span of scope
`langsmith`, `langsmith.span.kind` its run type (`llm`, `tool`, `chain` ...), the run's metadata as
`langsmith.metadata.*` (`lc_agent_name` the agent it ran for, `thread_id` / `session_id` / `conversation_id` the
conversation, as LangSmith groups threads), and its inputs and outputs as `gen_ai.prompt` / `gen_ai.completion`
JSON: a chat model's `{"messages": [[...]]}` and `{"generations": [[{"message": ...}]]}` (messages serialised as
LangChain's constructors), a tool's arguments and `{"output": <its ToolMessage>}`."""

from __future__ import annotations

from tracevals.spans.declare import By, Dialect, Key, Messages

DIALECT = Dialect(
    "langsmith",
    "LangSmith's OpenTelemetry export (langsmith.span.kind, langsmith.metadata.*, gen_ai.prompt / gen_ai.completion)",
    recognise_keys=("langsmith.span.kind",),
    kind=(By("langsmith.span.kind", {"llm": "llm", "tool": "tool"}, otherwise=None),),
    columns={
        "agent_name": ("langsmith.metadata.lc_agent_name",),
        "session_id": (
            "langsmith.metadata.session_id",
            "langsmith.metadata.thread_id",
            "langsmith.metadata.conversation_id",
        ),
    },
    tool_columns={
        "tool_args": (Key("gen_ai.prompt", envelope=True),),
        "tool_result": (Key("gen_ai.completion", envelope=True),),
    },
    messages=(
        Messages("gen_ai.prompt", "input", 5, paths=("$.messages[0]",)),
        Messages("gen_ai.completion", "output", 5, paths=("$.generations[0][0].message",)),
    ),
    precedence=6,
    since=15,
)
