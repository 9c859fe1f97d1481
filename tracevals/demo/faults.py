"""Fault injection for the order-support world: the n-th call of a tool fails in a chosen way.

Faults are configured per attempt (a case's `faults` list) and keyed by (tool, call index), the index
counting every call of that tool in the attempt, failed ones included. Failures are raised as
`tracevals.ToolError` with the facts a retry policy needs (type, status, retryable, retry-after).

A 429 is not a one-shot: the tool stays throttled to one call per retry-after window for the rest of
the attempt, like a real rate limiter. That is what separates the two retry styles the demo shows: a
model that re-issues the call after a model round trip (longer than the window) gets through; one
that fires the same call three times in one response gets 429s for the extra copies.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tracevals import ToolError

RATE_LIMIT_RETRY_AFTER_S = 0.02
TIMEOUT_DELAY_S = 0.03  # a timeout is slow by nature; kept short so test suites stay fast
SLOW_DELAY_S = 0.25

RAISING = ("timeout", "429", "rate_limit", "5xx")
SHAPING = ("empty", "malformed")  # the call succeeds, the result is wrong
FAULT_TYPES = (*RAISING, *SHAPING, "slow")


@dataclass(frozen=True)
class Fault:
    tool: str
    call: int  # 1-based index among this attempt's calls of `tool`
    type: str  # one of FAULT_TYPES; "rate_limit" is an alias of "429"

    @classmethod
    def parse(cls, raw: Fault | Mapping[str, Any]) -> Fault:
        if isinstance(raw, Fault):
            return raw
        try:
            fault = cls(tool=str(raw["tool"]), call=int(raw["call"]), type=str(raw["type"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"a fault needs 'tool', 'call' (an integer) and 'type': {raw!r}") from exc
        if fault.type not in FAULT_TYPES:
            raise ValueError(f"unknown fault type {fault.type!r}; known: {', '.join(FAULT_TYPES)}")
        if fault.call < 1:
            raise ValueError(f"fault call index must be >= 1, got {fault.call}")
        return fault


def parse_faults(raw: Iterable[Fault | Mapping[str, Any]] | None) -> tuple[Fault, ...]:
    return tuple(Fault.parse(f) for f in raw or ())


def _rate_limited(tool: str) -> ToolError:
    ms = round(RATE_LIMIT_RETRY_AFTER_S * 1000)
    return ToolError(
        f"{tool}: rate limit exceeded, retry after {ms} ms",
        error_type="rate_limit",
        status_code=429,
        retryable=True,
        retry_after_s=RATE_LIMIT_RETRY_AFTER_S,
    )


class FaultPlan:
    """Counts calls per tool and applies the configured faults; one instance per attempt."""

    def __init__(self, faults: Iterable[Fault] = (), clock: Callable[[], float] = time.monotonic) -> None:
        self._faults = {(f.tool, f.call): f.type for f in faults}
        self._clock = clock
        self.calls: dict[str, int] = {}
        self._next_allowed: dict[str, float] = {}  # throttled tools: earliest time of the next accepted call
        self.fired: list[tuple[str, int, str]] = []

    def before_call(self, tool: str) -> str | None:
        """Count one call of `tool`; raise its failure, or return a fault that shapes the result."""
        n = self.calls[tool] = self.calls.get(tool, 0) + 1
        fault = self._faults.get((tool, n))
        now = self._clock()
        if fault is None:
            self._throttle(tool, now)
            return None
        self.fired.append((tool, n, fault))
        if fault in ("429", "rate_limit"):
            self._next_allowed[tool] = now + RATE_LIMIT_RETRY_AFTER_S
            raise _rate_limited(tool)
        if fault == "timeout":
            time.sleep(TIMEOUT_DELAY_S)
            # Raised before the tool runs: the request never reached the service, so nothing happened.
            raise ToolError(f"{tool}: upstream timed out", error_type="timeout", status_code=504, retryable=True)
        if fault == "5xx":
            raise ToolError(f"{tool}: service unavailable", error_type="server_error", status_code=503, retryable=True)
        if fault == "slow":
            time.sleep(SLOW_DELAY_S)
            return None
        return fault

    def _throttle(self, tool: str, now: float) -> None:
        next_allowed = self._next_allowed.get(tool)
        if next_allowed is None:
            return
        if now < next_allowed:
            raise _rate_limited(tool)
        self._next_allowed[tool] = now + RATE_LIMIT_RETRY_AFTER_S
