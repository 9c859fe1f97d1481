"""What the evaluators agree a tool call *is*: its operation identity, its effect, how it failed.

- operation key: the tool name and the digest of its arguments' canonical JSON (`canonical_args`: keys
  sorted, an integral number written as an integer so that `1` and `1.0` are one value, the idempotency
  key cut out in any of its spellings, because a re-sent call with a fresh key is still the same
  operation). Two producers that write the same arguments with their keys in another order, or a
  number as `1.0`, name the same operation. Without captured arguments the digest the instrumentation
  recorded stands in (`tracevals.tool.args_hash`, the same digest); with neither, the name alone plus
  `?`, and callers say that the identity is a guess. Every writer records the digest with the span
  (`tool_args_hash`, filled by the normalizer from the arguments where the producer did not), so the
  batch loader (`model.batch.with_op_keys`, by `operation_key_of`) and the `retries` view read the
  same identity.
- idempotency key: what the span recorded (`tracevals.idempotency_key`), else the arguments' own
  (`idempotency_key`, `idempotencyKey` or `Idempotency-Key`).
- effect: the case's or config's `tool_effects` when it names the tool, else what the span recorded
  (`@tracevals.tool(effect=...)`); a tool that declared none has an unknown effect, never a safe one.
- timeout (outcome unknown): the error type says timeout / deadline, or the status is 408 or 504; the
  call may or may not have happened on the other side.
- non-retryable: the tool said `tracevals.retryable = false`, or it did not say and the status is a
  4xx other than 408 (timeout), 425 (too early) and 429 (rate limit).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from tracevals.model.case import Case
from tracevals.model.json_text import loads as json_loads
from tracevals.model.json_text import whole_text
from tracevals.model.trajectory import HANDOFF_TOOL, ToolCall

RISKY_EFFECTS = ("write", "irreversible")
IDEMPOTENCY_ARGS = ("idempotency_key", "idempotencyKey", "Idempotency-Key")
RETRYABLE_4XX = (408, 425, 429)
_TIMEOUT_WORDS = ("timeout", "timedout", "timed_out", "deadline")
UNKNOWN_ARGS = "?"
# What a reason says where arguments were not recorded: the switch that records them.
CAPTURE_HINT = (
    "record them with content capture: on by default in `tracevals run`, else "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only or instrument(capture_content=True)"
)


_PLAIN = (str, int, bool, type(None))  # as they are: the common case, checked without Mapping's isinstance
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _canonical(value: Any) -> Any:
    if type(value) in _PLAIN:
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def canonical_args(args: Mapping[str, Any]) -> str:
    """The arguments of an operation as canonical JSON: the idempotency key left out, keys sorted, an
    integral number as an integer, no spaces."""
    operation = {str(k): _canonical(v) for k, v in args.items() if k not in IDEMPOTENCY_ARGS}
    return whole_text(_ENCODER.encode(operation))  # what UTF-8 holds, as the recorded arguments are (`to_json`)


def args_digest(args: Mapping[str, Any]) -> str:
    """First 16 hex digits of sha256 over `canonical_args`: the instrumentation records it on every tool
    span (`tracevals.tool.args_hash`), content capture on or off."""
    return hashlib.sha256(canonical_args(args).encode()).hexdigest()[:16]


def args_text(args: Mapping[str, Any]) -> str:
    """How arguments are written when only the dict is known (the instrumentation's own format)."""
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def parse_args(text: str | None) -> dict[str, Any] | None:
    """Recorded arguments (JSON text of an object) as a dict; None when absent or not an object."""
    if text is None:
        return None
    try:
        value = json_loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def idempotency_key_in(args: Mapping[str, Any] | None) -> str | None:
    """The idempotency key the arguments carry themselves, in any of its spellings (text, or a number)."""
    for name in IDEMPOTENCY_ARGS:
        value = (args or {}).get(name)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


def operation_key_of(name: str | None, args_text: str | None, args_hash: str | None) -> str:
    """The operation key of a recorded call: its name and the digest of its arguments, as the writer
    recorded it (`tool_args_hash`: every writer fills it from the arguments, `spans.normalize`), else as
    computed from the recorded arguments (JSON text; rows of lakes written before the digest was filled),
    else `?`. Arguments that are not a JSON object are their own text. The `retries` view follows it."""
    if args_hash:
        return f"{name or ''}(#{args_hash})"
    if args_text is not None:
        parsed = parse_args(args_text)
        return f"{name or ''}(#{args_digest(parsed)})" if parsed is not None else f"{name or ''}({args_text})"
    return f"{name or ''}({UNKNOWN_ARGS})"


def operation_key(call: ToolCall) -> str:
    """`name(#digest)`: equal for two calls of the same operation (see the module docstring)."""
    if call.op_key is not None:
        return call.op_key
    if call.args is not None:
        return f"{call.name}(#{args_digest(call.args)})"
    if call.args_hash:
        return f"{call.name}(#{call.args_hash})"
    return f"{call.name}({UNKNOWN_ARGS})"


def identity_known(call: ToolCall) -> bool:
    return call.args is not None or bool(call.args_hash)


def outcome_key(call: ToolCall) -> str:
    """What came back, for "no progress": the error type, else the result text, else `ok`."""
    if call.error_type is not None:
        return f"error:{call.error_type}"
    return f"ok:{call.result}" if call.result is not None else "ok"


def effect_of(call: ToolCall, case: Case | None) -> str | None:
    """The case's `tool_effects` for the tool when it names one (the person judging the test knows best),
    else what the span recorded; None: unknown, which no rule reads as safe."""
    declared = case.tool_effects.get(call.name) if case is not None else None
    return declared if declared is not None else call.effect


def is_risky(call: ToolCall, case: Case | None) -> bool:
    """A write or irreversible call; the hand-off tool is never the risky call, whatever it records."""
    return call.name != HANDOFF_TOOL and effect_of(call, case) in RISKY_EFFECTS


def is_timeout(call: ToolCall) -> bool:
    if call.error_type is None:
        return False
    squashed = call.error_type.lower().replace(" ", "").replace("-", "")
    return any(w in squashed for w in _TIMEOUT_WORDS) or call.status_code in (408, 504)


def non_retryable(call: ToolCall) -> bool:
    if not call.failed:
        return False
    if call.retryable is not None:
        return not call.retryable
    status = call.status_code
    return status is not None and 400 <= status < 500 and status not in RETRYABLE_4XX
