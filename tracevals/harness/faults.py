"""Fault injection: a tool call fails the way real services fail, chosen by call index or seeded chance.

A fault profile (YAML or JSON) lists rules; each names a tool (or `*`), a fault type, and either the
1-based index of that tool's call within the attempt (`call: 1`) or a probability drawn from the
attempt's seed (`probability: 0.1`), so a run is repeatable:

    faults:
      - {tool: get_orders, call: 1, type: timeout}
      - {tool: send_message, call: 1, type: rate_limit, retry_after_ms: 20}
      - {tool: "*", probability: 0.05, type: server_error}

Types (one vocabulary with task files, `tracevals.model.faults`): `timeout`, `rate_limit` (429 with
a retry-after; alias `429`), `server_error` (503; alias `5xx`), `empty` (the call succeeds, the
result is emptied), `malformed` (the call succeeds, the result is cut in half), `latency` (the call
is slowed; alias `slow`). Raising faults happen before the tool runs: the request never reached the
service, so nothing happened. A rate limit is not one-shot: the tool stays throttled to one call per
retry-after window for the rest of the attempt, like a real limiter, so a retry that does not wait
is refused again. The window is measured on the attempt's logical clock (the sleeps the agent asked
for and its model calls), never by wall time, so a loaded machine does not let an impatient retry
through. Every fault is marked on its span (`tracevals.injection.kind = fault`, `.type`, `.id`) for
the `injection` evaluator.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracevals.instrumentation.clock import now_s
from tracevals.instrumentation.tools import ToolError
from tracevals.model import attributes as tv
from tracevals.model.attempt import derive_seed
from tracevals.model.documents import read_items
from tracevals.model.errors import UserError
from tracevals.model.faults import FAULT_ALIASES, FAULT_RULE_KEYS, FAULT_TYPES, canonical_fault

ALIASES = FAULT_ALIASES  # the vocabulary is the model's (tracevals/model/faults.py), one for every file
_RULE_KEYS = FAULT_RULE_KEYS


class FaultProfileError(UserError, ValueError):
    """A fault profile is invalid; the message names the file, the rule and the field."""


@dataclass(frozen=True)
class FaultRule:
    tool: str  # a tool name, or "*" for every tool
    type: str  # one of FAULT_TYPES
    call: int | None = None  # 1-based index among this attempt's calls of the tool
    probability: float | None = None  # seeded chance per call, when no call index is given
    retry_after_ms: float = 20.0
    latency_ms: float = 30.0
    id: str = ""

    def matches(self, tool: str) -> bool:
        return self.tool in ("*", tool)


def parse_rule(raw: Mapping[str, Any], where: str = "fault") -> FaultRule:
    """One rule from a mapping; a bad rule raises `FaultProfileError` naming `where` and the field."""
    if not isinstance(raw, Mapping):
        raise FaultProfileError(f"{where}: a fault rule must be a mapping, got {type(raw).__name__}")
    unknown = sorted(set(raw) - _RULE_KEYS)
    if unknown:
        raise FaultProfileError(f"{where}: unknown field {unknown[0]!r}; known: {', '.join(sorted(_RULE_KEYS))}")
    if "tool" not in raw or "type" not in raw:
        raise FaultProfileError(f"{where}: a fault rule needs 'tool' and 'type'")
    kind = canonical_fault(str(raw["type"]))
    if kind not in FAULT_TYPES:
        raise FaultProfileError(f"{where}: field 'type': {raw['type']!r} is not one of {', '.join(FAULT_TYPES)}")
    call, probability = raw.get("call"), raw.get("probability")
    if (call is None) == (probability is None):
        raise FaultProfileError(f"{where}: give exactly one of 'call' (an index) or 'probability'")
    if call is not None and (not isinstance(call, int) or isinstance(call, bool) or call < 1):
        raise FaultProfileError(f"{where}: field 'call': {call!r} must be an integer >= 1")
    if probability is not None and (not isinstance(probability, (int, float)) or not 0 <= probability <= 1):
        raise FaultProfileError(f"{where}: field 'probability': {probability!r} must be in [0, 1]")
    for key in ("retry_after_ms", "latency_ms"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, (int, float)) or value < 0):
            raise FaultProfileError(f"{where}: field {key!r}: {value!r} must be a number >= 0")
    rule_id = str(raw.get("id") or f"{raw['tool']}:{kind}:{call if call is not None else f'p{probability}'}")
    return FaultRule(
        tool=str(raw["tool"]),
        type=kind,
        call=call,
        probability=None if probability is None else float(probability),
        retry_after_ms=float(raw.get("retry_after_ms", 20.0)),
        latency_ms=float(raw.get("latency_ms", 30.0)),
        id=rule_id,
    )


def load_fault_profile(path: str | Path) -> list[FaultRule]:
    """Rules from a YAML or JSON file: a list, or a mapping with a `faults` list."""
    return read_items(path, "fault profile", "faults", parse_rule, FaultProfileError, "fault rules")


@dataclass
class FaultInjector:
    """Applies fault rules to one attempt's tool calls (one instance per attempt)."""

    rules: tuple[FaultRule, ...]
    seed: int = 0
    clock: Callable[[], float] = now_s  # the attempt's logical clock (instrumentation/clock.py), seconds
    sleep: Callable[[float], None] = lambda seconds: time.sleep(seconds)  # looked up when called: counted
    calls: dict[str, int] = field(default_factory=dict)
    fired: list[tuple[str, int, str]] = field(default_factory=list)
    fired_ids: set[str] = field(default_factory=set)  # the rules that fired at least once
    replayed: dict[str, int] = field(default_factory=dict)  # calls a cassette answered (no rule applies)
    _next_allowed: dict[str, tuple[float, float]] = field(default_factory=dict)

    @classmethod
    def from_rules(cls, rules: Iterable[FaultRule | Mapping[str, Any]], seed: int = 0) -> FaultInjector:
        parsed = tuple(r if isinstance(r, FaultRule) else parse_rule(r) for r in rules)
        return cls(rules=parsed, seed=seed)

    def _choose(self, tool: str, n: int) -> FaultRule | None:
        for rule in self.rules:
            if not rule.matches(tool):
                continue
            if rule.call is not None and rule.call == n:
                return rule
            if rule.probability is not None:
                draw = derive_seed(self.seed, "fault", rule.id, tool, n) / 2**63
                if draw < rule.probability:
                    return rule
        return None

    def replayed_call(self, tool: str) -> None:
        """A cassette answered this call: what it met is in the recording, no rule applies to it."""
        self.replayed[tool] = self.replayed.get(tool, 0) + 1

    def plan(self, tool: str, span: Any) -> FaultRule | None:
        """Count one call of `tool` and pick its fault (marked on the span); None: the call goes through.

        A call refused because the tool is still throttled after a rate limit raises here.
        """
        n = self.calls[tool] = self.calls.get(tool, 0) + 1
        now = self.clock()
        rule = self._choose(tool, n)
        if rule is None:
            self._still_throttled(tool, now, span)
            return None
        self.fired.append((tool, n, rule.type))
        self.fired_ids.add(rule.id)
        _mark(span, rule)
        if rule.type == "rate_limit":
            self._next_allowed[tool] = (now + rule.retry_after_ms / 1000, rule.retry_after_ms)
        return rule

    def __call__(self, tool: str, span: Any, call: Callable[[], Any]) -> Any:
        """Run one call of `tool` (through `call`) with whatever fault applies to it."""
        rule = self.plan(tool, span)
        if rule is None:
            return call()
        if delay_s(rule):
            self.sleep(delay_s(rule))
        raise_if_failing(rule, tool)
        return shape(rule, call())

    def _still_throttled(self, tool: str, now: float, span: Any) -> None:
        window = self._next_allowed.get(tool)
        if window is None:
            return
        next_allowed, retry_after_ms = window
        if now < next_allowed:
            span.set_attribute(tv.INJECTION_KIND, "fault")
            span.set_attribute(tv.INJECTION_TYPE, "rate_limit")
            span.set_attribute(tv.INJECTION_ID, f"{tool}:throttled")
            raise _rate_limited(tool, retry_after_ms)
        self._next_allowed[tool] = (now + retry_after_ms / 1000, retry_after_ms)


def delay_s(rule: FaultRule) -> float:
    """How long the fault holds the call: latency slows it, and a timeout is slow by nature."""
    return rule.latency_ms / 1000 if rule.type in ("latency", "timeout") else 0.0


def raise_if_failing(rule: FaultRule, tool: str) -> None:
    """Raise the failure of a raising fault (before the tool runs: nothing happened)."""
    if rule.type == "rate_limit":
        raise _rate_limited(tool, rule.retry_after_ms)
    if rule.type == "timeout":
        raise ToolError(f"{tool}: upstream timed out", error_type="timeout", status_code=504, retryable=True)
    if rule.type == "server_error":
        raise ToolError(f"{tool}: service unavailable", error_type="server_error", status_code=503, retryable=True)


def shape(rule: FaultRule, result: Any) -> Any:
    """The result as a shaping fault leaves it (empty or malformed); others leave it alone."""
    if rule.type == "empty":
        return _empty(result)
    if rule.type == "malformed":
        return _malformed(result)
    return result


def _mark(span: Any, rule: FaultRule) -> None:
    span.set_attribute(tv.INJECTION_KIND, "fault")
    span.set_attribute(tv.INJECTION_TYPE, rule.type)
    span.set_attribute(tv.INJECTION_ID, rule.id)


def _rate_limited(tool: str, retry_after_ms: float) -> ToolError:
    return ToolError(
        f"{tool}: rate limit exceeded, retry after {retry_after_ms:g} ms",
        error_type="rate_limit",
        status_code=429,
        retryable=True,
        retry_after_s=retry_after_ms / 1000,
    )


def _empty(result: Any) -> Any:
    """An empty result of the same shape: collections emptied, an object's collections emptied."""
    if isinstance(result, dict):
        return {k: type(v)() if isinstance(v, (list, dict, tuple)) else v for k, v in result.items()}
    if isinstance(result, (list, str, tuple)):
        return type(result)()
    return None


def _malformed(result: Any) -> str:
    text = json.dumps(result, default=str, ensure_ascii=False)
    return text[: max(1, len(text) // 2)]
