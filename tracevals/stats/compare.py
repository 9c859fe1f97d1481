"""Baseline against candidate, task by task: deltas sorted regressions first, and an exact sign test."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from tracevals.stats.estimators import pass_hat_k, sign_test
from tracevals.stats.summary import TaskResult, VariantSummary

__all__ = ["ALPHA", "Comparison", "TaskDelta", "compare"]

ALPHA = 0.05


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
