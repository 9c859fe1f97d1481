"""Scoring a batch: every evaluator over every trajectory, and the per-attempt verdict.

Example::

    cases = {c.case_id: c for c in load_cases("tasks.jsonl")}
    scores = evaluate_all(trajectories, cases)
    ok = attempt_passed([s for s in scores if s.trace_id == trajectory.trace_id])
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from tracevals.evaluators.evaluator import Evaluator, make_score
from tracevals.evaluators.registry import default_evaluators
from tracevals.model.case import Case
from tracevals.model.findings import EVALUATOR_ERROR
from tracevals.model.score import Score
from tracevals.model.trajectory import Trajectory

logger = logging.getLogger(__name__)


def evaluate_all(
    trajectories: Iterable[Trajectory],
    cases_by_id: Mapping[str, Case],
    evaluators: Sequence[Evaluator] | None = None,
) -> list[Score]:
    """Run each evaluator (default: the built-ins) on each trajectory, with the case named by its
    `task_id` (None when it has none or the id is unknown); not-applicable results are left out.

    An evaluator that raises does not stop the run: it yields a failed score whose reason names the error.
    """
    chosen = default_evaluators() if evaluators is None else list(evaluators)
    scores: list[Score] = []
    for trajectory in trajectories:
        case = cases_by_id.get(trajectory.task_id) if trajectory.task_id is not None else None
        for evaluator in chosen:
            score = evaluate_safely(evaluator, trajectory, case)
            if score is not None:
                scores.append(score)
    return scores


def attempt_passed(scores: Iterable[Score]) -> bool:
    """Whether an attempt passed: every applicable score of it passed (no scores: nothing failed)."""
    return all(score.passed for score in scores)


def evaluate_safely(evaluator: Evaluator, trajectory: Trajectory, case: Case | None) -> Score | None:
    try:
        return evaluator.evaluate(trajectory, case)
    except Exception as exc:  # a bug in one evaluator must not lose the other scores of the run
        logger.warning("tracevals: evaluator %s raised on trace %s: %r", evaluator.name, trajectory.trace_id, exc)
        reason = f"evaluator raised {type(exc).__name__}: {exc}"
        return make_score(
            evaluator, trajectory, passed=False, score=0.0, reason=reason, details={"error": reason},
            findings=[EVALUATOR_ERROR(reason, evidence={"error": type(exc).__name__})],
        )  # fmt: skip
