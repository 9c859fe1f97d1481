"""The Langfuse SDK from v3 on (Python and JS), which writes OpenTelemetry spans with its own keys: the
observation's type (`generation`, `agent`, `tool`, `chain`, `span` ...), its input and output (JSON of whatever
the application or integration passed: for a generation usually the messages; for a function traced with
`@observe`, `{"args": [...], "kwargs": {...}}` and its return value), the model, the usage
(`{"input": n, "output": n}`, or the provider's own usage), a level (`ERROR` for a failure, with a status
message) and the trace's `session.id`."""

from __future__ import annotations

from tracevals.spans.declare import REQUEST_MESSAGES, RESPONSE_MESSAGES, By, Dialect, Key, Messages

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
        # the call a tool observation ran, where the integration put it in the metadata (LangChain's handler)
        "tool_call_id": ("langfuse.observation.metadata.tool_call_id",),
        # its own names, or the provider's usage as it came (Chat Completions', the Responses API's)
        "input_tokens": (Key(_USAGE, ("input",)), Key(_USAGE, ("prompt_tokens",)), Key(_USAGE, ("input_tokens",))),
        "output_tokens": (
            Key(_USAGE, ("output",)),
            Key(_USAGE, ("completion_tokens",)),
            Key(_USAGE, ("output_tokens",)),
        ),
    },
    tool_columns={
        "tool_args": (Key("langfuse.observation.input", envelope=True),),
        "tool_result": (Key("langfuse.observation.output", envelope=True),),
    },
    messages=(
        # the provider's request and response (its integrations'), else what the application passed as they are
        Messages("langfuse.observation.input", "input", 5, paths=(*REQUEST_MESSAGES, "$")),
        Messages("langfuse.observation.output", "output", 5, paths=RESPONSE_MESSAGES),
    ),
    error_levels={"langfuse.observation.level": "ERROR"},
    error_messages=("langfuse.observation.status_message",),
    precedence=4,
    since=14,
)
