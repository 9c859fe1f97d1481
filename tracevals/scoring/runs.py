"""Harness runs in the lake: which attempts of a run are done (to resume it), and scoring a finished run."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from tracevals.model.attempt import AttemptKey
from tracevals.model.case import Case
from tracevals.model.score import Score
from tracevals.model.trajectory import Trajectory
from tracevals.queries import open_lake
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


def completed_attempts(lake: str | os.PathLike[str], run_id: str) -> set[AttemptKey]:
    """(variant, task_id, attempt) of every attempt of `run_id` whose root span ended.

    An attempt killed mid-way has no ended root span (its children may be there): it is not done,
    and the resumed run repeats it.
    """
    if not os.path.isdir(lake):
        return set()
    con = open_lake(lake)
    rows = con.execute(
        "SELECT DISTINCT variant, task_id, attempt FROM runs WHERE run_id = ? AND end_time IS NOT NULL",
        [run_id],
    ).fetchall()
    return {(str(v), str(t), int(a)) for v, t, a in rows}
