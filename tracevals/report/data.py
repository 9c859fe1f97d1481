"""Everything one report shows, computed once: the writers of every format only lay it out.

`build_report` turns attempts (trajectories), their scores and the task cases into outcomes, the
per-variant summaries, the baseline→candidate comparison, fault outcomes and the failure gallery.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracevals.model.case import Case
from tracevals.model.findings import SEVERITIES, failure_kinds, score_findings
from tracevals.model.prices import Prices
from tracevals.model.progress import Told, quiet
from tracevals.model.score import Score
from tracevals.model.trajectory import ToolCall, Trajectory
from tracevals.report.reliability import Reliability, reliability
from tracevals.stats import (
    Z95,
    CategoryRules,
    Comparison,
    FaultTally,
    Outcome,
    VariantSummary,
    compare,
    fault_outcomes,
    summarize,
)
from tracevals.stats.outcomes import outcomes

__all__ = ["CallView", "FailedAttempt", "FailureRow", "ReportData", "build_report", "pick_pair"]

#: The gallery shows at most this many failed attempts of each failure group (the first ones,
#: regressions' tasks first); each group states how many it holds.
GROUP_LIMIT = 12


@dataclass(frozen=True)
class CallView:
    """One tool call as a person reads it: name, short arguments, the error if it failed."""

    name: str
    args: str
    error: str | None = None
    effect: str | None = None


@dataclass(frozen=True)
class FailedAttempt:
    """A failed attempt beside what was expected: the case's steps and a passing attempt of the task."""

    variant: str
    task_id: str
    attempt: int
    trace_id: str
    calls: tuple[CallView, ...]
    expected: tuple[str, ...]
    reference: tuple[CallView, ...] | None
    reasons: tuple[str, ...]
    output: str | None
    error: str | None
    hazards: tuple[str, ...]
    kinds: tuple[str, ...] = ()  # every failure of the attempt, "evaluator: kind" (hazards as "hazard: ...")
    group: str = "failed"  # the gallery group it is shown in: the first of `kinds` (the most severe)
    reference_trace: str | None = None  # the trace of `reference`, the passing attempt shown beside it


@dataclass(frozen=True)
class FailureRow:
    """One row of a failure table: a variant's count of something that failed, out of how many."""

    variant: str
    name: str  # the evaluator, the tool, or the failure group
    failed: int
    total: int
    detail: tuple[tuple[str, int], ...] = ()  # the kinds (evaluators) or errors (tools), most frequent first


@dataclass
class ReportData:
    """The figures of one report. ``meta`` carries the provenance every figure states."""

    summaries: dict[str, VariantSummary]
    comparison: Comparison | None
    faults: list[FaultTally]
    outcomes: list[Outcome]
    failures: list[FailedAttempt]
    failures_total: int
    meta: dict[str, Any] = field(default_factory=dict)
    by_evaluator: list[FailureRow] = field(default_factory=list)  # failed verdicts / verdicts
    by_tool: list[FailureRow] = field(default_factory=list)  # failed calls / calls
    by_group: list[FailureRow] = field(default_factory=list)  # failed attempts per gallery group / attempts
    reliability: Reliability | None = None  # the three properties, per-step rates, the environments


def pick_pair(variants: Sequence[str], baseline: str | None, candidate: str | None) -> tuple[str, str] | None:
    """The (baseline, candidate) to compare: as given, or `baseline`/`candidate` when both ran, or the
    only two variants in name order; None when there is nothing to compare."""
    if baseline and candidate:
        return baseline, candidate
    if "baseline" in variants and "candidate" in variants:
        return "baseline", "candidate"
    if len(variants) == 2:
        return variants[0], variants[1]
    return None


def build_report(
    trajectories: Sequence[Trajectory],
    scores: Sequence[Score],
    cases: Mapping[str, Case],
    meta: Mapping[str, Any] | None = None,
    *,
    k: int | None = None,
    z: float = Z95,
    baseline: str | None = None,
    candidate: str | None = None,
    trace_models: Mapping[str, str] | None = None,
    models: Mapping[str, str] | None = None,
    prices: Prices | None = None,
    rules: CategoryRules | None = None,
    environments: Mapping[str, Mapping[str, str | None]] | None = None,
    vary: Sequence[str] = (),
    baseline_optional: bool = False,
    told: Told = quiet,
) -> ReportData:
    """Compute every figure of a report; raises ValueError when there is no harness attempt.
    `environments` (by trace id, as the `environments` view has them) are summarised per variant and
    compared between the pair; `vary` names what is under test (expected to differ). With
    `baseline_optional` (the gate on day one), a baseline without attempts leaves no comparison
    instead of an error; the candidate must still have attempts. `told`: the phase under way (a bar on a
    terminal)."""
    told("the figures of each variant", 0, None)
    outs = outcomes(trajectories, scores, models=models, prices=prices, cases=cases, trace_models=trace_models)
    if not outs:
        raise ValueError("no harness attempts (traces with a task id and a variant) to report on")
    summaries = summarize(outs, k=k, z=z, rules=rules)
    if baseline_optional and candidate is not None and candidate not in summaries:  # as lake_data words it
        raise ValueError(f"variant {candidate} not in the selection (variants there: {', '.join(summaries)})")
    if baseline_optional and candidate is not None and (baseline is None or baseline not in summaries):
        baseline = None
        pair: tuple[str, str] | None = None
        wanted: tuple[str, ...] = (candidate,)
    else:
        pair = pick_pair(list(summaries), baseline, candidate)
        wanted = pair or ()
    for name in wanted:
        if name not in summaries:
            raise ValueError(f"variant {name!r} has no attempts; variants: {', '.join(summaries)}")
    comparison = compare(summaries[pair[0]], summaries[pair[1]]) if pair else None
    failures = _gallery(trajectories, scores, cases, outs, comparison)
    full_meta = {"k": k, "z": z, **dict(meta or {})}
    return ReportData(
        summaries=summaries,
        comparison=comparison,
        faults=fault_outcomes(outs, z=z),
        outcomes=outs,
        failures=failures,
        failures_total=len(failures),
        meta=full_meta,
        by_evaluator=_by_evaluator(scores, outs),
        by_tool=_by_tool(trajectories, outs),
        by_group=_by_group(failures, outs),
        reliability=reliability(trajectories, outs, cases, environments, pair, vary, z, told),
    )


def _gallery(
    trajectories: Sequence[Trajectory],
    scores: Sequence[Score],
    cases: Mapping[str, Case],
    outs: Sequence[Outcome],
    comparison: Comparison | None,
) -> list[FailedAttempt]:
    by_trace = {t.trace_id: t for t in trajectories}
    reasons: dict[str, list[str]] = {}
    for s in scores:
        if s.trace_id is not None and not s.passed:
            reasons.setdefault(s.trace_id, []).append(f"{s.evaluator}: {s.reason}")
    passing: dict[str, Trajectory] = {}
    # The cleanest passing attempt is the reference: fewest failed calls, then fewest calls.
    for o in sorted(outs, key=lambda o: (_untidiness(by_trace.get(o.trace_id or "")), o.variant, o.attempt)):
        if o.passed and not o.hazards and o.trace_id in by_trace:
            passing.setdefault(o.task_id, by_trace[o.trace_id])
    # Regressed tasks first, in the comparison's order, then every other task by id.
    order = {d.task_id: i for i, d in enumerate(comparison.regressions)} if comparison else {}
    failed = [o for o in outs if (not o.passed or o.hazards) and o.trace_id in by_trace]
    failed.sort(key=lambda o: (order.get(o.task_id, len(order)), o.task_id, o.variant, o.attempt))
    failing: dict[str, list[Score]] = {}
    for s in scores:
        if s.trace_id is not None and not s.passed:
            failing.setdefault(s.trace_id, []).append(s)
    gallery = []
    for o in failed:
        assert o.trace_id is not None  # filtered above; for the type checker
        t = by_trace[o.trace_id]
        case = cases.get(o.task_id)
        reference = passing.get(o.task_id)
        kinds = _kinds(o, failing.get(o.trace_id, []))
        gallery.append(
            FailedAttempt(
                variant=o.variant,
                task_id=o.task_id,
                attempt=o.attempt,
                trace_id=o.trace_id,
                calls=tuple(_view(c) for c in t.tool_calls),
                expected=tuple(_expected(case)) if case is not None else (),
                reference=tuple(_view(c) for c in reference.tool_calls) if reference is not None else None,
                reasons=tuple(reasons.get(o.trace_id, [])),
                output=t.output,
                error=t.error_type,
                hazards=tuple(h.detail for h in o.hazards),
                kinds=kinds,
                group=kinds[0] if kinds else "failed",
                reference_trace=reference.trace_id if reference is not None else None,
            )
        )
    return gallery


def _kinds(o: Outcome, failing: Sequence[Score]) -> tuple[str, ...]:
    """Every failure of one attempt, most severe first: its release hazards, then each failing finding of
    its failed verdicts as "evaluator: kind" (hazards before failures, else in score order), then an
    error it raised. Read from the findings alone."""
    from tracevals.stats import hazard_label

    out = [f"hazard: {hazard_label(h.kind)}" for h in o.hazards]
    found = [f for s in failing for f in score_findings(s.evaluator, s.passed, s.reason, s.details) if f.fails]
    found.sort(key=lambda f: SEVERITIES.index(f.severity))  # stable: score order within a severity
    out += [f"{f.evaluator}: {f.words}" for f in found]
    if o.error is not None:
        out.append(f"error: {o.error}")
    return tuple(dict.fromkeys(out))


def _by_evaluator(scores: Sequence[Score], outs: Sequence[Outcome]) -> list[FailureRow]:
    variant_of = {o.trace_id: o.variant for o in outs if o.trace_id}
    return _tally(
        (variant_of[s.trace_id], s.evaluator, None if s.passed else failure_kinds(s))
        for s in scores
        if s.trace_id in variant_of
    )


def _by_tool(trajectories: Sequence[Trajectory], outs: Sequence[Outcome]) -> list[FailureRow]:
    variant_of = {o.trace_id: o.variant for o in outs if o.trace_id}
    return _tally(
        (variant_of[t.trace_id], c.name, None if c.error_type is None else (c.error_type,))
        for t in trajectories
        if t.trace_id in variant_of
        for c in t.tool_calls
    )


def _tally(items: Iterable[tuple[str, str, Sequence[str] | None]]) -> list[FailureRow]:
    """One row per (variant, name) from `(variant, name, details)` items: `details` None for an item that
    did not fail, else what its failure was (perhaps nothing); failed / total, the details by count."""
    total: Counter[tuple[str, str]] = Counter()
    failed: Counter[tuple[str, str]] = Counter()
    details: dict[tuple[str, str], Counter[str]] = {}
    for variant, name, what in items:
        key = (variant, name)
        total[key] += 1
        if what is not None:
            failed[key] += 1
            details.setdefault(key, Counter()).update(what)
    return sorted(
        (FailureRow(v, name, failed[(v, name)], n, _most(details.get((v, name)))) for (v, name), n in total.items()),
        key=lambda r: (r.variant, -r.failed, r.name),
    )


def _by_group(failures: Sequence[FailedAttempt], outs: Sequence[Outcome]) -> list[FailureRow]:
    attempts = Counter(o.variant for o in outs)
    count = Counter((f.variant, f.group) for f in failures)
    return sorted(
        (FailureRow(v, group, n, attempts[v]) for (v, group), n in count.items()),
        key=lambda r: (r.variant, -r.failed, r.name),
    )


def _most(counts: Any) -> tuple[tuple[str, int], ...]:
    return tuple(counts.most_common()) if counts else ()


def _untidiness(t: Trajectory | None) -> tuple[int, int]:
    if t is None:
        return (1 << 30, 1 << 30)
    return (sum(c.failed for c in t.tool_calls), len(t.tool_calls))


def _expected(case: Case) -> list[str]:
    steps = []
    for step in case.expected_steps:
        args = "" if step.args is None else json.dumps(step.args, sort_keys=True, ensure_ascii=False)
        steps.append(f"{step.tool}({args})" if args else step.tool)
    return steps


def _view(call: ToolCall, limit: int = 90) -> CallView:
    if call.args is None:
        args = "…"
    else:
        shown = {k: v for k, v in call.args.items() if k != "idempotency_key"}  # long and the same every call
        args = json.dumps(shown, sort_keys=True, ensure_ascii=False, default=str)
    if len(args) > limit:
        args = args[: limit - 1] + "…"
    name = f"{call.name} (requested, never executed)" if call.gap else call.name
    return CallView(name=name, args=args, error=call.error_type, effect=call.effect)
