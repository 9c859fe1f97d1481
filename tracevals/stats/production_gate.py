"""The production gate: the night (the last day of a selection) against the days before it, and floors.

**Comparisons**, per evaluator: a significant fall of its pass rate (one-sided Fisher exact test), a
fall beyond `max_drop`. With nothing to compare (one day only, no verdict before the night) each is
*not judged*, never a pass. **Floors** judge the night alone, so they apply on the first night too:
no session with a hazard (`forbid`: every hazard by default, or the ones named), `min_pass_rate` (the
share of the night's sessions whose every verdict passed), `min_rate` (each evaluator's rate). The
verdict follows `tracevals.stats.release_gate`: FAIL when a judged check failed, NOT JUDGED when none
did and a comparison could not be made, PASS otherwise.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from tracevals.stats.categories import hazard_label
from tracevals.stats.production import ProductionSummary
from tracevals.stats.release_gate import GateCheck, GateResult, not_judged

__all__ = ["ALL_HAZARDS", "ProductionThresholds", "run_production_gate"]

ALL_HAZARDS = "*"  # `forbid`: every hazard kind


@dataclass(frozen=True)
class ProductionThresholds:
    """What a night must meet: per evaluator (all of them unless `evaluators` names some), and floors."""

    fail_on_significant_fall: bool = True
    max_drop: float | None = None  # the largest allowed fall of a rate, night vs the days before
    min_rate: float | None = None  # the lowest allowed rate of the night, per evaluator
    evaluators: tuple[str, ...] = ()
    min_pass_rate: float | None = None  # the lowest allowed share of the night's sessions that passed
    forbid: tuple[str, ...] = (ALL_HAZARDS,)  # hazards no session of the night may show (() for none)

    def __post_init__(self) -> None:
        for name in ("max_drop", "min_rate", "min_pass_rate"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")


def run_production_gate(summary: ProductionSummary, thresholds: ProductionThresholds) -> GateResult:
    """Pass or fail the night (the last day of the selection): its floors, then evaluator by evaluator."""
    t = thresholds
    unknown = [e for e in t.evaluators if e not in summary.evaluators]
    if unknown:
        raise ValueError(f"evaluator {', '.join(unknown)} scored nothing here; scored: {', '.join(summary.evaluators)}")
    chosen = list(t.evaluators) or summary.evaluators
    if not summary.days:
        raise ValueError("no production session in the selection")
    night = summary.days[-1]
    checks = _floors(summary, t)
    nothing = "one day only" if len(summary.days) < 2 else None
    for e in chosen:
        trend = summary.trend(e)
        tonight = next((r.rate for r in summary.by_day if r.evaluator == e and r.day == night), None)
        why = f"{e}: nothing to compare ({nothing or f'no verdict on {night} or before it'})"
        if t.fail_on_significant_fall:
            if trend is None:
                checks.append(not_judged(f"significant_fall:{e}", why, summary.alpha))
            else:
                checks.append(GateCheck(f"significant_fall:{e}", not trend.significant, trend.statement,
                                        summary.alpha, trend.p_value))  # fmt: skip
        if t.max_drop is not None:
            if trend is None:
                checks.append(not_judged(f"max_drop:{e}", why, t.max_drop))
            else:
                ok = trend.drop <= t.max_drop
                measured = trend.statement.split("; ")[0]
                msg = f"{e}: fell {trend.drop:+.3f} on {night} ({measured}) vs maximum {t.max_drop:g}"
                checks.append(GateCheck(f"max_drop:{e}", ok, msg, t.max_drop, trend.drop))
        if t.min_rate is not None and tonight is not None:
            ok = tonight.rate >= t.min_rate
            lo, hi = tonight.wilson
            measured = f"{tonight.passes}/{tonight.n} = {tonight.rate:.3f} [{lo:.3f}, {hi:.3f}]"
            msg = f"{e}: {measured} on {night} vs minimum {t.min_rate:g}"
            checks.append(GateCheck(f"min_rate:{e}", ok, msg, t.min_rate, tonight.rate))
    before = f"{summary.days[0]}..{summary.days[-2]}" if len(summary.days) > 1 else "none"
    return GateResult(baseline=f"the days before ({before})", candidate=f"the night of {night}", checks=checks)


def _floors(summary: ProductionSummary, t: ProductionThresholds) -> list[GateCheck]:
    """The checks of the night alone: hazards, and the share of its sessions that passed."""
    night = summary.days[-1]
    rate = summary.session_rates.get(night)
    sessions = rate.n if rate is not None else 0
    checks = []
    if t.forbid:
        everything = ALL_HAZARDS in t.forbid
        hits = [h for h in summary.hazards if h.day == night and (everything or h.hazard in t.forbid)]
        by_hazard = Counter(h.hazard for h in {(h.session_id, h.hazard): h for h in hits}.values())
        name = "forbid:hazards" if everything else "forbid:" + ",".join(t.forbid)
        if not hits:
            what = "any hazard" if everything else ", ".join(hazard_label(k) for k in t.forbid)
            checks.append(GateCheck(name, True, f"no session of {night} shows {what}", list(t.forbid), 0))
        else:
            flagged = sorted({h.session_id for h in hits})
            parts = "; ".join(f"{hazard_label(k)} in {n}/{sessions} sessions" for k, n in by_hazard.most_common())
            first = hits[0]
            msg = (
                f"{len(flagged)}/{sessions} sessions of {night} show a hazard: {parts} (session {first.session_id}: "
                f"{first.evaluator}: {first.detail})"
            )
            checks.append(GateCheck(name, False, msg, list(t.forbid), len(flagged), flagged[:20]))
    if t.min_pass_rate is not None:
        if rate is None or rate.n == 0:
            checks.append(GateCheck("min_pass_rate", False, f"no session of {night} has a verdict", t.min_pass_rate))
        else:
            lo, hi = rate.wilson
            msg = (
                f"{rate.passes}/{rate.n} sessions of {night} passed every verdict = {rate.rate:.3f} "
                f"[{lo:.3f}, {hi:.3f}] vs minimum {t.min_pass_rate:g}"
            )
            checks.append(GateCheck("min_pass_rate", rate.rate >= t.min_pass_rate - 1e-12, msg, t.min_pass_rate,
                                    rate.rate))  # fmt: skip
    return checks
