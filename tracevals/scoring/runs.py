"""After a harness run: score its attempts (by the one scoring path) and store the scores."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from tracevals.model.case import Case
from tracevals.model.score import Score
from tracevals.model.trajectory import Trajectory
from tracevals.queries.selection import Selection
from tracevals.scoring.offline import score_lake


@dataclass(frozen=True)
class RunScores:
    trajectories: list[Trajectory]  # the run's attempts, in (variant, task, attempt, trace) order
    scores: list[Score]


def score_run(lake: str | os.PathLike[str], run_id: str, cases: Sequence[Case], *, write: bool = True) -> RunScores:
    """Score every attempt of `run_id` against `cases` and append the scores to the lake."""
    run = score_lake(lake, tasks=cases, selection=Selection(runs=(run_id,)), write=write, keep_batch=True)
    return RunScores(trajectories=run.trajectories(), scores=run.score_objects())
