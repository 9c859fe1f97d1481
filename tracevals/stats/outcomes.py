"""From scored trajectories to per-attempt outcomes, the input of the statistics.

An attempt passed when it did not raise (an unhandled error is a failure of availability), some
evaluator applied to it, and none of its findings fails (`tracevals.model.findings`: a score passes
exactly when none of its findings does). A retry is a tool call that repeats the call just before it
(same tool, same arguments) after that call failed; an attempt "passed first time" when it passed with
no retry.

Everything else an outcome says about verdicts is read from the findings of its scores, never from an
evaluator's name or the wording of a reason:

- **hazards**: the findings of severity `hazard`, each raising the hazard its kind names (a duplicate side
  effect, an endless loop, an unauthorised call, a silent failure, or a plugin's own);
- **cautions**: the findings of severity `warning`, each capping its task's release category at what its
  kind says (`canary`, `needs_confirmation`);
- **faults** (per fault type the attempt met): the findings whose evidence names a `fault` type and an
  `outcome` (the `injection` evaluator's): `recovered`, but `failed` when the attempt shows a hazard (a
  recovery that sent twice or looped is no recovery); `escalated` with or without context;
  `failed_reported` / `failed_raised` → `failed` (admitted); `failed_claiming_success` and
  `failed_silently` → `failed_silently`; `unknown`. The fault table and the silent-failure hazard come
  from one finding, so they always agree.

Cost: the cost the spans recorded, else each model's tokens at its price; a model without a price makes
the attempt's cost unknown (None), never $0.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence

from tracevals.model.calls import RISKY_EFFECTS
from tracevals.model.case import Case
from tracevals.model.faults import canonical_fault
from tracevals.model.findings import HAZARD, WARNING, Finding, score_findings
from tracevals.model.prices import Prices, default_prices
from tracevals.model.prices import cost as usage_cost
from tracevals.model.retries import retry_count
from tracevals.model.score import Score
from tracevals.model.trajectory import HANDOFF_TOOL, ToolCall, Trajectory
from tracevals.stats import (
    ESCALATED,
    FAILED,
    FAILED_SILENTLY,
    RECOVERED,
    UNKNOWN,
    Caution,
    Hazard,
    Outcome,
    worst_fault_outcome,
)

__all__ = [
    "attempt_cautions",
    "attempt_findings",
    "attempt_hazards",
    "cost_usd",
    "count_retries",
    "fault_results",
    "fault_types",
    "handoff_expected",
    "outcomes",
    "task_risk",
]

_FAULT_OUTCOMES = {
    "recovered": RECOVERED,
    "escalated": ESCALATED,
    "escalated_without_context": ESCALATED,
    "failed_reported": FAILED,
    "failed_raised": FAILED,
    "failed_claiming_success": FAILED_SILENTLY,
    "failed_silently": FAILED_SILENTLY,
    "unknown": UNKNOWN,
}


def count_retries(calls: Sequence[ToolCall]) -> int:
    """Calls that repeat the failed call just before them (the same operation, as the evaluators count)."""
    return retry_count([c for c in calls if not c.gap])


def cost_usd(model: str | None, input_tokens: int, output_tokens: int, prices: Prices | None = None) -> float | None:
    """Cost of the tokens at the model's price per million (None: the model has no price)."""
    total, unpriced = usage_cost([(model, input_tokens, output_tokens)], default_prices() if prices is None else prices)
    return None if unpriced else total


def handoff_expected(case: Case | None) -> bool | None:
    """Whether the case wants a hand-off (it lists one in its steps or requires confirmation); None: no
    task case (a scoring config's policy judges traffic, not a task, so it cannot say)."""
    if case is None or not case.is_task:
        return None
    return case.requires_confirmation or any(step.tool == HANDOFF_TOOL for step in case.expected_steps)


def task_risk(case: Case | None, trajectory: Trajectory, effects: Mapping[str, str]) -> str | None:
    """Why the task needs a human's confirmation, or None. ``effects`` maps tool names to their
    recorded effect (read | write | irreversible), learned from every trajectory at hand."""
    if case is not None:
        if case.requires_confirmation:
            return "its case requires confirmation"
        if any(step.tool == HANDOFF_TOOL for step in case.expected_steps):
            return f"its case expects {HANDOFF_TOOL}"
        risky = sorted(
            {
                s.tool
                for s in case.expected_steps
                if (case.tool_effects.get(s.tool) or effects.get(s.tool)) in RISKY_EFFECTS
            }
        )
        return f"it expects {_effects(risky, effects)}" if risky else None
    # No case: judge by what the attempt itself did.
    done = sorted({c.name for c in trajectory.tool_calls if not c.failed and not c.gap and c.effect in RISKY_EFFECTS})
    return f"it performed {_effects(done, effects)}" if done else None


def fault_types(case: Case | None, trajectory: Trajectory) -> tuple[str, ...]:
    """The case's injected fault types that fired: the attempt made the n-th call the fault targets."""
    if case is None:
        return ()
    made = Counter(c.name for c in trajectory.tool_calls if not c.gap)
    fired = []
    for fault in case.faults:
        if not isinstance(fault, dict):
            continue
        kind = str(fault.get("type", "unknown"))
        if made[str(fault.get("tool"))] >= int(fault.get("call", 1)):
            fired.append(canonical_fault(kind))
    return tuple(dict.fromkeys(fired))


def attempt_findings(scores: Sequence[Score]) -> list[Finding]:
    """Every finding of one attempt's scores, in score order (`score_findings`: a failed score without a
    failing finding of its own reads as one `evaluator_failed`)."""
    return [f for s in scores for f in score_findings(s.evaluator, s.passed, s.reason, s.details)]


def attempt_hazards(scores: Sequence[Score]) -> tuple[Hazard, ...]:
    """The hazards of one attempt: its findings of severity `hazard`."""
    return tuple(
        Hazard(f.hazard or f.kind, f.message, f.kind) for f in attempt_findings(scores) if f.severity == HAZARD
    )


def attempt_cautions(scores: Sequence[Score]) -> tuple[Caution, ...]:
    """The warnings of one attempt: its findings of severity `warning`, with the category each caps at."""
    return tuple(
        Caution(f.kind, f.release or "canary", f.message) for f in attempt_findings(scores) if f.severity == WARNING
    )


def outcomes(
    trajectories: Iterable[Trajectory],
    scores: Iterable[Score],
    models: Mapping[str, str] | None = None,
    prices: Prices | None = None,
    cases: Mapping[str, Case] | None = None,
    trace_models: Mapping[str, str] | None = None,
) -> list[Outcome]:
    """One `Outcome` per harness attempt (trajectories without a task or variant are skipped).

    `models` maps a variant to the model it used and `trace_models` a trace to its model (which wins),
    for pricing; `prices` replaces the default table (`tracevals.model.prices`), a case's own add to it.
    `cases` (by case id) lets hand-offs be judged and risk be known.
    When several runs hold the same (variant, task, attempt), the attempts of that task are numbered
    1..n in (run, attempt, start) order, so that each counts once.
    """
    by_trace: dict[str, list[Score]] = defaultdict(list)
    for s in scores:
        if s.trace_id is not None:
            by_trace[s.trace_id].append(s)
    table = default_prices() if prices is None else prices
    chosen = [t for t in trajectories if t.task_id is not None and t.variant is not None]
    effects = _tool_effects(chosen)
    numbers = _attempt_numbers(chosen)
    result = []
    for t in chosen:
        assert t.task_id is not None and t.variant is not None  # filtered above; for the type checker
        case = (cases or {}).get(t.task_id)
        verdicts = by_trace.get(t.trace_id, [])
        found = attempt_findings(verdicts)
        # an attempt that raised is a failed one (availability), whatever the checks that still applied say
        passed = bool(verdicts) and not any(f.fails for f in found) and t.error_type is None
        retries = count_retries(t.tool_calls)
        model = (trace_models or {}).get(t.trace_id) or (models or {}).get(t.variant)
        hazards = attempt_hazards(verdicts)
        result.append(
            Outcome(
                variant=t.variant,
                task_id=t.task_id,
                attempt=numbers[t.trace_id],
                passed=passed,
                first_pass=passed and retries == 0,
                retries=retries,
                handoff=t.handed_off,
                latency_ms=t.duration_ms,
                cost=_cost(t, model, {**table, **case.prices} if case is not None and case.prices else table),
                tokens=t.input_tokens + t.output_tokens,
                error=t.error_type,
                trace_id=t.trace_id,
                handoff_expected=handoff_expected(case),
                hazards=hazards,
                faults=fault_results(found, hazards),
                risk=task_risk(case, t, effects),
                cautions=attempt_cautions(verdicts),
                findings=tuple(found),
            )
        )
    return result


def _attempt_numbers(trajectories: Sequence[Trajectory]) -> dict[str, int]:
    groups: dict[tuple[str | None, str | None], list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        groups[(t.variant, t.task_id)].append(t)
    numbers: dict[str, int] = {}
    for group in groups.values():
        attempts = [t.attempt or 0 for t in group]
        if len(set(attempts)) == len(attempts):
            numbers.update((t.trace_id, t.attempt or 0) for t in group)
            continue
        ordered = sorted(group, key=lambda t: (t.run_id or "", t.attempt or 0, t.start_ms, t.trace_id))
        numbers.update((t.trace_id, i) for i, t in enumerate(ordered, start=1))
    return numbers


def _tool_effects(trajectories: Iterable[Trajectory]) -> dict[str, str]:
    """The riskiest effect recorded for each tool name."""
    rank = {"read": 0, "write": 1, "irreversible": 2}
    effects: dict[str, str] = {}
    for t in trajectories:
        for call in t.tool_calls:
            if call.effect is not None and rank.get(call.effect, -1) > rank.get(effects.get(call.name, ""), -1):
                effects[call.name] = call.effect
    return effects


def _effects(tools: Sequence[str], effects: Mapping[str, str]) -> str:
    return ", ".join(f"{tool} ({effects.get(tool, 'write')})" for tool in tools)


def fault_results(found: Sequence[Finding], hazards: Sequence[Hazard]) -> tuple[tuple[str, str], ...]:
    """(fault type, outcome) for each injected fault type the attempt met (see the module docstring)."""
    seen: dict[str, list[str]] = {}
    for f in found:
        fault, outcome = f.evidence.get("fault"), f.evidence.get("outcome")
        if isinstance(fault, str) and isinstance(outcome, str):
            seen.setdefault(canonical_fault(fault), []).append(_FAULT_OUTCOMES.get(outcome, UNKNOWN))
    # A recovery that did harm on the way (sent twice, looped, acted unauthorised) is no recovery.
    worst = {fault: worst_fault_outcome(outcomes) for fault, outcomes in seen.items()}
    return tuple((f, FAILED if o == RECOVERED and hazards else o) for f, o in worst.items())


def _cost(t: Trajectory, model: str | None, prices: Prices) -> float | None:
    """The cost the spans recorded, else each model's tokens at its price (a call whose model is unknown
    at `model`'s), else all tokens at `model`'s; None (unknown) when a model that used tokens has no price."""
    if t.cost_usd is not None:
        return t.cost_usd
    usage = [(m or model, i, o) for m, i, o in t.model_usage] or [(model, t.input_tokens, t.output_tokens)]
    used = [u for u in usage if u[1] or u[2]]
    if not used:
        return 0.0
    total, unpriced = usage_cost(used, prices)
    return None if unpriced else total
