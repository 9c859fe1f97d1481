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

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path

import duckdb
import polars as pl

from tracevals.evaluators.batch_scoring import score_batch
from tracevals.evaluators.evaluator import Evaluator
from tracevals.evaluators.registry import instances
from tracevals.lake.paths import lake_prices
from tracevals.model.batch import Batch
from tracevals.model.case import Case
from tracevals.model.score import Score, scores_of
from tracevals.model.trajectory import Trajectory
from tracevals.queries import open_lake
from tracevals.queries.selection import Selection, select_sessions, session_chunks
from tracevals.queries.trajectories import load_batch
from tracevals.scoring.cases import attach_cases
from tracevals.scoring.config import ScoringConfig
from tracevals.scoring.store import write_score_frame

SESSION_MARGIN = timedelta(hours=12)  # sessions longer than this that straddle `since` may be cut
ScoreSink = Callable[[pl.DataFrame, Mapping[str, str]], object]  # (score rows, trace id -> root span id)


@dataclass(frozen=True)
class ScoringRun:
    scores: pl.DataFrame  # one row per (trace, evaluator), `model.score.SCORE_FRAME_SCHEMA`
    traces: int
    sessions: int
    written: Path | None = None
    root_spans: dict[str, str] = field(default_factory=dict)  # trace id -> root span id, for events
    batch: Batch | None = None  # the scored traces as frames, when asked for (`keep_batch=True`)

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
) -> ScoringRun:
    """Score rows for the selected sessions of an open lake (nothing written), `chunk_sessions` whole
    sessions at a time."""
    config = config or ScoringConfig()
    chosen = list(evaluators) if evaluators is not None else instances(config.evaluators)
    restriction = select_sessions(con, selection) if selection is not None else None
    where = selection.trace_condition() if selection is not None else ""
    frames: list[pl.DataFrame] = []
    kept: list[Batch] = []
    traces = sessions = 0
    roots: dict[str, str] = {}
    for _ in session_chunks(con, chunk_sessions, within=restriction):
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
) -> ScoringRun:
    """Score the selected sessions of `lake`, append the rows to `lake/scores/` (unless `write=False`),
    and hand them to each sink (an `EvaluationEmitter`, a printer ...)."""
    # Partition pruning for the lower bound only, with a margin: a session is in range by its first span,
    # so the partitions before `since` must still show where an earlier-started session began.
    lower = selection.since - SESSION_MARGIN if selection is not None and selection.since is not None else None
    con = open_lake(lake, since=lower)
    config = (config or ScoringConfig()).with_prices_beneath(lake_prices(os.fspath(lake)))
    try:
        run = score_connection(
            con, tasks=tasks, config=config, evaluators=evaluators, selection=selection, keep_batch=keep_batch
        )
    finally:
        con.close()
    written = write_score_frame(lake, run.scores) if write else None
    for sink in sinks:
        sink(run.scores, run.root_spans)
    return replace(run, written=written)


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
