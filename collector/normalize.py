"""One versioned normalizer from the four span dialects to tracevals' canonical columns.

Dialects: the current OTel GenAI conventions (`gen_ai.operation.name`, `gen_ai.provider.name` …),
the older GenAI keys (`gen_ai.system`, `gen_ai.usage.prompt_tokens` …), OpenInference
(`openinference.span.kind`, `llm.*`, `tool.*`, `session.id`) and OpenLLMetry (`traceloop.*`).
Raise NORMALIZER_VERSION whenever a rule changes, so rows written by an older rule can be found.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tracevals import attributes as tv
from tracevals.collector.frameworks import apply_framework_rules

NORMALIZER_VERSION = 2

_LLM_OPERATIONS = {"chat", "text_completion", "generate_content", "completion", "embeddings"}
_AGENT_OPERATIONS = {"invoke_agent", "create_agent", "invoke_workflow"}
_OPENINFERENCE_KINDS = {"LLM": "llm", "TOOL": "tool", "AGENT": "agent", "CHAIN": "chain"}
_OPENLLMETRY_KINDS = {"workflow": "agent", "agent": "agent", "task": "chain", "tool": "tool"}


def _first(attrs: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = attrs.get(key)
        if value is not None and value != "":
            return value
    return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def detect_dialect(attrs: Mapping[str, Any]) -> str:
    if "openinference.span.kind" in attrs:
        return "openinference"
    if "traceloop.span.kind" in attrs or "llm.request.type" in attrs:
        return "openllmetry"
    if "gen_ai.operation.name" in attrs or "gen_ai.provider.name" in attrs:
        return "genai"
    if any(k.startswith("gen_ai.") for k in attrs):
        return "genai_legacy"
    return "none"


def _kind(attrs: Mapping[str, Any], dialect: str, name: str) -> str:
    if tv.HANDOFF_REASON in attrs:
        return "handoff"
    if attrs.get(tv.SESSION_END) is True:
        return "session_end"
    if dialect == "openinference":
        return _OPENINFERENCE_KINDS.get(str(attrs["openinference.span.kind"]).upper(), "other")
    if dialect == "openllmetry":
        if "llm.request.type" in attrs:
            return "llm"
        return _OPENLLMETRY_KINDS.get(str(attrs.get("traceloop.span.kind")), "other")
    op = attrs.get("gen_ai.operation.name")
    if op in _LLM_OPERATIONS:
        return "llm"
    if op == "execute_tool" or (op is None and "gen_ai.tool.name" in attrs):
        return "tool"
    if op in _AGENT_OPERATIONS:
        return "agent"
    if dialect == "genai_legacy" and ("gen_ai.request.model" in attrs or "gen_ai.system" in attrs):
        return "llm"
    return "other"


def normalize(attrs: Mapping[str, Any], name: str = "", status_code: str = "unset") -> dict[str, Any]:
    """The canonical columns for one span's attributes (see `collector/schema.py`)."""
    dialect = detect_dialect(attrs)
    kind = _kind(attrs, dialect, name)
    tool_name = _first(attrs, "gen_ai.tool.name", "tool.name")
    if tool_name is None and kind == "tool":
        tool_name = _first(attrs, "traceloop.entity.name") or name.removeprefix("execute_tool ").strip() or None
    is_tool = kind == "tool"
    error_type = _first(attrs, "error.type")
    if error_type is None and status_code == "error":
        error_type = "error"
    columns: dict[str, Any] = {
        "dialect": dialect,
        "normalizer_version": NORMALIZER_VERSION,
        "kind": kind,
        "operation": _text(_first(attrs, "gen_ai.operation.name", "openinference.span.kind", "traceloop.span.kind")),
        "session_id": _text(
            _first(attrs, "gen_ai.conversation.id", "session.id", "traceloop.association.properties.session_id")
        ),
        "agent_name": _text(_first(attrs, "gen_ai.agent.name", "agent.name")),
        "provider": _text(_first(attrs, "gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")),
        "model": _text(
            _first(attrs, "gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "llm.response.model")
        ),
        "input_tokens": _int(
            _first(
                attrs,
                "gen_ai.usage.input_tokens",
                "gen_ai.usage.prompt_tokens",
                "llm.token_count.prompt",
                "llm.usage.prompt_tokens",
            )
        ),
        "output_tokens": _int(
            _first(
                attrs,
                "gen_ai.usage.output_tokens",
                "gen_ai.usage.completion_tokens",
                "llm.token_count.completion",
                "llm.usage.completion_tokens",
            )
        ),
        "tool_name": _text(tool_name),
        "tool_call_id": _text(_first(attrs, "gen_ai.tool.call.id", "tool_call.id", "tool.call.id")),
        "tool_args": _text(
            _first(
                attrs,
                "gen_ai.tool.call.arguments",
                "tool.parameters",
                *(("input.value", "traceloop.entity.input") if is_tool else ()),
            )
        ),
        "tool_result": _text(
            _first(attrs, "gen_ai.tool.call.result", *(("output.value", "traceloop.entity.output") if is_tool else ()))
        ),
        "tool_effect": _text(_first(attrs, tv.TOOL_EFFECT)),
        "tool_args_hash": _text(_first(attrs, tv.TOOL_ARGS_HASH)),
        "error_type": _text(error_type),
        "run_id": _text(_first(attrs, tv.RUN_ID)),
        "task_id": _text(_first(attrs, tv.TASK_ID)),
        "attempt": _int(_first(attrs, tv.ATTEMPT)),
        "variant": _text(_first(attrs, tv.VARIANT)),
    }
    apply_framework_rules(attrs, name, columns)
    for key in ("tool_args", "tool_result", "session_id"):
        columns[key] = _text(columns[key])
    return columns
