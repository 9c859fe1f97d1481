"""Score a lake, or a time range, a sample or some runs of it: the one path every command scores by.

`score_lake` opens the lake, selects whole sessions (`tracevals.queries.selection.Selection`), loads
them a chunk at a time as frames (`queries.trajectories.load_batch`), attaches each trace's case
(`scoring.cases.attach_cases`), scores the batch (`evaluators.score_batch`), then stores the rows in
`LAKE/scores/` and emits them as `gen_ai.evaluation.result` events when asked. `tracevals score`,
`run`, `demo` and `report` all score through it (`scoring.runs`, `scoring.lake_data`); `score
--follow` calls `score_connection` on the spans of finished sessions (`scoring.live`).

>>> run = score_lake("lake", tasks=load_cases("tasks.jsonl"), selection=Selection(fraction=0.1, seed=7))
>>> run.scores.group_by("evaluator").agg(pl.col("passed").mean())
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import timedelta

import duckdb
import polars as pl

from tracevals.evaluators.batch_scoring import score_batch
from tracevals.evaluators.evaluator import Evaluator
from tracevals.evaluators.registry import instances
from tracevals.lake.paths import LakeError, lake_prices
from tracevals.lake.writer import LakeFile
from tracevals.model.batch import Batch
from tracevals.model.case import Case
from tracevals.model.score import SCORE_FRAME_SCHEMA, Score, scores_of
from tracevals.model.trajectory import Trajectory
from tracevals.queries import open_lake
from tracevals.queries.selection import (
    GROUP_ROWS,
    Group,
    GroupPlan,
    Selection,
    find_crossing,
    plan_groups,
    read_group,
    release_group,
    select_sessions,
    session_chunks,
)
from tracevals.queries.trajectories import READS, load_batch
from tracevals.scoring.cases import attach_cases
from tracevals.scoring.config import ScoringConfig
from tracevals.scoring.store import write_score_frame

SESSION_MARGIN = timedelta(hours=12)  # sessions longer than this that straddle `since` may be cut
ScoreSink = Callable[[pl.DataFrame, Mapping[str, str]], object]  # (score rows, trace id -> root span id)


@dataclass(frozen=True)
class ScoringRun:
    scores: pl.DataFrame  # one row per (trace, evaluator), `model.score.SCORE_FRAME_SCHEMA` (none: keep_scores=False)
    traces: int
    sessions: int
    written: LakeFile | None = None  # the scores file (the last one, when a lake was scored a group at a time)
    root_spans: dict[str, str] = field(default_factory=dict)  # trace id -> root span id, for events
    batch: Batch | None = None  # the scored traces as frames, when asked for (`keep_batch=True`)
    tallies: pl.DataFrame | None = None  # per evaluator: scores, passed, rated (`passed` not null); None: from `scores`
    files: tuple[LakeFile, ...] = ()  # every scores file written
    groups: int = 1  # groups of whole sessions read one at a time (`selection.plan_groups`)

    @property
    def score_count(self) -> int:
        return self.scores.height if self.tallies is None else int(self.tallies.get_column("scores").sum())

    def summary(self) -> pl.DataFrame:
        """Per evaluator (sorted): scores, passed, pass_rate (the share of the rated that passed, to 4 places)."""
        tallies = self.tallies if self.tallies is not None else _tally(self.scores)
        rate = pl.when(pl.col("rated") > 0).then((pl.col("passed") / pl.col("rated")).round(4))
        return tallies.select("evaluator", "scores", "passed", pass_rate=rate).sort("evaluator")

    def trajectories(self) -> list[Trajectory]:
        """The scored traces as `Trajectory` objects, in (variant, task, attempt, trace) order."""
        if self.batch is None:
            raise ValueError("score with keep_batch=True to keep the scored trajectories")
        ordered = self.batch.traces.sort(["variant", "task_id", "attempt", "trace_id"], nulls_last=False)
        return Batch(ordered, self.batch.calls, self.batch.handoffs).trajectories()

    def score_objects(self) -> list[Score]:
        return scores_of(self.scores)


# Sessions loaded and scored at once: peak memory grows with this, not with the lake (the scale curve in
# bench/RESULTS.md gives the peak per lake size). Scores do not depend on it.
CHUNK_SESSIONS = 100_000


def score_connection(
    con: duckdb.DuckDBPyConnection,
    *,
    tasks: Sequence[Case] | None = None,
    config: ScoringConfig | None = None,
    evaluators: Sequence[Evaluator] | None = None,
    selection: Selection | None = None,
    chunk_sessions: int = CHUNK_SESSIONS,
    keep_batch: bool = False,
    copy_chunks: bool = True,
) -> ScoringRun:
    """Score rows for the selected sessions of an open lake (nothing written), `chunk_sessions` whole
    sessions at a time (copy_chunks=False: a chunk read through a filter on rows already in memory, see
    `selection.session_chunks`)."""
    config = config or ScoringConfig()
    chosen = list(evaluators) if evaluators is not None else instances(config.evaluators)
    restriction = select_sessions(con, selection) if selection is not None else None
    where = selection.trace_condition() if selection is not None else ""
    frames: list[pl.DataFrame] = []
    kept: list[Batch] = []
    traces = sessions = 0
    roots: dict[str, str] = {}
    for _ in session_chunks(con, chunk_sessions, within=restriction, copy=copy_chunks):
        batch = load_batch(con, where, within=restriction)
        frames.append(score_batch(attach_cases(batch, tasks, config), chosen))
        traces += len(batch)
        sessions += batch.traces.select(pl.coalesce("session_id", "trace_id")).n_unique() if len(batch) else 0
        roots.update(batch.traces.select("trace_id", "root_span_id").drop_nulls().iter_rows())
        if keep_batch:
            kept.append(batch)
        del batch
    scores = frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical")
    if selection is not None and selection.fraction is not None:
        scores = with_sample(scores, selection.fraction, selection.seed)
    return ScoringRun(scores, traces, sessions, root_spans=roots, batch=Batch.concat(kept) if keep_batch else None)


def score_lake(
    lake: str | os.PathLike[str],
    *,
    tasks: Sequence[Case] | None = None,
    config: ScoringConfig | None = None,
    evaluators: Sequence[Evaluator] | None = None,
    selection: Selection | None = None,
    write: bool = True,
    sinks: Sequence[ScoreSink] = (),
    keep_batch: bool = False,
    keep_scores: bool = True,
    workers: int = 1,
    max_rows: int = GROUP_ROWS,
    memory_limit: str | None = None,
) -> ScoringRun:
    """Score the selected sessions of `lake`, append the rows to `lake/scores/` (unless `write=False`),
    and hand them to each sink (an `EvaluationEmitter`, a printer ...).

    A local lake is read a group of whole sessions at a time (`selection.plan_groups`: about `max_rows`
    span and log rows each): each group is selected, rebuilt, scored, written (one scores file per group)
    and handed to the sinks, then released, so memory follows the group, not the lake; the rows are those
    of one pass over the whole lake. `workers`: groups scored at once, each in a process of its own with
    one DuckDB thread (memory_limit: each one's DuckDB memory_limit). keep_scores=False: the run keeps
    only counts per evaluator (`ScoringRun.tallies`, `summary()`), not every row (a nightly job over
    millions of sessions). keep_batch=True scores on this process. A lake on object storage, or with files
    outside the `date=/hour=` partitions, is read whole.
    """
    # Partition pruning for the lower bound only, with a margin: a session is in range by its first span,
    # so the partitions before `since` must still show where an earlier-started session began.
    lower = selection.read_from(SESSION_MARGIN) if selection is not None else None
    config = (config or ScoringConfig()).with_prices_beneath(lake_prices(os.fspath(lake)))
    plan = plan_groups(os.fspath(lake), lower, max_rows)
    if plan is not None:
        chosen = list(evaluators) if evaluators is not None else instances(config.evaluators)
        keep = keep_scores or bool(sinks)
        job = _Job(os.fspath(lake), tasks, config, chosen, selection, write, keep, memory_limit, keep_batch)
        return _score_groups(plan, job, sinks, keep_scores, 1 if keep_batch else workers)
    # no snapshot (open_lake's default for a small lake): the views must follow `select_sessions`' restriction
    con = open_lake(lake, since=lower, materialize=False)
    try:
        run = score_connection(
            con, tasks=tasks, config=config, evaluators=evaluators, selection=selection, keep_batch=keep_batch
        )
    finally:
        con.close()
    written = write_score_frame(lake, run.scores) if write else None
    for sink in sinks:
        sink(run.scores, run.root_spans)
    if not keep_scores:
        run = replace(run, scores=pl.DataFrame(schema=SCORE_FRAME_SCHEMA), tallies=_tally(run.scores))
    return replace(run, written=written, files=(written,) if written else ())


# ---------------------------------------------------------------- a group of whole sessions at a time


def _tally(scores: pl.DataFrame) -> pl.DataFrame:
    """Per evaluator (in first-seen order): scores, passed, rated (rows whose `passed` is not null)."""
    return scores.group_by("evaluator", maintain_order=True).agg(
        scores=pl.len().cast(pl.Int64),
        passed=pl.col("passed").sum().cast(pl.Int64),
        rated=pl.col("passed").count().cast(pl.Int64),
    )


# Sessions of a group rebuilt and scored at once (the group's rows are read once, into memory): the
# evaluators' frames and objects follow this, DuckDB's tables the group.
GROUP_CHUNK_SESSIONS = 15_000


@dataclass(frozen=True)
class _Job:
    """What every group is scored with (sent once to each worker process)."""

    lake: str
    tasks: Sequence[Case] | None
    config: ScoringConfig
    evaluators: Sequence[Evaluator]
    selection: Selection | None
    write: bool
    keep: bool  # return each group's score rows (and root spans) to the caller
    memory_limit: str | None = None
    keep_batch: bool = False  # return each group's batch (on this process only)
    chunk_sessions: int = GROUP_CHUNK_SESSIONS


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
GROUP_VIEWS = (*READS, "trajectories", "steps", "span_facts", "spans")


# DuckDB's memory_limit on a group's connection (and the crossing pass) unless one is given: beyond it the
# group's rows and tables spill to a temporary directory, so that a group read from big files (an hour in
# one file of half a million rows) stays within bounds. A group that still runs out is scored again
# without the limit.
GROUP_MEMORY = "160MB"


def _group_connection(job: _Job, threads: int | None, workdir: str) -> duckdb.DuckDBPyConnection:
    limit = job.memory_limit or GROUP_MEMORY
    views = GROUP_VIEWS
    con = open_lake(job.lake, read_spans=False, views=views, materialize=False, memory_limit=limit, threads=threads)
    con.execute("SET temp_directory = ?", [workdir])  # where a memory_limit spills (not `.tmp` in the cwd)
    con.execute("SET enable_progress_bar = false")  # a group's queries are short, and a bar per worker is noise
    return con


def _score_group(con: duckdb.DuckDBPyConnection, plan: GroupPlan, group: Group, job: _Job) -> _Scored:
    """Select, rebuild, score and write one group's sessions on `con` (a `_group_connection`)."""
    try:
        return _score_group_once(con, plan, group, job)
    except duckdb.OutOfMemoryException:
        if job.memory_limit is not None:
            raise  # the caller's own limit
    con.execute("RESET memory_limit")  # DuckDB's default: most of the machine's memory
    try:
        return _score_group_once(con, plan, group, job)
    finally:
        con.execute("SET memory_limit = ?", [GROUP_MEMORY])


def _score_group_once(con: duckdb.DuckDBPyConnection, plan: GroupPlan, group: Group, job: _Job) -> _Scored:
    whole = job.selection is None or job.selection == Selection()  # every session: nothing to select
    read_group(con, plan, group, copy=whole)
    try:
        run = score_connection(
            con,
            tasks=job.tasks,
            config=job.config,
            evaluators=job.evaluators,
            selection=None if whole else job.selection,
            keep_batch=job.keep_batch,
            chunk_sessions=job.chunk_sessions,
            copy_chunks=False,
        )
    finally:
        release_group(con)
    written = write_score_frame(job.lake, run.scores) if job.write else None
    kept = run.scores if job.keep else None
    roots = run.root_spans if job.keep else {}
    return _Scored(run.traces, run.sessions, _tally(run.scores), kept, roots, written, run.batch)


def _score_groups(
    plan: GroupPlan, job: _Job, sinks: Sequence[ScoreSink], keep_scores: bool, workers: int
) -> ScoringRun:
    frames: list[pl.DataFrame] = []
    batches: list[Batch] = []
    tallies: list[pl.DataFrame] = []
    roots: dict[str, str] = {}
    files: list[LakeFile] = []
    traces = sessions = 0
    with tempfile.TemporaryDirectory(prefix="tracevals-score-") as work:
        for scored in _groups_scored(plan, job, workers, work):
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
    scores = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=SCORE_FRAME_SCHEMA)
    tally = pl.concat(tallies, how="vertical").group_by("evaluator", maintain_order=True).sum()
    return ScoringRun(
        scores,
        traces,
        sessions,
        written=files[-1] if files else None,
        root_spans=roots,
        tallies=None if keep_scores else tally,
        batch=Batch.concat(batches) if job.keep_batch else None,
        files=tuple(files),
        groups=len(plan.groups),
    )


def _groups_scored(plan: GroupPlan, job: _Job, workers: int, work: str) -> Iterator[_Scored]:
    """Each group's results, in group order: on this process, or on `workers` processes at once."""
    workers = min(workers, len(plan.groups) + 1)  # the crossing groups are known once the pass is done
    if workers > 1 and not _picklable(job):
        workers = 1  # a custom evaluator or checker that cannot travel to another process: score here
    if workers <= 1 or len(plan.groups) == 1:
        find_crossing(plan, work, job.memory_limit or GROUP_MEMORY)
        con = _group_connection(job, None, work)
        try:
            for group in plan.groups:
                yield _score_group(con, plan, group, job)
        finally:
            con.close()
        return
    with _pool(workers, job, work) as pool:
        # the crossing sessions are found by a worker (this process stays small: it only collects counts)
        plan = pool.submit(_find_in_worker, plan, work, job.memory_limit or GROUP_MEMORY).result()
        light = replace(plan, groups=[])  # what a worker needs besides its group: the lake, the crossing list
        futures: list[Future[_Scored]] = [pool.submit(_run_in_worker, light, group) for group in plan.groups]
        try:
            for future in futures:
                yield future.result()
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
    _WORKER["job"] = job
    _WORKER["con"] = _group_connection(job, 1, work)


def _ready() -> None:
    """A task that only makes the pool start a worker."""


def _find_in_worker(plan: GroupPlan, work: str, memory_limit: str) -> GroupPlan:
    find_crossing(plan, work, memory_limit, threads=2)  # the other workers wait for it
    return plan


def _run_in_worker(plan: GroupPlan, group: Group) -> _Scored:
    con, job = _WORKER["con"], _WORKER["job"]
    assert isinstance(con, duckdb.DuckDBPyConnection) and isinstance(job, _Job)
    return _score_group(con, plan, group, job)


def score_trajectories(
    trajectories: Sequence[Trajectory],
    cases: Mapping[str, Case],
    config: ScoringConfig | None = None,
    evaluators: Sequence[Evaluator] | None = None,
) -> list[Score]:
    """Score trajectories already in memory (a report's unscored attempts) by the same batch path."""
    if not trajectories:
        return []
    config = config or ScoringConfig()
    chosen = list(evaluators) if evaluators is not None else instances(config.evaluators)
    scope = attach_cases(Batch.from_trajectories(trajectories), list(cases.values()), config)
    return scores_of(score_batch(scope, chosen))


def with_sample(scores: pl.DataFrame, fraction: float, seed: int) -> pl.DataFrame:
    """Record the sample in every row's details (`"sample": {"fraction": f, "seed": n}`), so a figure
    computed from these rows can say what share of the traffic it stands for."""
    tag = f'"sample": {{"fraction": {float(fraction)!r}, "seed": {int(seed)}}}'
    body = pl.col("details").str.strip_suffix("}")
    joined = pl.when(pl.col("details") == "{}").then(pl.lit("{")).otherwise(pl.concat_str([body, pl.lit(", ")]))
    return scores.with_columns(details=pl.concat_str([joined, pl.lit(tag + "}")]))
