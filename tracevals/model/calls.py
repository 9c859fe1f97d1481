"""What the evaluators agree a tool call *is*: its operation identity, its effect, how it failed.

- operation key: the tool name and its arguments as recorded (JSON text), the idempotency key cut out,
  because a re-sent call with a fresh key is still the same operation. Arguments are compared as text:
  tracevals' instrumentation records them with sorted keys; a producer that writes the same arguments
  with keys in another order makes two operations of them. Without captured arguments the args hash
  stands in (`tracevals.tool.args_hash`); with neither, the name alone plus `?`, and callers say that
  the identity is a guess. `strip_idempotency_keys` is one regular expression, applied the same way
  by Python here and by Polars in the batch path (`model.batch.with_op_keys`) and by SQL in the `retries` view.
- effect: what the span recorded, else the case's or config's `tool_effects`.
- timeout (outcome unknown): the error type says timeout / deadline, or the status is 408 or 504; the
  call may or may not have happened on the other side.
- non-retryable: the tool said `tracevals.retryable = false`, or it did not say and the status is a
  4xx other than 408 (timeout), 425 (too early) and 429 (rate limit).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tracevals.model.case import Case
from tracevals.model.trajectory import HANDOFF_TOOL, ToolCall

RISKY_EFFECTS = ("write", "irreversible")
IDEMPOTENCY_ARGS = ("idempotency_key", "idempotencyKey", "Idempotency-Key")
RETRYABLE_4XX = (408, 425, 429)
_TIMEOUT_WORDS = ("timeout", "timedout", "timed_out", "deadline")
UNKNOWN_ARGS = "?"


# `"idempotency_key": <a string, a number or null>` and the comma after it; then a comma left before
# the closing brace (when the key was the last one). Both patterns mean the same in Python's `re` and
# in Rust's `regex` (Polars).
KEY_PAIR = (
    r'"(?:idempotency_key|idempotencyKey|Idempotency-Key)"\s*:\s*(?:"(?:[^"\\]|\\.)*"|null|-?[0-9][0-9.eE+-]*)\s*,?\s*'
)
TRAILING_COMMA = r",\s*}"


def args_text(args: Mapping[str, Any]) -> str:
    """How arguments are written when only the dict is known (the instrumentation's own format)."""
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def strip_idempotency_keys(text: str) -> str:
    return re.sub(TRAILING_COMMA, "}", re.sub(KEY_PAIR, "", text))


def operation_key(call: ToolCall) -> str:
    """`name(args)`: equal for two calls of the same operation (see the module docstring)."""
    if call.op_key is not None:
        return call.op_key
    if call.args is not None:
        return f"{call.name}({strip_idempotency_keys(args_text(call.args))})"
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
    if call.effect is not None:
        return call.effect
    return case.tool_effects.get(call.name) if case is not None else None


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
