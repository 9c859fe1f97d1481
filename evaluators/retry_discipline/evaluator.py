"""`retry_discipline`: bounded, patient retries of what may be retried; no blind replays, duplicate
side effects or loops; idempotency keys on side effects.

Definitions (calls are the executed ones; "same operation" as in `calls.py`: tool + arguments, the
idempotency key aside):

- a retry is a call of the same operation right after (the next executed call) that operation
  failed; consecutive retries form one chain.
- bounded: with `max_retries` set, no chain may hold more retries than that (per failed call; the
  attempt's total is `step_budget`'s `max_retries_total`). The retries past the bound are flagged.
- backoff: a retry must start at least the failure's `retry_after_ms` after the failed call ended;
  a 429 or a timeout that named no wait needs `retry_policy.min_backoff_ms` (default 0: unchecked).
- non-retryable: no retry of a failure the tool marked `tracevals.retryable = false`, or, unmarked, a
  4xx other than 408 / 425 / 429.
- blind replay: after a write or irreversible call timed out (its outcome is unknown), the same
  operation again with no successful read call in between, unless both carry the same idempotency
  key. Find out what happened first, then act.
- idempotency keys: a write or irreversible call without one (`tracevals.idempotency_key`) is a
  warning (the task is at best "needs confirmation"; the attempt still passes), a failure when
  `retry_policy.require_idempotency_key` is true, not checked when it is false. The hand-off tool is exempt.
- duplicate side effect: a second successful write/irreversible call of the same operation as an
  earlier successful one, unless both carry the same idempotency key (the tool then deduplicates).
- loop: a block of 1 to 3 calls repeated `retry_policy.loop_repeats` (default 3) times in a row with
  the same outcome each time (no progress). A single call needs at least `max_retries` + 1 repeats.

Each rule reports findings of the kinds in `declarations.py` (a bound exceeded and a loop are
hazards: an endless loop; a duplicate side effect is one; the others fail the attempt; a missing key
warns). Missing data (arguments or times not captured) makes a call unknown. Score: the share of calls
neither flagged nor unknown; passed when no finding fails. Needs no case (the bound does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tracevals.evaluators.evaluator import Screened, call_label, executed_calls, make_score, share
from tracevals.evaluators.retry_discipline.declarations import FINDINGS, NOT_CHECKED, OPTIONS
from tracevals.evaluators.retry_discipline.rules import (
    Findings,
    blind_replays,
    chain_rules,
    duplicate_side_effects,
    loops,
    missing_idempotency_keys,
)
from tracevals.model.calls import CAPTURE_HINT
from tracevals.model.case import Case
from tracevals.model.retries import retry_chains
from tracevals.model.score import Score
from tracevals.model.trajectory import Trajectory


@dataclass
class RetryDiscipline(Screened):
    """Bounded, patient retries; no blind replay, duplicate side effect or loop; idempotency keys."""

    name: ClassVar[str] = "retry_discipline"
    version: ClassVar[int] = 5  # 4: typed findings, a missing key warns unless required; 5: polling is no loop
    findings: ClassVar = FINDINGS
    options: ClassVar = OPTIONS
    screen_function: ClassVar[str] = "tracevals.evaluators.retry_discipline.screen:screen_retry"

    def evaluate(self, trajectory: Trajectory, case: Case | None) -> Score | None:
        calls = executed_calls(trajectory)
        if not calls:
            return None
        labels = [call_label(c, i) for i, c in enumerate(calls, start=1)]
        chains = retry_chains(calls)
        found = Findings()
        found.merge(chain_rules(calls, labels, chains, case))
        found.merge(blind_replays(calls, labels, case))
        found.merge(missing_idempotency_keys(calls, labels, case))
        found.merge(duplicate_side_effects(calls, labels, case))
        found.merge(loops(calls, labels, case))
        unknown = {i: why for i, why in found.unknown.items() if i not in found.flagged}
        score, arithmetic = share(len(calls) - len(found.flagged) - len(unknown), len(calls))
        max_retries = case.max_retries if case is not None else None
        total = sum(len(c) - 1 for c in chains)
        bound = "not set" if max_retries is None else str(max_retries)
        head = (
            f"{len(calls)} calls, {total} retries in {len(chains)} chains (max per call {bound}), "
            f"{len(found.flagged)} flagged, {len(unknown)} unknown; score={arithmetic}"
        )
        notes = [f"unknown: {labels[i]}: {why}" for i, why in sorted(unknown.items())]
        if any(why.startswith("args not captured") for why in unknown.values()):
            notes.append(CAPTURE_HINT)
        details: dict[str, Any] = {
            "calls": len(calls),
            "retries": total,
            "chains": len(chains),
            "max_retries": max_retries,
            "flagged": [labels[i] for i in sorted(found.flagged)],
            "problems": found.problems,
            "unknown": {labels[i]: why for i, why in sorted(unknown.items())},
        }
        unchecked = [
            NOT_CHECKED(f"unknown: {labels[i]}: {why}", step=i + 1, call=labels[i])
            for i, why in sorted(unknown.items())
        ]
        return make_score(
            self,
            trajectory,
            score=score,
            reason="; ".join([head, *found.problems, *notes]),
            details=details,
            findings=[*found.found, *unchecked],
        )
