"""The local engine: score a lake, or a time range, a sample or some runs of it, on this machine.

`score_job` takes a `ScoringJob`, selects whole sessions (`tracevals.queries.selection.Selection`), loads
them a chunk at a time as frames (`queries.trajectories.load_batch`), attaches each trace's case
(`scoring.cases.attach_cases`), scores the batch (`evaluators.score_batch`), then stores the rows in
`LAKE/scores/` and hands them to the job's sinks (`gen_ai.evaluation.result` events ...). A big lake is
read a group of whole sessions at a time (`scoring.groups`). Every command scores through the engines'
table (`scoring.engines`), whose `local` is this; `score --follow` calls `score_connection` on the spans
of finished sessions (`scoring.live`).

>>> run = score_lake("lake", tasks=load_cases("tasks.jsonl"), selection=Selection(fraction=0.1, seed=7))
>>> run.scores.group_by("evaluator").agg(pl.col("passed").mean())
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import duckdb
import polars as pl

from tracevals.evaluators.apply import score_batch
from tracevals.evaluators.evaluator import Evaluator
from tracevals.evaluators.registry import instances
from tracevals.lake.lake import Lake, LakeLike
from tracevals.model.batch import Batch
from tracevals.model.case import Case
from tracevals.model.score import SCORE_FRAME_SCHEMA, Score, scores_of
from tracevals.model.trajectory import Trajectory
from tracevals.queries import open_lake
from tracevals.queries.derived import derived_hours
from tracevals.queries.groups import plan_groups
from tracevals.queries.selection import Selection, select_sessions, session_chunks
from tracevals.queries.trajectories import load_batch
from tracevals.scoring.cases import attach_cases
from tracevals.scoring.config import ScoringConfig
from tracevals.scoring.job import ScoringJob
from tracevals.scoring.results import ScoringRun, tally, with_sample
from tracevals.scoring.store import write_score_frame

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
    where: str = "",
) -> ScoringRun:
    """Score rows for the selected sessions of an open lake (nothing written), `chunk_sessions` whole
    sessions at a time (copy_chunks=False: a chunk read through a filter on rows already in memory, see
    `selection.session_chunks`). Of them, the traces of the selection's `trace_condition` (its runs'
    attempts), or of `where` (the same, for sessions selected already)."""
    config = config or ScoringConfig()
    chosen = list(evaluators) if evaluators is not None else instances(config.evaluators)
    restriction = select_sessions(con, selection) if selection is not None else None
    where = selection.trace_condition() if selection is not None else where
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


def loaded_chunks(
    batches: Batch | Iterable[Batch],
    *,
    tasks: Sequence[Case] | None,
    config: ScoringConfig,
    evaluators: Sequence[Evaluator],
    chunk_sessions: int = CHUNK_SESSIONS,
    keep_batch: bool = False,
) -> Iterator[ScoringRun]:
    """Score rows for traces already loaded as frames (a closed hour's derived frames, `queries.derived`), a
    run per chunk of about `chunk_sessions` whole sessions (a session's traces share a chunk: `sid`'s hash),
    as each is scored, as `score_connection` scores what it loads: a caller that writes each and lets it go
    holds one chunk's rows, not the batch's (`offline.combine` makes them one run). `batches`: one batch, or
    batches of whole sessions read a chunk at a time (`derived.derived_chunks`), each cut again if larger."""
    sid = pl.coalesce("session_id", "trace_id")
    for batch in [batches] if isinstance(batches, Batch) else batches:
        sessions = batch.traces.select(sid).n_unique() if len(batch) else 0
        count = max(1, -(-sessions // max(1, chunk_sessions)))
        for chunk in range(count):
            part = (
                batch
                if count == 1
                else batch.select(batch.traces.filter(sid.hash(7) % count == chunk).get_column("trace_id"))
            )
            scores = score_batch(attach_cases(part, tasks, config), evaluators)
            roots = dict(part.traces.select("trace_id", "root_span_id").drop_nulls().iter_rows())
            sessions_in = part.traces.select(sid).n_unique() if len(part) else 0
            run = ScoringRun(scores, len(part), sessions_in, root_spans=roots, batch=part if keep_batch else None)
            del part, scores, roots
            yield run
            del run  # not held while the next chunk is scored
        del batch


def combine(runs: Sequence[ScoringRun]) -> ScoringRun:
    """Several runs over disjoint sessions as one (their rows, counts, roots and batches together)."""
    if not runs:
        return ScoringRun(pl.DataFrame(schema=SCORE_FRAME_SCHEMA), 0, 0)
    scores = pl.concat([r.scores for r in runs], how="vertical")
    roots = {k: v for r in runs for k, v in r.root_spans.items()}
    batches = [r.batch for r in runs if r.batch is not None]
    batch = Batch.concat(batches) if batches else None
    return ScoringRun(scores, sum(r.traces for r in runs), sum(r.sessions for r in runs), root_spans=roots, batch=batch)


def score_job(job: ScoringJob) -> ScoringRun:
    """The local engine: score the selected sessions of `job.lake`, append the rows to `lake/scores/` (unless
    `job.write` is False), and hand them to each sink (an `EvaluationEmitter`, a printer ...).

    A lake is read a group of whole sessions at a time (`scoring.groups`: about `max_rows` span and log rows
    each, `workers` groups at once); one with files outside the `date=/hour=` partitions is read whole.
    keep_scores=False: the run keeps only counts per evaluator (`ScoringRun.tallies`, `summary()`).
    """
    from tracevals.scoring.groups import score_groups

    job = job.priced()
    plan = plan_groups(job.lake, job.lower_bound(), job.max_rows)
    if plan is not None:
        plan.derived = derived_hours(job.lake)  # closed hours whose sessions are read from their frames
        return score_groups(plan, job)
    # no snapshot (open_lake's default for a small lake): the views must follow `select_sessions`' restriction
    con = open_lake(job.lake, since=job.lower_bound(), materialize=False)
    try:
        run = score_connection(
            con,
            tasks=job.tasks,
            config=job.config,
            evaluators=job.chosen(),
            selection=job.selection,
            keep_batch=job.keep_batch,
        )
    finally:
        con.close()
    written = write_score_frame(job.lake, run.scores) if job.write else None
    for sink in job.sinks:
        sink(run.scores, run.root_spans)
    if not job.keep_scores:
        run = replace(run, scores=pl.DataFrame(schema=SCORE_FRAME_SCHEMA), tallies=tally(run.scores))
    return replace(run, written=written, files=(written,) if written else ())


def score_lake(lake: LakeLike, **options: Any) -> ScoringRun:
    """`score_job` of `ScoringJob(Lake.open(lake), **options)`: the Python entry point that takes a lake as
    a path or URL (`tasks`, `config`, `evaluators`, `selection`, `write`, `sinks`, `keep_batch`,
    `keep_scores`, `workers`, `max_rows`, `memory_limit`: the fields of `ScoringJob`).

    >>> run = score_lake("lake", tasks=load_cases("tasks.jsonl"), selection=Selection(fraction=0.1, seed=7))
    """
    return score_job(ScoringJob(Lake.open(lake), **options))


# ---------------------------------------------------------------- traces already in memory


def score_trajectories(
    trajectories: Sequence[Trajectory],
    cases: Mapping[str, Case],
    config: ScoringConfig | None = None,
    evaluators: Sequence[Evaluator] | None = None,
) -> list[Score]:
    """Score trajectories already in memory by the same batch path."""
    if not trajectories:
        return []
    return score_loaded(Batch.from_trajectories(trajectories), cases, config, evaluators)


def score_loaded(
    batch: Batch,
    cases: Mapping[str, Case],
    config: ScoringConfig | None = None,
    evaluators: Sequence[Evaluator] | None = None,
) -> list[Score]:
    """Score the traces of a batch read from a lake (a report's unscored attempts: `Batch.select` of what
    `load_batch` read), as `tracevals score` scores them, with no round trip through `Trajectory` objects."""
    if not batch.traces.height:
        return []
    config = config or ScoringConfig()
    chosen = list(evaluators) if evaluators is not None else instances(config.evaluators)
    scope = attach_cases(batch, list(cases.values()), config)
    return scores_of(score_batch(scope, chosen))
