"""The Langfuse SDK from v3 on (Python and JS), which writes OpenTelemetry spans with its own keys: the
observation's type (`generation`, `agent`, `tool`, `chain`, `span` ...), its input and output (JSON of whatever
the application or integration passed: for a generation usually the messages; for a function traced with
`@observe`, `{"args": [...], "kwargs": {...}}` and its return value), the model, the usage
(`{"input": n, "output": n}`), a level (`ERROR` for a failure, with a status message) and the trace's
`session.id`."""

from __future__ import annotations

from tracevals.spans.declare import By, Dialect, Key, Messages

_USAGE = "langfuse.observation.usage_details"

DIALECT = Dialect(
    "langfuse",
    "Langfuse SDK v3 and later (langfuse.observation.*, session.id)",
    recognise_prefixes=("langfuse.",),
    kind=(
        By(
            "langfuse.observation.type",
            {"generation": "llm", "embedding": "llm", "agent": "agent", "tool": "tool", "chain": "chain"},
            otherwise=None,
            fold="lower",
        ),
    ),
    columns={
        "session_id": ("langfuse.session.id",),
        "model": ("langfuse.observation.model.name",),
        "input_tokens": (Key(_USAGE, ("input",)), Key(_USAGE, ("prompt_tokens",))),
        "output_tokens": (Key(_USAGE, ("output",)), Key(_USAGE, ("completion_tokens",))),
    },
    tool_columns={
        "tool_args": (Key("langfuse.observation.input", envelope=True),),
        "tool_result": (Key("langfuse.observation.output", envelope=True),),
    },
    messages=(
        Messages("langfuse.observation.input", "input", 5, paths=("$.messages", "$")),
        Messages("langfuse.observation.output", "output", 5, paths=("$.choices[0].message", "$")),
    ),
    error_levels={"langfuse.observation.level": "ERROR"},
    error_messages=("langfuse.observation.status_message",),
    precedence=4,
)
