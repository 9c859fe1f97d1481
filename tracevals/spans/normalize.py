"""One versioned normalizer from the four span dialects to tracevals' canonical columns.

Dialects: the current OTel GenAI conventions (`gen_ai.operation.name`, `gen_ai.provider.name` …),
the older GenAI keys (`gen_ai.system`, `gen_ai.usage.prompt_tokens` …), OpenInference
(`openinference.span.kind`, `llm.*`, `tool.*`, `session.id`) and OpenLLMetry (`traceloop.*`).
Raise NORMALIZER_VERSION whenever a rule changes, so rows written by an older rule can be found.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tracevals.model import attributes as tv
from tracevals.model.calls import args_digest, parse_args
from tracevals.spans.frameworks import apply_framework_rules

# 4: the Google ADK framework rule unwraps {"result": x} and drops placeholders
# 5: the fact columns (http_status_code ... session_status, has_message_attributes), see FACTS
# 6: tool_args_hash filled from the arguments where the span recorded none (`args_digest_of`)
# 7: a failed span that names no error type gets its exception event's type, else `_OTHER` (the conventions'
#    value), not `error` (the exception's type was never reached: the fallback came first)
NORMALIZER_VERSION = 7
# error.type of a failed span that names no type (status ERROR, no error.type, no exception event): the
# OpenTelemetry conventions' value for an error of no known type.
UNKNOWN_ERROR_TYPE = "_OTHER"

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
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    # The lake's integer columns are int64: a value past it is not a token count (version 3).
    return number if -(2**63) <= number < 2**63 else None


def _genai_kind(attrs: Mapping[str, Any]) -> str:
    op = attrs.get("gen_ai.operation.name")
    if isinstance(op, (list, dict)):  # malformed, and unhashable: it must not fail the whole batch
        op = _text(op)
    if op in _LLM_OPERATIONS:
        return "llm"
    if op == "execute_tool" or (op is None and "gen_ai.tool.name" in attrs):
        return "tool"
    if op in _AGENT_OPERATIONS:
        return "agent"
    return "other"


def _legacy_kind(attrs: Mapping[str, Any]) -> str:
    kind = _genai_kind(attrs)
    if kind == "other" and ("gen_ai.request.model" in attrs or "gen_ai.system" in attrs):
        return "llm"
    return kind


def _openllmetry_kind(attrs: Mapping[str, Any]) -> str:
    if "llm.request.type" in attrs:
        return "llm"
    return _OPENLLMETRY_KINDS.get(str(attrs.get("traceloop.span.kind")), "other")


@dataclass(frozen=True)
class Dialect:
    """A span dialect: how to recognise its spans (`detects`, on the attributes) and read their kind."""

    name: str
    detects: Callable[[Mapping[str, Any]], bool]
    kind: Callable[[Mapping[str, Any]], str]


# The dialects in the order they are tried: the first that detects a span is its dialect. A new dialect
# is a row here (plus its keys in _SOURCES / FACTS).
DIALECTS: tuple[Dialect, ...] = (
    Dialect(
        "openinference",
        lambda a: "openinference.span.kind" in a,
        lambda a: _OPENINFERENCE_KINDS.get(str(a["openinference.span.kind"]).upper(), "other"),
    ),
    Dialect("openllmetry", lambda a: "traceloop.span.kind" in a or "llm.request.type" in a, _openllmetry_kind),
    Dialect("genai", lambda a: "gen_ai.operation.name" in a or "gen_ai.provider.name" in a, _genai_kind),
    Dialect("genai_legacy", lambda a: any(k.startswith("gen_ai.") for k in a), _legacy_kind),
    Dialect("none", lambda a: True, _genai_kind),
)
_BY_NAME = {d.name: d for d in DIALECTS}


def detect_dialect(attrs: Mapping[str, Any]) -> str:
    return next(d.name for d in DIALECTS if d.detects(attrs))


def kind_of(attrs: Mapping[str, Any], dialect: str, name: str = "") -> str:
    """A span's canonical kind: a hand-off or an explicit session end in any dialect, else its dialect's rule."""
    if tv.HANDOFF_REASON in attrs:
        return "handoff"
    if attrs.get(tv.SESSION_END) is True:
        return "session_end"
    return _BY_NAME[dialect].kind(attrs)


# Canonical column -> (candidate keys, first non-empty wins; converter). `tool_args` / `tool_result`
# also read the generic input/output keys, but only on tool spans (see `_sources`).
_SOURCES: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "operation": (("gen_ai.operation.name", "openinference.span.kind", "traceloop.span.kind"), _text),
    "session_id": (("gen_ai.conversation.id", "session.id", "traceloop.association.properties.session_id"), _text),
    "agent_name": (("gen_ai.agent.name", "agent.name"), _text),
    "provider": (("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system"), _text),
    "model": (("gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "llm.response.model"), _text),
    "input_tokens": (
        (
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.prompt_tokens",
            "llm.token_count.prompt",
            "llm.usage.prompt_tokens",
        ),
        _int,
    ),
    "output_tokens": (
        (
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
            "llm.usage.completion_tokens",
        ),
        _int,
    ),
    "tool_name": (("gen_ai.tool.name", "tool.name"), _text),
    "tool_call_id": (("gen_ai.tool.call.id", "tool_call.id", "tool.call.id"), _text),
    # Not OpenInference's `tool.parameters`: that is the tool's JSON Schema, the call's arguments are
    # its `input.value` (found by the real openinference-instrumentation's tool spans; version 3).
    "tool_args": (("gen_ai.tool.call.arguments",), _text),
    "tool_result": (("gen_ai.tool.call.result",), _text),
    "tool_effect": ((tv.TOOL_EFFECT,), _text),
    "tool_args_hash": ((tv.TOOL_ARGS_HASH,), _text),
    "error_type": (("error.type",), _text),
    "run_id": ((tv.RUN_ID,), _text),
    "task_id": ((tv.TASK_ID,), _text),
    "attempt": ((tv.ATTEMPT,), _int),
    "variant": ((tv.VARIANT,), _text),
}
_TOOL_EXTRA = {
    "tool_args": ("input.value", "traceloop.entity.input"),
    "tool_result": ("output.value", "traceloop.entity.output"),
}


# Facts (version 5): attributes the views read on every model, tool, agent and root span, as typed
# columns, so that a query over millions of spans does not parse each span's attributes JSON. Rows of
# older files have none; the views read them from the JSON there, with
# TRY_CAST(json_extract_string(attributes, key) AS type), and each converter below reads a value the way
# that expression reads its JSON text, so that old and new rows agree (tests/test_normalize_facts.py).
_INT_TEXT = re.compile(r"\s*[+-]?(0[xX][0-9a-fA-F]+|[0-9][0-9_]*)\s*")


def _json_text(value: Any) -> str | None:
    """json_extract_string: a string as it is, any other value as its JSON text."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _round_half_away(number: float) -> int | None:
    if not math.isfinite(number):
        return None
    rounded = math.floor(abs(number) + 0.5)
    value = -rounded if number < 0 else rounded
    return value if -(2**63) <= value < 2**63 else None


def _fact_int(value: Any) -> int | None:
    """TRY_CAST(text AS BIGINT): integers, decimal text rounded half away from zero, not booleans."""
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        return None
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else None
    if isinstance(value, float):
        return _round_half_away(value)
    text = str(value)
    if _INT_TEXT.fullmatch(text):
        number = int(text.strip(), 0) if "x" in text.lower() else int(text.strip().replace("_", ""))
        return number if -(2**63) <= number < 2**63 else None
    try:
        return _round_half_away(float(text))
    except ValueError:
        return None


def _fact_float(value: Any) -> float | None:
    """TRY_CAST(text AS DOUBLE)."""
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


_TRUE, _FALSE = {"true", "t", "yes", "y", "1"}, {"false", "f", "no", "n", "0"}


def _fact_bool(value: Any) -> bool | None:
    """TRY_CAST(text AS BOOLEAN): true/false, t/f, yes/no, y/n, 1/0 in any case; nothing else."""
    if isinstance(value, bool) or value is None:
        return value
    text = _json_text(value)
    lowered = text.lower() if text is not None else ""
    return True if lowered in _TRUE else False if lowered in _FALSE else None


def _fact_list(value: Any) -> list[str | None] | None:
    """CAST(json AS VARCHAR[]): an array's items as text (null stays null); anything else none."""
    if not isinstance(value, list):
        return None
    return [_json_text(item) for item in value]


# fact column -> (keys, the first that converts to a value wins; converter)
FACTS: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "http_status_code": (("http.response.status_code",), _fact_int),
    "retry_after_ms": ((tv.RETRY_AFTER_MS,), _fact_float),
    "retryable": ((tv.RETRYABLE,), _fact_bool),
    "retry_attempt": ((tv.RETRY_ATTEMPT,), _fact_int),
    "idempotency_key": ((tv.IDEMPOTENCY_KEY,), _json_text),
    "replay": ((tv.REPLAY,), _json_text),
    "requested_tool_call_ids": ((tv.REQUESTED_TOOL_CALL_IDS,), _fact_list),
    "requested_tool_names": ((tv.REQUESTED_TOOL_CALL_NAMES,), _fact_list),
    "reported_cost_usd": (("gen_ai.usage.cost", "llm.cost.total"), _fact_float),
    "entity_name": (("traceloop.entity.name",), _json_text),
    "commit_hash": ((tv.COMMIT,), _json_text),
    "lock_hash": ((tv.LOCK_HASH,), _json_text),
    "attempt_output": ((tv.ATTEMPT_OUTPUT,), _json_text),
    "attempt_error": ((tv.ATTEMPT_ERROR,), _json_text),
    "session_status": ((tv.SESSION_STATUS,), _json_text),
}
# Parts of the attribute keys under which a model span can carry message content (the keys
# message_sources reads: gen_ai.input/output.messages, gen_ai.prompt.N.*, gen_ai.completion.N.*,
# llm.input/output_messages.*, gcp.vertex.agent.llm_request): has_message_attributes.
_MESSAGE_KEY_PARTS = ("messages", "gen_ai.prompt", "gen_ai.completion", "llm_request")

Fields = tuple[tuple[str, tuple[str, ...], Callable[[Any], Any]], ...]  # (column, keys present, converter)
# (dialect, canonical column fields, fact fields with a key present, has_message_attributes)
Plan = tuple[str, Fields, Fields, bool]
# Spans of one instrumentation share their attribute keys, so which keys feed which column is worked
# out once per (key set, tool or not) and reused: the collector normalizes ~100k spans a second.
_PLANS: dict[tuple[bool, tuple[str, ...]], Plan] = {}
_MAX_PLANS = 4096


def plan_for(keys: tuple[str, ...], is_tool: bool, attrs: Mapping[str, Any] | None = None) -> Plan:
    """The plan of a set of attribute keys (a tool span's or another's): its dialect, which keys feed which
    canonical column and fact, and whether it may carry message content. Worked out once per key set;
    `attrs` only to detect the dialect (which reads key presence alone: the keys suffice)."""
    plan = _PLANS.get((is_tool, keys))
    return plan if plan is not None else _sources(keys, dict.fromkeys(keys) if attrs is None else attrs, is_tool)


def _sources(keys: tuple[str, ...], attrs: Mapping[str, Any], is_tool: bool) -> Plan:
    present = set(keys)
    fields = []
    for column, (candidates, convert) in _SOURCES.items():
        if is_tool and column in _TOOL_EXTRA:
            candidates = candidates + _TOOL_EXTRA[column]
        fields.append((column, tuple(k for k in candidates if k in present), convert))
    found = ((column, tuple(k for k in ks if k in present), convert) for column, (ks, convert) in FACTS.items())
    has_messages = any(part in key for key in keys for part in _MESSAGE_KEY_PARTS)
    plan: Plan = (detect_dialect(attrs), tuple(fields), tuple(f for f in found if f[1]), has_messages)
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()  # a cache: an unbounded variety of key sets must not grow memory
    _PLANS[(is_tool, keys)] = plan
    return plan


def args_digest_of(args_text: str) -> str | None:
    """The operation digest of recorded arguments (`model.calls.args_digest` of the JSON object), which a
    tool span carries as `tool_args_hash` whichever producer wrote it; None for text that is no object."""
    parsed = parse_args(args_text)
    return args_digest(parsed) if parsed is not None else None


def normalize(
    attrs: Mapping[str, Any], name: str = "", status_code: str = "unset", exception_type: str | None = None
) -> dict[str, Any]:
    """The canonical columns for one span's attributes (see `tracevals/lake/schema.py`). `exception_type`: the
    `exception.type` of the span's exception event, the error type of a failed span that names none."""
    keys = tuple(attrs)
    plan = plan_for(keys, False, attrs)
    dialect = plan[0]
    kind = kind_of(attrs, dialect, name)
    is_tool = kind == "tool"
    if is_tool:
        plan = plan_for(keys, True, attrs)
    columns: dict[str, Any] = {"dialect": dialect, "normalizer_version": NORMALIZER_VERSION, "kind": kind}
    for column, candidates, convert in plan[1]:
        value = None
        for key in candidates:
            found = attrs[key]
            if found is not None and found != "":
                value = convert(found)
                break
        columns[column] = value
    if columns["tool_name"] is None and is_tool:
        columns["tool_name"] = _text(
            _first(attrs, "traceloop.entity.name") or name.removeprefix("execute_tool ").strip() or None
        )
    if columns["error_type"] is None and status_code == "error":
        columns["error_type"] = exception_type or UNKNOWN_ERROR_TYPE
    apply_framework_rules(attrs, name, columns)
    for key in ("tool_args", "tool_result", "session_id"):
        columns[key] = _text(columns[key])
    if columns["tool_args_hash"] is None and columns["tool_args"] is not None:
        columns["tool_args_hash"] = args_digest_of(columns["tool_args"])
    # the facts: each the first of its keys that converts to a value
    columns.update(dict.fromkeys(FACTS))
    for column, candidates, convert in plan[2]:
        for key in candidates:
            value = convert(attrs[key])
            if value is not None:
                columns[column] = value
                break
    columns["has_message_attributes"] = plan[3]
    return columns
