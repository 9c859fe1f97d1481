"""MLflow tracing (`mlflow.*` span attributes, every value written as JSON text): the span's type
(`"LLM"`, `"CHAT_MODEL"`, `"TOOL"`, `"AGENT"`, `"CHAIN"` ...), its inputs and outputs (for a chat model the
request, `{"messages": [...]}`, and the provider's response), and the token usage of a chat span."""

from __future__ import annotations

from tracevals.spans.declare import REQUEST_MESSAGES, RESPONSE_MESSAGES, By, Dialect, Key, Messages

DIALECT = Dialect(
    "mlflow",
    "MLflow tracing (mlflow.spanType, mlflow.spanInputs / mlflow.spanOutputs, values written as JSON)",
    recognise_keys=("mlflow.spanType",),
    kind=(
        By(
            "mlflow.spanType",
            {"LLM": "llm", "CHAT_MODEL": "llm", "TOOL": "tool", "AGENT": "agent", "CHAIN": "chain"},
            otherwise=None,
            fold="upper",
        ),
    ),
    columns={
        "input_tokens": (Key("mlflow.chat.tokenUsage", ("input_tokens",)),),
        "output_tokens": (Key("mlflow.chat.tokenUsage", ("output_tokens",)),),
    },
    tool_columns={
        "tool_args": (Key("mlflow.spanInputs", envelope=True),),
        "tool_result": (Key("mlflow.spanOutputs", envelope=True),),
    },
    messages=(
        # the provider's request and response as the client sent and got them (OpenAI's, Anthropic's, Gemini's)
        Messages("mlflow.spanInputs", "input", 5, paths=REQUEST_MESSAGES),
        Messages("mlflow.spanOutputs", "output", 5, paths=RESPONSE_MESSAGES),
    ),
    precedence=6,
)
