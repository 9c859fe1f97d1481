"""Per-variant summaries: one :class:`Outcome` per attempt in, one :class:`VariantSummary` per variant out."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from tracevals.stats.categories import (
    CATEGORIES,
    HAZARD_KINDS,
    CategoryRules,
    Caution,
    Hazard,
    TaskCategory,
    categorize,
)
from tracevals.stats.estimators import Z95, check_counts, pass_k_series, percentile, wilson

__all__ = ["Outcome", "TaskResult", "VariantSummary", "summarize"]


@dataclass(frozen=True)
class Outcome:
    """One attempt of one task under one variant, as scored from its trace.

    ``first_pass`` means it passed with no retry; ``passed`` is the final verdict after retries.
    ``handoff_expected`` is None when no case says whether a hand-off was right. ``hazards`` are the
    reasons the attempt must not ship; ``faults`` pairs each injected fault type it met with what became
    of it (see :mod:`tracevals.stats.faults`); ``risk`` says why the task needs a human's confirmation
    (None: it does not); ``cautions`` are its warnings (each caps the task's category); ``cost`` is None
    when it is unknown (a model without a price); ``findings`` every finding of its scores.
    """

    variant: str
    task_id: str
    attempt: int
    passed: bool
    first_pass: bool
    retries: int = 0
    handoff: bool = False
    latency_ms: float = math.nan
    cost: float | None = 0.0
    tokens: int = 0
    error: str | None = None
    trace_id: str | None = None
    handoff_expected: bool | None = None
    hazards: tuple[Hazard, ...] = ()
    faults: tuple[tuple[str, str], ...] = ()
    risk: str | None = None
    cautions: tuple[Caution, ...] = ()
    findings: tuple[Any, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.first_pass and not self.passed:
            raise ValueError(f"{self.variant}/{self.task_id}#{self.attempt}: first_pass without passed")
        if self.retries < 0:
            raise ValueError(f"{self.variant}/{self.task_id}#{self.attempt}: negative retries")


@dataclass(frozen=True)
class TaskResult:
    """Attempts ``n`` and passes ``c`` of one task under one variant."""

    task_id: str
    n: int
    c: int
    z: float = field(default=Z95, compare=False)

    def __post_init__(self) -> None:
        check_counts(self.c, self.n)

    @property
    def rate(self) -> float:
        """Pass rate c / n of this task."""
        return self.c / self.n if self.n else math.nan

    @property
    def wilson(self) -> tuple[float, float]:
        """Wilson interval (at this result's ``z``) of this task's pass rate."""
        return wilson(self.c, self.n, self.z)


@dataclass(frozen=True)
class VariantSummary:
    """All reliability figures of one variant. Run-level figures have ``runs`` as their sample size.

    ``pass_at_1`` is the mean over tasks of each task's c / n (every task weighs the same); it equals the
    pooled rate ``passes / runs`` only when every task has the same n. The pooled rate and its Wilson
    interval are kept separately. ``pass_hat_k`` / ``pass_at_k`` map k = 1..``k_cap`` to the task mean,
    where ``k_cap`` is the smallest per-task n (larger k cannot be estimated for every task); ``k`` is the
    headline value, ``min(k_requested, k_cap)``. Every Wilson interval uses ``z``.
    Hand-offs: ``handoffs_correct`` were expected by the case, ``handoffs_wrong`` were not,
    ``handoffs_missed`` were expected and did not happen; hand-offs with no case to judge them by count
    only in ``handoffs``.
    """

    variant: str
    runs: int
    passes: int
    pass_at_1: float
    pooled_rate: float
    wilson: tuple[float, float]
    k_requested: int
    k_cap: int
    k: int
    pass_hat_k: dict[int, float]
    pass_at_k: dict[int, float]
    tasks: list[TaskResult]
    worst_task: TaskResult  # the lowest rate; of tied tasks the most severe category, then hazards
    first_passes: int
    first_success_rate: float
    final_success_rate: float
    avg_retries: float
    handoffs: int
    errors: int
    latency_n: int
    p50_latency_ms: float
    p95_latency_ms: float
    avg_cost: float
    tokens: int
    z: float = Z95
    first_success_wilson: tuple[float, float] = (0.0, 1.0)
    handoffs_correct: int = 0
    handoffs_wrong: int = 0
    handoffs_missed: int = 0
    categories: list[TaskCategory] = field(default_factory=list)
    hazard_attempts: dict[str, int] = field(default_factory=dict)
    total_cost: float = 0.0
    cost_known: int = 0  # attempts whose cost is known (avg_cost and total_cost are over these)
    worst_tied: tuple[str, ...] = ()  # the other tasks at the worst task's rate, in the same order

    @property
    def n_tasks(self) -> int:
        """Number of distinct tasks."""
        return len(self.tasks)

    @property
    def k_capped(self) -> bool:
        """True when the requested k was lowered to the smallest per-task n."""
        return self.k < self.k_requested

    @property
    def pass_hat_k_headline(self) -> float:
        """pass^k at the headline k."""
        return self.pass_hat_k[self.k]

    @property
    def pass_at_k_headline(self) -> float:
        """pass@k at the headline k."""
        return self.pass_at_k[self.k]

    def task(self, task_id: str) -> TaskResult | None:
        """The task's result, or None when the variant never ran it."""
        return next((t for t in self.tasks if t.task_id == task_id), None)

    def category(self, task_id: str) -> TaskCategory | None:
        """The task's release category, or None when the variant never ran it."""
        return next((c for c in self.categories if c.task_id == task_id), None)

    def category_counts(self) -> dict[str, int]:
        """Number of tasks per category name."""
        counts: dict[str, int] = {}
        for c in self.categories:
            counts[c.category] = counts.get(c.category, 0) + 1
        return counts


def summarize(
    outcomes: Iterable[Outcome],
    k: int | None = None,
    z: float = Z95,
    rules: CategoryRules | None = None,
) -> dict[str, VariantSummary]:
    """Group outcomes by variant and compute each variant's :class:`VariantSummary`, sorted by variant.

    ``k`` is the pass^k the caller wants as headline; None asks for the largest estimable one. ``z``
    sets every Wilson interval (1.96: 95%). A repeated (variant, task_id, attempt) raises
    ``ValueError``: counting it twice would inflate n.
    """
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    wilson(0, 1, z)  # validates z before any work
    by_variant: dict[str, list[Outcome]] = {}
    seen: set[tuple[str, str, int]] = set()
    for o in outcomes:
        key = (o.variant, o.task_id, o.attempt)
        if key in seen:
            raise ValueError(f"duplicate outcome for variant {o.variant!r}, task {o.task_id!r}, attempt {o.attempt}")
        seen.add(key)
        by_variant.setdefault(o.variant, []).append(o)
    chosen = rules or CategoryRules()
    return {v: _summarize_variant(v, by_variant[v], k, z, chosen) for v in sorted(by_variant)}


def _summarize_variant(
    variant: str, outs: Sequence[Outcome], k: int | None, z: float, rules: CategoryRules
) -> VariantSummary:
    by_task: dict[str, list[Outcome]] = {}
    for o in outs:
        by_task.setdefault(o.task_id, []).append(o)
    tasks = [TaskResult(tid, len(os_), sum(o.passed for o in os_), z) for tid, os_ in sorted(by_task.items())]
    k_cap = min(t.n for t in tasks)
    k_requested = k_cap if k is None else k
    runs = len(outs)
    passes = sum(t.c for t in tasks)
    first_passes = sum(o.first_pass for o in outs)
    latencies = [o.latency_ms for o in outs if math.isfinite(o.latency_ms)]
    # per task pass^j and pass@j for j = 1..k_cap (`pass_k_series`: pass_hat_k's and pass_at_k's floats), then
    # their mean over the tasks; fsum is exactly rounded, so per-task orderings survive the averaging
    series = [pass_k_series(t.c, t.n, k_cap) for t in tasks]
    hat = {j: math.fsum(h[j - 1] for h, _ in series) / len(tasks) for j in range(1, k_cap + 1)}
    at = {j: math.fsum(a[j - 1] for _, a in series) / len(tasks) for j in range(1, k_cap + 1)}
    categories = [_categorize(t, by_task[t.task_id], rules) for t in tasks]
    worst = _worst(tasks, categories, outs)
    costs = [o.cost for o in outs if o.cost is not None]
    total_cost = math.fsum(costs)
    return VariantSummary(
        variant=variant,
        runs=runs,
        passes=passes,
        pass_at_1=hat[1],
        pooled_rate=passes / runs,
        wilson=wilson(passes, runs, z),
        k_requested=k_requested,
        k_cap=k_cap,
        k=min(k_requested, k_cap),
        pass_hat_k=hat,
        pass_at_k=at,
        tasks=tasks,
        worst_task=worst[0],
        worst_tied=tuple(t.task_id for t in worst[1:]),
        first_passes=first_passes,
        first_success_rate=first_passes / runs,
        final_success_rate=passes / runs,
        avg_retries=sum(o.retries for o in outs) / runs,
        handoffs=sum(o.handoff for o in outs),
        errors=sum(o.error is not None for o in outs),
        latency_n=len(latencies),
        p50_latency_ms=percentile(latencies, 0.50),
        p95_latency_ms=percentile(latencies, 0.95),
        avg_cost=total_cost / len(costs) if costs else math.nan,
        tokens=sum(o.tokens for o in outs),
        z=z,
        first_success_wilson=wilson(first_passes, runs, z),
        handoffs_correct=sum(o.handoff and o.handoff_expected is True for o in outs),
        handoffs_wrong=sum(o.handoff and o.handoff_expected is False for o in outs),
        handoffs_missed=sum(not o.handoff and o.handoff_expected is True for o in outs),
        categories=categories,
        hazard_attempts=_hazard_attempts(outs),
        total_cost=total_cost,
        cost_known=len(costs),
    )


def _worst(
    tasks: Sequence[TaskResult], categories: Sequence[TaskCategory], outs: Sequence[Outcome]
) -> list[TaskResult]:
    """The tasks at the lowest pass rate, the one to show first: the most severe release category (a task
    that must not ship before a harmless canary at the same rate), then the most hazardous attempts,
    then the task id. Exact fractions, so that 1/3 and 2/6 tie."""
    severity = {c.task_id: CATEGORIES.index(c.category) for c in categories}
    hazardous = Counter(o.task_id for o in outs if o.hazards)
    lowest = min(Fraction(t.c, t.n) for t in tasks)
    tied = [t for t in tasks if Fraction(t.c, t.n) == lowest]
    return sorted(tied, key=lambda t: (-severity.get(t.task_id, 0), -hazardous[t.task_id], t.task_id))


def _categorize(task: TaskResult, outs: Sequence[Outcome], rules: CategoryRules) -> TaskCategory:
    ordered = sorted(outs, key=lambda o: o.attempt)
    hazards = [(o.attempt, o.hazards) for o in ordered if o.hazards]
    cautions = [(o.attempt, o.cautions) for o in ordered if o.cautions]
    # The first attempt that names a risk speaks for the task: the risk is the task's, not the attempt's.
    risk = next((o.risk for o in ordered if o.risk), None)
    return categorize(task.task_id, task.n, task.c, hazards, risk, rules, cautions)


def _hazard_attempts(outs: Sequence[Outcome]) -> dict[str, int]:
    kinds = [*HAZARD_KINDS, *sorted({h.kind for o in outs for h in o.hazards} - set(HAZARD_KINDS))]
    counts = {kind: sum(any(h.kind == kind for h in o.hazards) for o in outs) for kind in kinds}
    return {kind: count for kind, count in counts.items() if count}
