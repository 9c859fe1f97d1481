"""How tool results and failures travel back to the model as `tool` messages, both directions.

The agent encodes, the simulated model decodes; keeping both halves here keeps them in step. A failure
is a JSON object with an `error` key (the error type) plus status, retryable and retry_after_ms, the
shape of `tracevals.ToolError.to_dict()`, so a model can tell a 429 from a 400 and see how long to wait.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tracevals import ToolError


def encode_result(result: Any) -> str:
    if isinstance(result, str):
        return result  # text stays text (a truncated body must reach the model as it came)
    return json.dumps(result, ensure_ascii=False, default=str)


def encode_error(exc: BaseException) -> str:
    if isinstance(exc, ToolError):
        return json.dumps(exc.to_dict(), ensure_ascii=False)
    # Anything else a tool raised (a TypeError from arguments the function does not take, say):
    # the model still gets a structured failure instead of the agent crashing.
    return json.dumps({"error": type(exc).__name__, "message": str(exc), "retryable": False}, ensure_ascii=False)


@dataclass(frozen=True)
class Outcome:
    """A tool message read back: success with its data, or a failure with its facts."""

    ok: bool
    data: dict[str, Any]
    error_type: str | None = None
    status: int | None = None
    retryable: bool = False
    retry_after_ms: float | None = None


def decode(content: str) -> Outcome:
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        # Not an object: unusable, but a successful call may well return it right next time.
        return Outcome(False, {"raw": content}, error_type="malformed_result", retryable=True)
    error = value.get("error")
    if error is None:
        return Outcome(True, value)
    if isinstance(error, dict):  # the OpenAI-style nesting, should another agent send that
        value, error = error, error.get("type")
    status = value.get("status")
    retry_after = value.get("retry_after_ms")
    return Outcome(
        False,
        value,
        error_type=str(error),
        status=status if isinstance(status, int) else None,
        retryable=bool(value.get("retryable", False)),
        retry_after_ms=float(retry_after) if isinstance(retry_after, (int, float)) else None,
    )
