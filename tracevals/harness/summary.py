"""After a run: score its attempts, store the scores, and summarize them per variant."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tracevals.evaluators import evaluate_all
from tracevals.evaluators.store import write_scores
from tracevals.model.case import Case
from tracevals.model.score import Score
from tracevals.model.trajectory import Trajectory
from tracevals.outcomes import outcomes
from tracevals.queries import open_lake
from tracevals.queries.trajectories import load_trajectories
from tracevals.stats import VariantSummary, summarize


@dataclass(frozen=True)
class RunScores:
    trajectories: list[Trajectory]
    scores: list[Score]
    summaries: dict[str, VariantSummary]


def score_run(
    lake: str | os.PathLike[str],
    run_id: str,
    cases: Sequence[Case],
    k: int | None = None,
    models: Mapping[str, str] | None = None,
) -> RunScores:
    """Score every attempt of `run_id` against `cases`, append the scores to the lake, summarize."""
    con = open_lake(lake)
    trajectories = load_trajectories(con, where=f"run_id = '{_quote(run_id)}'")
    scores = evaluate_all(trajectories, {c.case_id: c for c in cases})
    write_scores(lake, scores)
    summaries = summarize(outcomes(trajectories, scores, models=models), k=k)
    return RunScores(trajectories=trajectories, scores=scores, summaries=summaries)


def _quote(value: str) -> str:
    return value.replace("'", "''")
