"""smolagents (Hugging Face) as OpenInference records it: the agent span is `<agent>.run`, the user's task reaches
the model as `New task:\n<text>`, a tool's arguments are its call's bound arguments
(`{"args": [], "sanitize_inputs_outputs": true, "kwargs": {...}}`), and the answer is given by calling the tool
`final_answer`: the answer itself (the turn's final text), no tool call."""

from __future__ import annotations

from tracevals.spans.declare import Dialect, Unwrap

DIALECT = Dialect(
    "smolagents",
    "smolagents (OpenInference): its task prompt, its tools' bound arguments, final_answer is no tool call",
    not_calls=("final_answer",),
    unwrap=(Unwrap(frozenset({"args", "sanitize_inputs_outputs", "kwargs"}), ("kwargs",), empty="args"),),
    agent_span_names=(r"^(.+)\.run$",),
    user_texts=(r"(?s)^New task:\n(.+)$",),
    since=10,
)
