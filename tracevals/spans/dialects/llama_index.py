"""LlamaIndex agent workflows as OpenInference records them: the agent's name appears only in the reprs of the
workflow's events (`input.value` / `output.value` of the CHAIN steps: `AgentOutput(..., current_agent_name='x')`;
OpenLLMetry writes the same events as JSON in `traceloop.entity.input` / `.output`),
the root is a CHAIN span, and each model call is preceded by a message-less `_prepare_chat_with_tools` LLM span
(the generic rule of span_facts: no call of its own). Tool arguments arrive wrapped (`{"kwargs": {...}}`) and
results as a `ToolOutput`: the generic wrappers."""

from __future__ import annotations

from tracevals.spans.declare import Dialect, Key

_AGENT = r"current_agent_name='([^']+)'"
_AGENT_JSON = r'"current_agent_name": ?"([^"]+)"'  # the same events as JSON (OpenLLMetry's traceloop.entity.*)
_STEPS = r"(BaseWorkflowAgent|AgentWorkflow)\."  # the workflow's steps, whose events carry the agent's name

DIALECT = Dialect(
    "llama_index",
    "LlamaIndex workflows (OpenInference, OpenLLMetry): the agent's name in its events",
    columns={
        "agent_name": (
            Key("output.value", regex=_AGENT, on_names=_STEPS),
            Key("input.value", regex=_AGENT, on_names=_STEPS),
            Key("traceloop.entity.output", regex=_AGENT_JSON, on_names=_STEPS),
            Key("traceloop.entity.input", regex=_AGENT_JSON, on_names=_STEPS),
        )
    },
)
