"""Scoring a lake a group of whole sessions at a time (`selection.plan_groups`): memory follows the group,
not the lake, and the rows are those of one pass over the whole lake. The local engine's way through a
big lake (`offline.score_job`), on this process or on `workers` processes at once.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TypeVar

import duckdb
import polars as pl

from tracevals.evaluators.evaluator import Evaluator
from tracevals.lake.paths import LakeError
from tracevals.lake.writer import LakeFile
from tracevals.model.batch import Batch
from tracevals.model.score import SCORE_FRAME_SCHEMA
from tracevals.model.signals import temporary_folder
from tracevals.queries import open_lake
from tracevals.queries.binding import default_memory_limit, without_default_limit
from tracevals.queries.connection import define_views
from tracevals.queries.derived import HourFiles, derived_chunks, take_derived
from tracevals.queries.groups import Group, GroupPlan, find_crossing, read_group, release_group
from tracevals.queries.interrupts import check as check_interrupt
from tracevals.queries.interrupts import install as install_interrupts
from tracevals.queries.selection import Selection, restrict_to, selected_traces, selects_all
from tracevals.queries.trajectories import LOADER_VIEWS
from tracevals.scoring.job import ScoringJob
from tracevals.scoring.offline import combine, loaded_chunks, score_connection
from tracevals.scoring.results import ScoringRun, tally, with_sample
from tracevals.scoring.store import write_score_frames

# Sessions of a group rebuilt and scored at once (the group's rows are read once, into memory): the
# evaluators' frames and objects follow this, DuckDB's tables the group. Fewer hold less and pay each
# chunk's fixed cost (the screens' queries) more often: measured by hand with one worker at 10^7 spans
# (hours of 56,000 sessions), 15,000 peaked at 628-643 MiB RSS, 8,000 at 503-528 MiB for the same CPU,
# 5,000 at 453 MiB for 24% more CPU; at 10^6 spans 8,000 costs about 5% more CPU than 15,000 and 70 MiB less.
GROUP_CHUNK_SESSIONS = 8_000


@dataclass(frozen=True)
class _Job:
    """What every group is scored with (sent once to each worker process): the job without its sinks,
    priced, its evaluators resolved."""

    scoring: ScoringJob
    evaluators: tuple[Evaluator, ...]
    keep: bool  # return each group's score rows (and root spans) to the caller
    chunk_sessions: int = GROUP_CHUNK_SESSIONS

    @property
    def memory_limit(self) -> str | None:
        return self.scoring.memory_limit


@dataclass(frozen=True)
class _Scored:
    """One group's results."""

    traces: int
    sessions: int
    tallies: pl.DataFrame
    scores: pl.DataFrame | None
    root_spans: dict[str, str]
    written: LakeFile | None
    batch: Batch | None = None


# The views a group's connection defines: what `load_batch` and `select_sessions` read.
GROUP_VIEWS = LOADER_VIEWS


_T = TypeVar("_T")


# DuckDB's memory_limit on a group's connection unless one is given: the memory of the work beyond the tables
# the connection holds (the group's rows, copied once: `binding.default_memory_limit`; the crossing pass,
# which holds none, has it as a fixed limit); beyond it the work spills to a temporary directory, so that a
# group read from big files (an hour in one file of half a million rows) stays within bounds. A table the
# group computes that runs out of it is computed again without it (`binding.computed`); a group that still
# runs out is scored again without it.
GROUP_MEMORY = "160MB"


# What a group's connection defines at first: what selecting sessions and finding the derived ones read.
# The loader's views (GROUP_VIEWS) are defined once a group has sessions to rebuild: before its files are
# bound when none of its hours is derived, else for its rest (`_derived_and_rest`). A connection whose
# groups are all derived never pays for binding them.
SELECT_VIEWS = ("spans",)


def _group_connection(job: _Job, threads: int | None, workdir: str) -> duckdb.DuckDBPyConnection:
    lake = job.scoring.lake
    con = open_lake(
        lake, read_spans=False, views=SELECT_VIEWS, materialize=False, memory_limit=job.memory_limit, threads=threads
    )
    if job.memory_limit is None:  # a view's table that needs more runs again without it (`computed`)
        default_memory_limit(con, GROUP_MEMORY)
    con.execute("SET temp_directory = ?", [workdir])  # where a memory_limit spills (not `.tmp` in the cwd)
    con.execute("SET enable_progress_bar = false")  # a group's queries are short, and a bar per worker is noise
    return con


def _beyond_default_memory(memory_limit: str | None, run: Callable[[str | None], _T]) -> _T:
    """`run(limit)` within the caller's `memory_limit`, else within `GROUP_MEMORY`; one that runs out of the
    default limit runs again without any (DuckDB's default: most of the machine's memory). The caller's own
    limit holds."""
    try:
        return run(memory_limit or GROUP_MEMORY)
    except duckdb.OutOfMemoryException:
        if memory_limit is not None:
            raise
    return run(None)


def _score_group(con: duckdb.DuckDBPyConnection, plan: GroupPlan, group: Group, job: _Job) -> _Scored:
    """Select, rebuild, score and write one group's sessions on `con` (a `_group_connection`, opened within
    the limit), without a limit when the default one is not enough."""

    def run(limit: str | None) -> _Scored:
        if limit is not None:
            return _score_group_once(con, plan, group, job)
        with without_default_limit(con):
            return _score_group_once(con, plan, group, job)

    return _beyond_default_memory(job.memory_limit, run)


def _score_group_once(con: duckdb.DuckDBPyConnection, plan: GroupPlan, group: Group, job: _Job) -> _Scored:
    scoring = job.scoring
    whole = scoring.selection is None or scoring.selection == Selection()  # every session: nothing to select
    usable = _usable(plan, group)
    if not usable:  # rebuilt through the views: bind them while the raw relations read no file (~10x quicker)
        define_views(con, GROUP_VIEWS)
    read_group(con, plan, group, copy=whole and not usable)  # with derived hours, only the rest is copied
    parts: list[ScoringRun] = []
    tallies: list[pl.DataFrame] = []

    def scored(runs: Iterator[ScoringRun]) -> Iterator[pl.DataFrame]:
        """Each part's rows as it is scored (a big group holds one part's at a time), counted and kept."""
        for run in runs:
            check_interrupt()
            tallies.append(tally(run.scores))
            parts.append(run if job.keep else replace(run, scores=run.scores.clear(), root_spans={}))
            scores = run.scores
            del run
            yield scores
            del scores  # not held while the next part is scored

    try:
        runs = _derived_and_rest(con, usable, job) if usable else iter([_through_views(con, job, select=not whole)])
        if scoring.write:  # one file, written part by part, that appears once the group is done (or never)
            written = write_score_frames(scoring.lake, scored(runs))
        else:
            written = None
            for scores in scored(runs):
                del scores
    finally:
        release_group(con)
    run = combine(parts)
    summed = (
        pl.concat(tallies, how="vertical").group_by("evaluator", maintain_order=True).sum()
        if tallies
        else tally(run.scores)
    )
    kept = run.scores if job.keep else None
    return _Scored(run.traces, run.sessions, summed, kept, run.root_spans, written, run.batch)


def _through_views(con: duckdb.DuckDBPyConnection, job: _Job, select: bool) -> ScoringRun:
    """The group's sessions rebuilt through the views (defined: `define_views`): the job's selection of them, or
    (select False) all, the attempts of the selection's runs only either way (`Selection.trace_condition`)."""
    scoring = job.scoring
    return score_connection(
        con,
        tasks=scoring.tasks,
        config=scoring.config,
        evaluators=job.evaluators,
        selection=scoring.selection if select else None,
        where=scoring.selection.trace_condition() if scoring.selection is not None else "",
        keep_batch=scoring.keep_batch,
        chunk_sessions=job.chunk_sessions,
        copy_chunks=False,
    )


def _usable(plan: GroupPlan, group: Group) -> list[HourFiles]:
    """The derived hours whose frames hold the rows of `group`'s sessions (none for a crossing group). A
    selection of runs or traces chooses whole sessions as any other does (`selection.selected_traces`, from
    `spans` alone); the attempts of its runs are kept of them (`_of_runs`), as the views' loader keeps them.

    That is an hour all of whose files the group reads; or, once the crossing pass has run (more than one
    block), any hour of whose files the group reads one: every session of a block of files lies wholly in
    its files (a session that does not is a crossing group's), so a session of the group that lies in one
    hour has all of its rows among that hour's files, from which its frames were computed. An hour cut
    between two blocks (an hour of many files, or of big ones) is read from its frames by both."""
    if group.crossing:
        return []
    names = set(group.spans) | set(group.logs)
    if plan.blocks > 1:
        return [h for h in plan.derived.values() if names.intersection(h.spans) or names.intersection(h.logs)]
    return [h for h in plan.derived.values() if set(h.spans) <= names and set(h.logs) <= names]


def _derived_and_rest(con: duckdb.DuckDBPyConnection, usable: list[HourFiles], job: _Job) -> Iterator[ScoringRun]:
    """The group's (selected) sessions that lie wholly in one of the closed hours `usable` scored from their
    derived frames (`queries.derived`), a chunk of sessions at a time, then the others rebuilt through the
    views, restricted to them: each part's run as it is scored."""
    scoring = job.scoring
    selection = scoring.selection if scoring.selection != Selection() else None
    if selection is not None and selects_all(con, selection):
        selection = None  # every session of the group's files is selected: no pass to select them

    def sampled(run: ScoringRun) -> ScoringRun:
        if selection is None or selection.fraction is None:
            return run
        return replace(run, scores=with_sample(run.scores, selection.fraction, selection.seed))

    if selection is not None:
        selected_traces(con, selection)
    taken = take_derived(con, usable, None if selection is None else "tv_traces")
    if taken.height:
        # the frames a chunk of sessions at a time, from their row groups: never an hour's frames whole
        parts = _of_runs(derived_chunks(scoring.lake, usable, taken, job.chunk_sessions), scoring.selection)
        del taken
        yield from map(
            sampled,
            loaded_chunks(
                parts,
                tasks=scoring.tasks,
                config=scoring.config,
                evaluators=job.evaluators,
                chunk_sessions=job.chunk_sessions,
                keep_batch=scoring.keep_batch,
            ),
        )
    if _count(con, "tv_rest"):
        define_views(con, GROUP_VIEWS)  # bound now, over the group's (few) files
        rest = restrict_to(con, "tv_rest")
        try:
            rebuilt = _through_views(con, job, select=False)
        finally:
            rest.undo()
        yield sampled(rebuilt)


def _of_runs(batches: Iterator[Batch], selection: Selection | None) -> Iterator[Batch]:
    """Of each batch of whole sessions, the attempts of the selection's runs (all when it names none): what the
    views' loader keeps of the sessions it selects (`load_batch`'s `Selection.trace_condition`)."""
    runs = list(selection.runs) if selection is not None else []
    for batch in batches:
        yield batch.select(batch.traces.filter(pl.col("run_id").is_in(runs)).get_column("trace_id")) if runs else batch


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    [(count,)] = con.execute(f"SELECT count(*) FROM {table}").fetchall()
    return int(count)


def score_groups(plan: GroupPlan, scoring: ScoringJob) -> ScoringRun:
    """Score `scoring` a group of whole sessions at a time (`plan`): each group selected, rebuilt, scored,
    written and handed to the sinks, then released; `workers` groups at once, each in a process of its own
    (keep_batch: on this process)."""
    sinks, keep_scores = scoring.sinks, scoring.keep_scores
    job = _Job(scoring.without_sinks(), tuple(scoring.chosen()), keep_scores or bool(sinks))
    workers = 1 if scoring.keep_batch else scoring.workers
    frames: list[pl.DataFrame] = []
    batches: list[Batch] = []
    tallies: list[pl.DataFrame] = []
    roots: dict[str, str] = {}
    files: list[LakeFile] = []
    traces = sessions = groups = 0
    with temporary_folder("tracevals-score-") as work:
        for done, (scored, groups) in enumerate(_groups_scored(plan, job, workers, str(work)), 1):
            traces += scored.traces
            sessions += scored.sessions
            tallies.append(scored.tallies)
            if scored.written is not None:
                files.append(scored.written)
            if scored.batch is not None:
                batches.append(scored.batch)
            if scored.scores is not None:
                for sink in sinks:
                    sink(scored.scores, scored.root_spans)
                if keep_scores:
                    frames.append(scored.scores)
                    roots.update(scored.root_spans)
            if scoring.progress is not None:
                scoring.progress(done, groups)
    scores = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=SCORE_FRAME_SCHEMA)
    summed = pl.concat(tallies, how="vertical").group_by("evaluator", maintain_order=True).sum()
    return ScoringRun(
        scores,
        traces,
        sessions,
        written=files[-1] if files else None,
        root_spans=roots,
        tallies=None if keep_scores else summed,
        batch=Batch.concat(batches) if scoring.keep_batch else None,
        files=tuple(files),
        groups=groups or len(plan.groups),  # those scored (with the crossing sessions' group a worker found)
    )


def _groups_scored(plan: GroupPlan, job: _Job, workers: int, work: str) -> Iterator[tuple[_Scored, int]]:
    """Each group's results, in group order, with how many groups there are (the crossing sessions' group is
    known once their pass is done): on this process, or on `workers` processes at once."""
    workers = min(workers, len(plan.groups) + 1)  # the crossing groups are known once the pass is done
    if workers > 1 and not _picklable(job):
        workers = 1  # a custom evaluator or checker that cannot travel to another process: score here
    if workers <= 1 or len(plan.groups) == 1:
        _find_bounded(plan, work, job.memory_limit)
        con = _group_connection(job, None, work)
        try:
            for group in plan.groups:
                yield _score_group(con, plan, group, job), len(plan.groups)
        finally:
            con.close()
        return
    with _pool(workers, job, work) as pool:
        # the crossing sessions are found by a worker (this process stays small: it only collects counts)
        plan = pool.submit(_find_in_worker, plan, work, job.memory_limit).result()
        light = replace(plan, groups=[])  # what a worker needs besides its group: the lake, the crossing list
        futures: list[Future[_Scored]] = [pool.submit(_run_in_worker, light, group) for group in plan.groups]
        try:
            for future in futures:
                yield future.result(), len(futures)
        except BrokenProcessPool:
            raise LakeError(
                "a worker process of `tracevals score` died: each needs memory for one group of sessions (lower "
                "--workers, or --memory-limit); a script that scores with workers > 1 must do so under "
                '`if __name__ == "__main__":` (worker processes import it again)'
            ) from None


def _picklable(job: _Job) -> bool:
    try:
        pickle.dumps(job)
    except (pickle.PicklingError, TypeError, AttributeError):
        return False
    return True


@contextmanager
def _pool(workers: int, job: _Job, work: str) -> Iterator[ProcessPoolExecutor]:
    """`workers` processes, started now, each with one DuckDB and one Polars thread."""
    before = os.environ.get("POLARS_MAX_THREADS")
    os.environ["POLARS_MAX_THREADS"] = "1"  # read by each worker as it starts (the environment it inherits)
    pool = ProcessPoolExecutor(workers, multiprocessing.get_context("spawn"), _start_worker, (job, work))
    try:
        for _ in range(workers):
            pool.submit(_ready)  # each submit starts a process (with the environment above)
    finally:
        if before is None:
            os.environ.pop("POLARS_MAX_THREADS", None)
        else:
            os.environ["POLARS_MAX_THREADS"] = before
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# A worker process's job and its own connection (one DuckDB thread), set up once by _start_worker.
_WORKER: dict[str, object] = {}


def _start_worker(job: _Job, work: str) -> None:
    install_interrupts()  # Ctrl-C (sent to the whole process group) stops a worker's query too
    _WORKER["job"] = job
    _WORKER["con"] = _group_connection(job, 1, work)


def _ready() -> None:
    """A task that only makes the pool start a worker."""


def _find_in_worker(plan: GroupPlan, work: str, memory_limit: str | None) -> GroupPlan:
    _find_bounded(plan, work, memory_limit, threads=2)  # the other workers wait for it
    return plan


def _find_bounded(plan: GroupPlan, work: str, memory_limit: str | None, threads: int | None = None) -> None:
    """The crossing pass, within the limit a group has (its tables of every trace id of the lake grow with
    the lake: 1.3 million traces at 10^7 spans ran out of `GROUP_MEMORY`)."""
    _beyond_default_memory(memory_limit, lambda limit: find_crossing(plan, work, limit, threads=threads))


def _run_in_worker(plan: GroupPlan, group: Group) -> _Scored:
    con, job = _WORKER["con"], _WORKER["job"]
    assert isinstance(con, duckdb.DuckDBPyConnection) and isinstance(job, _Job)
    return _score_group(con, plan, group, job)
