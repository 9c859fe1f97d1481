"""Resuming a run: which attempts of a run id are already in the lake, finished."""

from __future__ import annotations

import os

from tracevals.harness.attempts import AttemptKey
from tracevals.queries import open_lake


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
