"""One versioned normalizer: a span's attributes to tracevals' canonical columns, by the dialect declarations.

What each dialect says and where is declared in `dialects.py` (read through `reading.py`); the rules every
stack shares (placeholders, wrappers, an error's class) are in `rules.py`. This module applies them to one
span: its dialect, its kind, each canonical column from the first of its candidate keys that holds a value,
and the facts (tracevals' own attributes as typed columns). The collector's columnar path applies the same
plans column by column (`tracevals.collector.conversion.columnar`).

Raise NORMALIZER_VERSION whenever a rule or a declaration changes what a row holds, so that rows written by an
older rule can be found.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from tracevals.model import attributes as tv
from tracevals.model.calls import args_digest, parse_args
from tracevals.spans import reading
from tracevals.spans.declare import Dialect, Key
from tracevals.spans.rules import (
    arguments,
    error_class,
    error_type_of,
    extract,
    is_placeholder,
    says_failed,
    unwrap,
)

# 4: the Google ADK framework rule unwraps {"result": x} and drops placeholders
# 5: the fact columns (http_status_code ... session_status, has_message_attributes), see FACTS
# 6: tool_args_hash filled from the arguments where the span recorded none (`args_digest_of`)
# 7: a failed span that names no error type gets its exception event's type, else `_OTHER` (the conventions'
#    value), not `error` (the exception's type was never reached: the fallback came first)
# 8: dialects are declarations (dialects.py): Vercel AI SDK, Haystack, Langfuse, Mastra and MLflow read; a
#    framework's family names the span's dialect; placeholders are no value in any column; a tool's arguments
#    and result in a framework's envelope are unwrapped by rule; an error of no type keeps the class its message
#    names; a tool span that is bookkeeping (ADK's merged tools) is no call
# From 8 on, a declaration raises it (its `since`): the version is the highest any declaration names, or a
# generic rule's (rules.py):
# 11: a tool's arguments or result recorded as the Python repr of a dict or list is read as that value
# 13: the facts answered_tool_call_ids (tracevals.tool_results.ids) and response_id (gen_ai.response.id); older
#     rows have them NULL
# 14: a tool's result that is a LangChain ToolMessage as its fields is its content, and a LangGraph Command's is the
#     last message of its update, and a Gemini FunctionResponse's its response (the conventions' wrappers);
#     Langfuse's metadata.tool_call_id is the call's id; a span of a known GenAI operation is that operation whatever
#     its Traceloop kind, a Traceloop task with tool.name a tool; LlamaIndex's ToolCallResult unwrapped
# 15: Genkit's spans are read (its model, tool and flow actions; their tokens, messages, arguments and results)
# 16: a tool result recorded as its result object's str() is read (Agno under OpenLLMetry: `status=... result=...`),
#     a declared output that says the span failed makes it a failure (`error_outputs`); Agno's team names its agent
NORMALIZER_VERSION = max(14, *(d.since for d in reading.DIALECTS))
# error.type of a failed span that names no type (status ERROR, no error.type, no exception event): the
# OpenTelemetry conventions' value for an error of no known type.
UNKNOWN_ERROR_TYPE = "_OTHER"


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


# The canonical columns the declarations fill, in the lake's order, and how each value is read.
CANONICAL: dict[str, Callable[[Any], Any]] = {
    "operation": _text, "session_id": _text, "agent_name": _text, "provider": _text, "model": _text,
    "input_tokens": _int, "output_tokens": _int, "tool_name": _text, "tool_call_id": _text, "tool_args": _text,
    "tool_result": _text, "tool_effect": _text, "tool_args_hash": _text, "error_type": _text, "run_id": _text,
    "task_id": _text, "attempt": _int, "variant": _text,
}  # fmt: skip


def kind_of(attrs: Mapping[str, Any], dialects: tuple[Dialect, ...] | str | None = None, name: str = "") -> str:
    """A span's canonical kind (see `reading.kind_of`): `dialects` the span's dialects, or None to find them."""
    if dialects is None or isinstance(dialects, str):
        dialects = reading.dialects_of(attrs)
    return reading.kind_of(attrs, dialects, name)


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
    "answered_tool_call_ids": ((tv.ANSWERED_TOOL_CALL_IDS,), _fact_list),
    "response_id": (("gen_ai.response.id",), _json_text),
    "reported_cost_usd": (("gen_ai.usage.cost", "llm.cost.total"), _fact_float),
    "entity_name": (("traceloop.entity.name",), _json_text),
    "commit_hash": ((tv.COMMIT,), _json_text),
    "lock_hash": ((tv.LOCK_HASH,), _json_text),
    "attempt_output": ((tv.ATTEMPT_OUTPUT,), _json_text),
    "attempt_error": ((tv.ATTEMPT_ERROR,), _json_text),
    "session_status": ((tv.SESSION_STATUS,), _json_text),
}

# Parts of the attribute keys under which a model span can carry message content in the conventions' flattened
# and event forms (gen_ai.prompt.N.*, gen_ai.completion.N.*, llm.input/output_messages.*), beside the declared
# message attributes (`reading.MESSAGE_KEYS`): has_message_attributes.
_MESSAGE_KEY_PARTS = ("messages", "gen_ai.prompt", "gen_ai.completion")

Fields = tuple[tuple[str, tuple[Key, ...], Callable[[Any], Any]], ...]  # (column, candidate keys present, converter)


class Plan(NamedTuple):
    """What a span's key set reads: its dialect, the candidate keys of each canonical column and fact (only those
    present), whether it may carry message content, and the dialects whose kind clauses apply, by precedence."""

    dialect: str
    fields: Fields
    facts: tuple[tuple[str, tuple[str, ...], Callable[[Any], Any]], ...]
    has_messages: bool
    dialects: tuple[Dialect, ...]


# Spans of one instrumentation share their attribute keys, so which keys feed which column is worked
# out once per (key set, tool or not) and reused: the collector normalizes ~100k spans a second.
_PLANS: dict[tuple[bool, tuple[str, ...]], Plan] = {}
_MAX_PLANS = 4096


def plan_for(keys: tuple[str, ...], is_tool: bool, attrs: Mapping[str, Any] | None = None) -> Plan:
    """The plan of a set of attribute keys (a tool span's or another's). Worked out once per key set; the keys
    alone decide it (`attrs` is accepted for the callers that have them)."""
    plan = _PLANS.get((is_tool, keys))
    return plan if plan is not None else _plan(keys, is_tool)


def _plan(keys: tuple[str, ...], is_tool: bool) -> Plan:
    present = set(keys)
    fields = []
    for column, convert in CANONICAL.items():
        candidates = reading.COLUMNS.get(column, ())
        if is_tool:
            candidates = candidates + reading.TOOL_COLUMNS.get(column, ())
        found = tuple(k for c in candidates for k in reading.present(c, keys, present))
        fields.append((column, found, convert))
    facts = ((column, tuple(k for k in ks if k in present), convert) for column, (ks, convert) in FACTS.items())
    has_messages = any(k in reading.MESSAGE_KEYS or any(p in k for p in _MESSAGE_KEY_PARTS) for k in keys)
    plan = Plan(
        reading.dialect_of(present), tuple(fields), tuple(f for f in facts if f[1]), has_messages,
        reading.dialects_of(present),
    )  # fmt: skip
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()  # a cache: an unbounded variety of key sets must not grow memory
    _PLANS[(is_tool, keys)] = plan
    return plan


def args_digest_of(args_text: str) -> str | None:
    """The operation digest of recorded arguments (`model.calls.args_digest` of the JSON object), which a
    tool span carries as `tool_args_hash` whichever producer wrote it; None for text that is no object."""
    parsed = parse_args(args_text)
    return args_digest(parsed) if parsed is not None else None


def pick(
    attrs: Mapping[str, Any], candidates: tuple[Key, ...], convert: Callable[[Any], Any], name: str | None = None
) -> Any:
    """A column's value: the first candidate that holds a value (not None, not "", not a placeholder), converted;
    a value in a framework's envelope unwrapped first (`rules.unwrap`). `name`: the span's, for the keys read
    only on some spans' names (None: their names were checked already)."""
    for key in candidates:
        if name is not None and key.on_names is not None and not re.match(key.on_names, name):
            continue
        found = attrs[key.name]
        if key.path or key.regex:
            found = extract(found, key.path, key.regex)
        if found is None or found == "" or is_placeholder(found):
            continue
        if key.envelope:
            found = unwrap(found)
            return None if found is None else convert(found)
        return convert(found)
    return None


def failed(attrs: Mapping[str, Any]) -> bool:
    """Whether a declared flag, level or output says the span failed (its status may not)."""
    for key in reading.ERROR_FLAGS:
        if attrs.get(key) in (True, "true", "True"):
            return True
    if any(says_failed(key, attrs.get(key.name)) for key in reading.ERROR_OUTPUTS):
        return True
    return any(str(attrs.get(key, "")).upper() == level.upper() for key, level in reading.ERROR_LEVELS.items())


def error_type(
    attrs: Mapping[str, Any],
    recorded: str | None,
    status_code: str,
    exception_type: str | None,
    messages: tuple[Any, ...],
) -> str | None:
    """A span's error type: the one it records (a class repr read as the class), else for a failed span the type of
    its exception event, else the class its exception or status message names, else `_OTHER`."""
    recorded = error_type_of(recorded) if recorded is not None else None
    if recorded is not None:
        return recorded
    if status_code != "error" and not failed(attrs):
        return None
    if exception_type:
        return exception_type
    declared = (
        extract(attrs[k.name], k.path) if k.path else attrs[k.name] for k in reading.ERROR_MESSAGES if k.name in attrs
    )
    for message in (*messages, *declared):
        found = error_class(message)
        if found is not None:
            return found
    return UNKNOWN_ERROR_TYPE


def normalize(
    attrs: Mapping[str, Any],
    name: str = "",
    status_code: str = "unset",
    exception_type: str | None = None,
    messages: tuple[Any, ...] = (),
) -> dict[str, Any]:
    """The canonical columns for one span's attributes (see `tracevals/lake/schema.py`). `exception_type`: the
    `exception.type` of the span's exception event; `messages`: its exception event's and status messages, where
    a failure that names no type may name its class."""
    keys = tuple(attrs)
    plan = plan_for(keys, False)
    kind = reading.kind_of(attrs, plan.dialects, name)
    if kind == "tool":
        plan = plan_for(keys, True)
    columns: dict[str, Any] = {"dialect": plan.dialect, "normalizer_version": NORMALIZER_VERSION, "kind": kind}
    for column, candidates, convert in plan.fields:
        columns[column] = pick(attrs, candidates, convert, name) if candidates else None
    if columns["tool_args"] is not None:
        columns["tool_args"] = _text(arguments(columns["tool_args"]))
    if kind == "tool" and columns["tool_name"] in reading.NOT_CALLS:
        columns["kind"] = kind = "other"
    if columns["tool_name"] is None and kind == "tool":
        columns["tool_name"] = _text(name.removeprefix("execute_tool ").strip() or None)
    columns["error_type"] = error_type(attrs, columns["error_type"], status_code, exception_type, messages)
    if columns["tool_args_hash"] is None and columns["tool_args"] is not None:
        columns["tool_args_hash"] = args_digest_of(columns["tool_args"])
    # the facts: each the first of its keys that converts to a value
    columns.update(dict.fromkeys(FACTS))
    for column, candidates_, convert_fact in plan.facts:
        for key in candidates_:
            value = convert_fact(attrs[key])
            if value is not None:
                columns[column] = value
                break
    columns["has_message_attributes"] = plan.has_messages
    return columns
