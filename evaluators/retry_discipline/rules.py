"""The rules of `retry_discipline`, one function each: `(calls, labels, case) -> Findings`.

Each rule flags calls (a finding of one of the kinds in `declarations.py`, with its sentence), warns, or
marks them unknown (the data to judge was missing). See `evaluator.py` for the definitions in words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from tracevals.evaluators.retry_discipline.declarations import (
    BLIND_REPLAY,
    DUPLICATE_SIDE_EFFECT,
    EARLY_RETRY,
    LOOP,
    MISSING_IDEMPOTENCY_KEY,
    NON_RETRYABLE_RETRIED,
    RETRY_BOUND_EXCEEDED,
)
from tracevals.model.calls import (
    effect_of,
    identity_known,
    is_risky,
    is_timeout,
    non_retryable,
    operation_key,
    outcome_key,
)
from tracevals.model.case import Case
from tracevals.model.findings import FAILURE, WARNING, Finding, FindingKind
from tracevals.model.trajectory import ToolCall


@dataclass
class Findings:
    flagged: set[int] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    unknown: dict[int, str] = field(default_factory=dict)
    found: list[Finding] = field(default_factory=list)  # details.findings

    def note(self, kind: FindingKind, problem: str, index: int, label: str, severity: str | None = None) -> None:
        """A finding about call `index` (0-based) that flags nothing by itself (a chain, a loop, a warning)."""
        self.problems.append(problem)
        self.found.append(kind(problem, step=index + 1, call=label, severity=severity))

    def flag(self, index: int, kind: FindingKind, problem: str, label: str, severity: str | None = None) -> None:
        self.flagged.add(index)
        self.note(kind, problem, index, label, severity)

    def merge(self, other: Findings) -> None:
        self.flagged |= other.flagged
        self.problems += other.problems
        self.found += other.found
        for i, why in other.unknown.items():
            self.unknown.setdefault(i, why)


def _rate_limited(call: ToolCall) -> bool:
    return call.status_code == 429 or (call.error_type or "").lower() in ("429", "rate_limit", "ratelimiterror")


def waited_ms(before: ToolCall, after: ToolCall) -> float | None:
    """How long the agent waited between two calls: on the attempt's logical clock when both calls carry
    it (a harness run: the sleeps asked for and the model calls between, whatever the machine's load),
    else by the spans' times; None when neither is recorded."""
    if before.clock_end_ms is not None and after.clock_start_ms is not None:
        return after.clock_start_ms - before.clock_end_ms
    if before.end_ms and after.start_ms:
        return after.start_ms - before.end_ms
    return None


def chain_rules(
    calls: Sequence[ToolCall], labels: Sequence[str], chains: list[list[int]], case: Case | None
) -> Findings:
    """Bounded retries, backoff, no retry of a non-retryable error (all about retry chains)."""
    out = Findings()
    max_retries = case.max_retries if case is not None else None
    min_backoff = case.min_backoff_ms if case is not None else 0.0
    for chain in chains:
        retries = len(chain) - 1
        if max_retries is not None and retries > max_retries:
            out.flagged.update(chain[max_retries + 1 :])
            out.note(
                RETRY_BOUND_EXCEEDED,
                f"{labels[chain[0]]} retried {retries} times (max {max_retries})",
                chain[0],
                labels[chain[0]],
            )
        for prev, cur in pairwise(chain):
            before, after = calls[prev], calls[cur]
            if non_retryable(before):
                status = f"{before.status_code} " if before.status_code is not None else ""
                why = f"retried a non-retryable error: {labels[cur]} after {status}{before.error_type}"
                out.flag(cur, NON_RETRYABLE_RETRIED, why, labels[cur])
                continue
            asked = before.retry_after_ms
            if asked is None and (_rate_limited(before) or is_timeout(before)) and min_backoff > 0:
                asked = min_backoff
            if asked is None:
                continue
            wait = waited_ms(before, after)
            if wait is None:
                out.unknown.setdefault(cur, "times not recorded, backoff not checked")
                continue
            if wait < asked:
                why = f"early retry {labels[cur]}: waited {wait:.0f}ms < retry_after {asked:.0f}ms"
                out.flag(cur, EARLY_RETRY, why, labels[cur])
        for i in chain[1:]:
            if not identity_known(calls[i]):
                out.unknown.setdefault(i, "args not captured, assumed a retry")
    return out


def blind_replays(calls: Sequence[ToolCall], labels: Sequence[str], case: Case | None) -> Findings:
    """A risky call whose outcome is unknown (timeout) repeated with no successful read in between,
    unless both carry the same idempotency key (the service then deduplicates)."""
    out = Findings()
    keys = [operation_key(c) for c in calls]
    for j, call in enumerate(calls):
        if not (is_risky(call, case) and is_timeout(call)):
            continue
        for k in range(j + 1, len(calls)):
            read = not calls[k].failed and effect_of(calls[k], case) == "read"
            if read:
                break
            if keys[k] != keys[j]:
                continue
            if call.idempotency_key and call.idempotency_key == calls[k].idempotency_key:
                break
            why = f"blind replay: {labels[k]} repeats {labels[j]} whose outcome is unknown ({call.error_type}), "
            out.flag(k, BLIND_REPLAY, why + "no read between", labels[k])
            break
    return out


def missing_idempotency_keys(calls: Sequence[ToolCall], labels: Sequence[str], case: Case | None) -> Findings:
    """A risky call without a key: a warning by default (a correct agent whose tools take no key is not
    failed for it), a failure (flagged) when the case or config requires keys, nothing when it waives them."""
    out = Findings()
    required = case.require_idempotency_key if case is not None else None
    if required is False:
        return out
    for i, call in enumerate(calls):
        if is_risky(call, case) and not call.idempotency_key:
            why = f"no idempotency key: {labels[i]} ({effect_of(call, case)})"
            if required:
                out.flag(i, MISSING_IDEMPOTENCY_KEY, why, labels[i], severity=FAILURE)
            else:
                out.note(MISSING_IDEMPOTENCY_KEY, why, i, labels[i], severity=WARNING)
    return out


def duplicate_side_effects(calls: Sequence[ToolCall], labels: Sequence[str], case: Case | None) -> Findings:
    """Successful risky calls that repeat an earlier successful one, unless both carry the same key."""
    out = Findings()
    first: dict[str, int] = {}
    for i, call in enumerate(calls):
        if call.failed or not is_risky(call, case):
            continue
        if not identity_known(call):
            out.unknown.setdefault(i, "args not captured, duplicate check skipped")
            continue
        key = operation_key(call)
        same = first.setdefault(key, i)
        if same == i:
            continue
        if call.idempotency_key and call.idempotency_key == calls[same].idempotency_key:
            continue
        out.flag(i, DUPLICATE_SIDE_EFFECT, f"duplicate side effect: {labels[i]} repeats {labels[same]}", labels[i])
    return out


def loops(calls: Sequence[ToolCall], labels: Sequence[str], case: Case | None) -> Findings:
    """A block of 1-3 calls repeated `loop_repeats` times in a row with the same outcomes each time.

    With `max_retries` r, a single call may repeat r times as bounded retries, so the threshold for a
    one-call block is at least r + 1 repeats. A repetition of calls that succeeded, which the same calls end with a
    new outcome, is waiting for a state that then changed (a job's status polled until it is done): no loop. (A
    failure repeated is a retry: a loop however it ends, beside the bound `max_retries` sets.)
    """
    out = Findings()
    repeats = case.loop_repeats if case is not None else 3
    bound = case.max_retries if case is not None and case.max_retries is not None else 0
    operations = [operation_key(c) for c in calls]
    keys = [f"{op}->{outcome_key(c)}" for op, c in zip(operations, calls, strict=True)]
    for period in (1, 2, 3):
        need = max(repeats, bound + 1) if period == 1 else repeats
        run, waited = 0, -1
        for i in range(period, len(calls)):
            run = run + 1 if keys[i] == keys[i - period] else 0
            if run < period * need or i in out.flagged or i <= waited:
                continue
            if run == period * need:
                end = i  # the repetition's last call
                while end + 1 < len(calls) and keys[end + 1] == keys[end + 1 - period]:
                    end += 1
                polled = not any(c.failed for c in calls[end + 1 - period : end + 1])  # failures are retries
                if polled and end + 1 < len(calls) and operations[end + 1] == operations[end + 1 - period]:
                    waited = end  # the same call again, a new outcome: what it waited for came
                    continue
                first = i - run - period + 1
                block = ", ".join(labels[first : first + period])
                out.note(LOOP, f"loop: [{block}] repeated {need} times with the same outcome", first, labels[first])
            out.flagged.add(i)
    return out
