"""Fault outcomes: for each injected fault type, how often the agent recovered, escalated or failed.

An attempt carries, per fault type it met, one outcome (``Outcome.faults``, see
:mod:`tracevals.stats.outcomes` for where it comes from): ``recovered``, ``escalated`` (handed to a human),
``failed`` (and admitted it), ``failed_silently`` (said nothing, or claimed a success that did not
happen) or ``unknown`` (the answer was not captured). A tally counts attempts, one per fault type.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tracevals.stats.estimators import Z95, wilson
from tracevals.stats.summary import Outcome

__all__ = [
    "ESCALATED",
    "FAILED",
    "FAILED_SILENTLY",
    "FAULT_OUTCOMES",
    "RECOVERED",
    "UNKNOWN",
    "FaultTally",
    "fault_outcomes",
    "worst_fault_outcome",
]

RECOVERED = "recovered"
ESCALATED = "escalated"
FAILED = "failed"
FAILED_SILENTLY = "failed_silently"
UNKNOWN = "unknown"
#: Worst first: when an attempt met one fault type twice, the worse outcome speaks for it.
FAULT_OUTCOMES = (FAILED_SILENTLY, FAILED, UNKNOWN, ESCALATED, RECOVERED)


def worst_fault_outcome(outcomes: Sequence[str]) -> str:
    """The worst of several outcomes of one fault type in one attempt (an unknown name counts as unknown)."""
    ranked = [o if o in FAULT_OUTCOMES else UNKNOWN for o in outcomes]
    return min(ranked, key=FAULT_OUTCOMES.index)


@dataclass(frozen=True)
class FaultTally:
    """Attempts of one variant that met one fault type, by what became of them (``failed`` includes ``silent``)."""

    variant: str
    fault: str
    n: int
    recovered: int
    escalated: int
    failed: int
    silent: int
    unknown: int = 0
    z: float = Z95

    @property
    def recovered_wilson(self) -> tuple[float, float]:
        """Wilson interval of the recovered share."""
        return wilson(self.recovered, self.n, self.z)


def fault_outcomes(outcomes: Iterable[Outcome], z: float = Z95) -> list[FaultTally]:
    """One :class:`FaultTally` per (fault type, variant) seen, sorted by fault type then variant."""
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for o in outcomes:
        per_type: dict[str, list[str]] = {}
        for fault, outcome in o.faults:
            per_type.setdefault(fault, []).append(outcome)
        for fault, seen in per_type.items():
            row = counts.setdefault((fault, o.variant), dict.fromkeys(FAULT_OUTCOMES, 0))
            row[worst_fault_outcome(seen)] += 1
    return [
        FaultTally(
            variant,
            fault,
            n=sum(r.values()),
            recovered=r[RECOVERED],
            escalated=r[ESCALATED],
            failed=r[FAILED] + r[FAILED_SILENTLY],
            silent=r[FAILED_SILENTLY],
            unknown=r[UNKNOWN],
            z=z,
        )
        for (fault, variant), r in sorted(counts.items())
    ]
