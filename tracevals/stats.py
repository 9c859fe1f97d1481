"""Reliability statistics: pass@1, pass^k, pass@k, Wilson intervals, worst task, paired comparison.

Pure functions over plain values, standard library only, so the same code scores a CI run, a nightly
sample or a distributed batch. Rates are computed from exact integer ratios (``math.comb`` and
``fractions.Fraction``) before they become floats: this keeps the orderings the metrics promise
(pass^k <= pass@1 <= pass@k, pass^k never rising with k) exact rather than "true up to rounding".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

__all__ = [
    "Comparison",
    "Outcome",
    "TaskDelta",
    "TaskResult",
    "VariantSummary",
    "compare",
    "pass_at_k",
    "pass_hat_k",
    "percentile",
    "sign_test",
    "summarize",
    "wilson",
]

ALPHA = 0.05


def wilson(c: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for ``c`` successes in ``n`` trials (95% for the default ``z``).

    Unlike the normal approximation it stays inside [0, 1] and is sensible at 0/n and n/n, which is
    where small agent evals live. ``n == 0`` carries no evidence and returns ``(0.0, 1.0)``.
    """
    _check_counts(c, n)
    if n == 0:
        return (0.0, 1.0)
    p = c / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    # At 0/n and n/n the bound is exactly 0 or 1 (centre == half); pin it instead of keeping float noise.
    lo = 0.0 if c == 0 else max(0.0, centre - half)
    hi = 1.0 if c == n else min(1.0, centre + half)
    return (lo, hi)


def pass_hat_k(c: int, n: int, k: int) -> float:
    """pass^k of one task: probability that k attempts drawn without replacement from n all pass.

    Unbiased estimator C(c, k) / C(n, k). NaN when ``n < k``: there are not k attempts to draw.
    """
    _check_k(c, n, k)
    if n < k:
        return math.nan
    # int / int is correctly rounded in Python, so the float inherits the exact ordering.
    return math.comb(c, k) / math.comb(n, k)


def pass_at_k(c: int, n: int, k: int) -> float:
    """pass@k of one task: probability that at least one of k attempts (of n, c passing) passes.

    Unbiased estimator 1 - C(n - c, k) / C(n, k). NaN when ``n < k``.
    """
    _check_k(c, n, k)
    if n < k:
        return math.nan
    total = math.comb(n, k)
    # One exact division instead of 1 - x, so pass@1 equals c / n bit for bit.
    return (total - math.comb(n - c, k)) / total


def percentile(values: Iterable[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default) of the finite values; NaN if there are none."""
    xs = sorted(v for v in values if math.isfinite(v))
    if not xs:
        return math.nan
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def sign_test(improved: int, regressed: int) -> float:
    """Exact two-sided sign test p-value (binomial, p = 0.5) over the tasks whose rate changed."""
    n = improved + regressed
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(improved, regressed) + 1))
    return min(1.0, 2 * tail / 2**n)


@dataclass(frozen=True)
class Outcome:
    """One attempt of one task under one variant, as scored from its trace.

    ``first_pass`` means it passed with no retry; ``passed`` is the final verdict after retries.
    """

    variant: str
    task_id: str
    attempt: int
    passed: bool
    first_pass: bool
    retries: int = 0
    handoff: bool = False
    latency_ms: float = math.nan
    cost: float = 0.0
    tokens: int = 0
    error: str | None = None

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

    def __post_init__(self) -> None:
        _check_counts(self.c, self.n)

    @property
    def rate(self) -> float:
        """Pass rate c / n of this task."""
        return self.c / self.n if self.n else math.nan

    @property
    def wilson(self) -> tuple[float, float]:
        """95% Wilson interval of this task's pass rate."""
        return wilson(self.c, self.n)


@dataclass(frozen=True)
class VariantSummary:
    """All reliability figures of one variant. Run-level figures have ``runs`` as their sample size.

    ``pass_at_1`` is the mean over tasks of each task's c / n (every task weighs the same); it equals the
    pooled rate ``passes / runs`` only when every task has the same n. The pooled rate and its Wilson
    interval are kept separately. ``pass_hat_k`` / ``pass_at_k`` map k = 1..``k_cap`` to the task mean,
    where ``k_cap`` is the smallest per-task n (larger k cannot be estimated for every task); ``k`` is the
    headline value, ``min(k_requested, k_cap)``.
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
    worst_task: TaskResult
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


def summarize(outcomes: Iterable[Outcome], k: int | None = None) -> dict[str, VariantSummary]:
    """Group outcomes by variant and compute each variant's :class:`VariantSummary`, sorted by variant.

    ``k`` is the pass^k the caller wants as headline; None asks for the largest estimable one. A
    repeated (variant, task_id, attempt) raises ``ValueError``: counting it twice would inflate n.
    """
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    by_variant: dict[str, list[Outcome]] = {}
    seen: set[tuple[str, str, int]] = set()
    for o in outcomes:
        key = (o.variant, o.task_id, o.attempt)
        if key in seen:
            raise ValueError(f"duplicate outcome for variant {o.variant!r}, task {o.task_id!r}, attempt {o.attempt}")
        seen.add(key)
        by_variant.setdefault(o.variant, []).append(o)
    return {v: _summarize_variant(v, by_variant[v], k) for v in sorted(by_variant)}


def _summarize_variant(variant: str, outs: Sequence[Outcome], k: int | None) -> VariantSummary:
    counts: dict[str, list[int]] = {}
    for o in outs:
        nc = counts.setdefault(o.task_id, [0, 0])
        nc[0] += 1
        nc[1] += int(o.passed)
    tasks = [TaskResult(tid, n, c) for tid, (n, c) in sorted(counts.items())]
    k_cap = min(t.n for t in tasks)
    k_requested = k_cap if k is None else k
    runs = len(outs)
    passes = sum(t.c for t in tasks)
    first_passes = sum(o.first_pass for o in outs)
    latencies = [o.latency_ms for o in outs if math.isfinite(o.latency_ms)]
    hat = {j: _task_mean(tasks, j, pass_hat_k) for j in range(1, k_cap + 1)}
    at = {j: _task_mean(tasks, j, pass_at_k) for j in range(1, k_cap + 1)}
    return VariantSummary(
        variant=variant,
        runs=runs,
        passes=passes,
        pass_at_1=hat[1],
        pooled_rate=passes / runs,
        wilson=wilson(passes, runs),
        k_requested=k_requested,
        k_cap=k_cap,
        k=min(k_requested, k_cap),
        pass_hat_k=hat,
        pass_at_k=at,
        tasks=tasks,
        # Exact fractions so that 1/3 and 2/6 tie and the task id decides, deterministically.
        worst_task=min(tasks, key=lambda t: (Fraction(t.c, t.n), t.task_id)),
        first_passes=first_passes,
        first_success_rate=first_passes / runs,
        final_success_rate=passes / runs,
        avg_retries=sum(o.retries for o in outs) / runs,
        handoffs=sum(o.handoff for o in outs),
        errors=sum(o.error is not None for o in outs),
        latency_n=len(latencies),
        p50_latency_ms=percentile(latencies, 0.50),
        p95_latency_ms=percentile(latencies, 0.95),
        avg_cost=math.fsum(o.cost for o in outs) / runs,
        tokens=sum(o.tokens for o in outs),
    )


def _task_mean(tasks: Sequence[TaskResult], k: int, fn: Callable[[int, int, int], float]) -> float:
    # fsum is exactly rounded, so per-task orderings survive the averaging.
    return math.fsum(fn(t.c, t.n, k) for t in tasks) / len(tasks)


@dataclass(frozen=True)
class TaskDelta:
    """One task present in both variants: its counts on each side and the rate change."""

    task_id: str
    baseline_n: int
    baseline_c: int
    candidate_n: int
    candidate_c: int
    baseline_rate: float
    candidate_rate: float
    delta: float
    regression: bool


@dataclass(frozen=True)
class Comparison:
    """Baseline vs candidate, task by task, regressions first, with a sign test over changed tasks."""

    baseline: str
    candidate: str
    deltas: list[TaskDelta]
    only_in_baseline: list[TaskResult]
    only_in_candidate: list[TaskResult]
    improved: int
    regressed: int
    unchanged: int
    p_value: float
    significant: bool
    statement: str
    common_tasks: int
    pass_at_1_delta: float
    k: int
    pass_hat_k_delta: float
    alpha: float = field(default=ALPHA)

    @property
    def regressions(self) -> list[TaskDelta]:
        """Only the tasks whose rate dropped, worst first."""
        return [d for d in self.deltas if d.regression]


def compare(baseline: VariantSummary, candidate: VariantSummary, alpha: float = ALPHA) -> Comparison:
    """Compare two variants per task and state whether the change is significant.

    Each task is a pair (baseline rate, candidate rate); per-task binomial counts are small and their
    n may differ between sides, so the test counts only the direction of each task's change: an exact
    two-sided sign test over tasks that improved or regressed (unchanged tasks carry no direction).
    Tasks present in only one variant are listed, not dropped. The overall deltas are paired means over
    the ``common_tasks`` both ran (task-set changes would otherwise pass as quality changes), pass^k at
    the smaller of the two headline k.
    """
    cand_by_id = {t.task_id: t for t in candidate.tasks}
    base_ids = {t.task_id for t in baseline.tasks}
    k = min(baseline.k, candidate.k)
    rows: list[tuple[Fraction, TaskDelta]] = []
    hat_deltas: list[float] = []
    for b in baseline.tasks:
        c = cand_by_id.get(b.task_id)
        if c is None:
            continue
        # Exact so that 1/3 vs 2/6 counts as unchanged, not as a float-noise regression.
        exact = Fraction(c.c, c.n) - Fraction(b.c, b.n)
        rows.append((exact, TaskDelta(b.task_id, b.n, b.c, c.n, c.c, b.rate, c.rate, float(exact), exact < 0)))
        hat_deltas.append(pass_hat_k(c.c, c.n, k) - pass_hat_k(b.c, b.n, k))
    rows.sort(key=lambda row: (row[0], row[1].task_id))
    deltas = [d for _, d in rows]
    improved = sum(exact > 0 for exact, _ in rows)
    regressed = sum(exact < 0 for exact, _ in rows)
    unchanged = len(rows) - improved - regressed
    p = sign_test(improved, regressed)
    common = len(rows)
    return Comparison(
        baseline=baseline.variant,
        candidate=candidate.variant,
        deltas=deltas,
        only_in_baseline=[t for t in baseline.tasks if t.task_id not in cand_by_id],
        only_in_candidate=[t for t in candidate.tasks if t.task_id not in base_ids],
        improved=improved,
        regressed=regressed,
        unchanged=unchanged,
        p_value=p,
        significant=p < alpha,
        statement=_statement(improved, regressed, unchanged, p, alpha),
        common_tasks=common,
        pass_at_1_delta=math.fsum(d.delta for d in deltas) / common if common else math.nan,
        k=k,
        pass_hat_k_delta=math.fsum(hat_deltas) / common if common else math.nan,
        alpha=alpha,
    )


def _statement(improved: int, regressed: int, unchanged: int, p: float, alpha: float) -> str:
    head = f"{regressed} {_tasks(regressed)} regressed, {improved} improved, {unchanged} unchanged"
    changed = improved + regressed
    if changed == 0:
        return f"{head}; sign test not applicable: no task changed"
    verdict = "significant" if p < alpha else "not significant"
    text = f"{head}; sign test p = {p:.3g}: {verdict} at {alpha:g}"
    # With few changed tasks even a unanimous direction cannot reach alpha; say so rather than imply
    # that "not significant" means "no effect".
    if sign_test(changed, 0) >= alpha:
        text += f" (with only {changed} changed {_tasks(changed)} no result could reach {alpha:g})"
    return text


def _tasks(n: int) -> str:
    return "task" if n == 1 else "tasks"


def _check_counts(c: int, n: int) -> None:
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")


def _check_k(c: int, n: int, k: int) -> None:
    _check_counts(c, n)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
