"""Harness runs in the lake: which attempts of a run are done (to resume it), the cases it kept, and
scoring a finished run."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from tracevals.lake.lake import Lake
from tracevals.lake.run_cases import RunCasesConflict, all_run_cases, as_bytes, read_run_cases
from tracevals.model.attempt import AttemptKey
from tracevals.model.case import Case
from tracevals.model.quoting import command_line
from tracevals.model.score import Score
from tracevals.model.tasks import cases_from_bytes
from tracevals.model.trajectory import Trajectory
from tracevals.queries import open_lake
from tracevals.queries.selection import Selection
from tracevals.scoring.offline import score_lake


@dataclass(frozen=True)
class RunScores:
    trajectories: list[Trajectory]  # the run's attempts, in (variant, task, attempt, trace) order
    scores: list[Score]


def score_run(lake: Lake, run_id: str, cases: Sequence[Case], *, write: bool = True) -> RunScores:
    """Score every attempt of `run_id` against `cases` and append the scores to the lake."""
    run = score_lake(lake, tasks=cases, selection=Selection(runs=(run_id,)), write=write, keep_batch=True)
    return RunScores(trajectories=run.trajectories(), scores=run.score_objects())


def completed_attempts(lake: Lake, run_id: str) -> set[AttemptKey]:
    """(variant, task_id, attempt) of every attempt of `run_id` whose root span ended.

    An attempt killed mid-way has no ended root span (its children may be there): it is not done,
    and the resumed run repeats it.
    """
    if not lake.has_spans():
        return set()
    con = open_lake(lake, views=("runs",))  # a lake on object storage too: a resumed run there skips as much
    rows = con.execute(
        "SELECT DISTINCT variant, task_id, attempt FROM runs WHERE run_id = ? AND end_time IS NOT NULL",
        [run_id],
    ).fetchall()
    return {(str(v), str(t), int(a)) for v, t, a in rows}


@dataclass(frozen=True)
class KeptCases:
    """The cases some runs kept in the lake (merged by case id), and the runs that kept none."""

    cases: list[Case]
    sha256: dict[str, str]  # run id -> sha256 of the task file it ran
    without: list[str]  # runs that kept no cases (pytest runs, runs from before tracevals kept them)


def kept_cases(lake: Lake, run_ids: Sequence[str] | None = None) -> KeptCases:
    """The cases the runs `run_ids` (default: every run that kept some) ran, as `tracevals run` kept them
    with each run; a case id two runs define differently raises `RunCasesConflict` (one line)."""
    kept = {r.run_id: r for r in all_run_cases(lake)} if run_ids is None else {}
    for run_id in run_ids or ():
        found = read_run_cases(lake, run_id)
        if found is not None:
            kept[run_id] = found
    cases: dict[str, tuple[Case, str]] = {}
    parsed: dict[str, list[Case]] = {}  # by text: runs of one task file read (and validated) once
    for run_id, run in sorted(kept.items()):
        if run.text not in parsed:
            where = f"{run.source} (kept with run {run_id})"
            parsed[run.text] = cases_from_bytes(as_bytes(run.text), where, schema_checked=run.checked)
        for case in parsed[run.text]:
            seen = cases.get(case.case_id)
            if seen is not None and seen[0].raw != case.raw:
                raise RunCasesConflict(
                    f"case {case.case_id!r} differs between run {seen[1]} and run {run_id}: report them one "
                    "at a time (--run), or pass the task file to score both against (--tasks)"
                )
            cases.setdefault(case.case_id, (case, run_id))
    without = sorted(set(run_ids or ()) - set(kept))
    return KeptCases([c for c, _ in cases.values()], {r: k.sha256 for r, k in kept.items()}, without)


COMPACT_WAIT_S = 600.0  # how long the end-of-run merge waits for another compaction of the lake


def compact_run(lake: Lake, started: float) -> str | None:
    """Merge the files a finished run wrote (one per attempt, so that a crash loses at most the attempts
    in flight) into one per hour: every later command reads a few files, not thousands. The hours since
    `started` only, the running one included; files other writers add meanwhile are left for the next
    compaction. Returns a warning when it could not (the run's files stay as they were: nothing is lost)."""
    from tracevals.lake.compact import CompactError, compact
    from tracevals.queries.derived_write import derive_or_warn

    # the hours since the run started, the running one included (an hour that ends within the next hour):
    # no hour a skewed clock put later
    since, now, min_age = started - 3600.0, time.time(), -3600.0
    derived: list[str] = []

    def derive() -> None:
        # The hours merged get their derived frames (`queries.derived`) under the same lock: the run's report
        # (and every later `score`, `report`, `gate`) reads its attempts from them instead of rebuilding them
        # through the views. They are keyed by the hour's files, so a file another writer adds to the hour
        # later makes readers use the views for it again, as for an open hour. Only an hour a small lake's
        # snapshot would take (TRACEVALS_SNAPSHOT_MB): a run beside production traffic does not wait for the
        # traffic's frames (`tracevals compact` writes them).
        _, warning = derive_or_warn(lake, now - min_age, since, small_only=True)
        derived.extend([warning] if warning else [])

    try:  # a lake on object storage too: the merged object is one PUT, the attempts' files deleted after it
        # another run ending at the same time compacts the same hours: wait for it rather than leave them
        result = compact(lake, min_age_s=min_age, since=since, now=now, wait_s=COMPACT_WAIT_S, then=derive)
    except (CompactError, OSError) as exc:
        again = command_line("tracevals", "compact", "--lake", str(lake))
        return f"the run's files were not merged ({exc}); run `{again}` later"
    errors = [p.error for p in result.partitions if p.error]
    if errors:
        return f"the run's files were not all merged: {errors[0]}"
    return derived[0] if derived else None
