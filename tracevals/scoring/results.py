"""What a scoring run returns (`ScoringRun`): its rows or their counts, and what it wrote."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from tracevals.lake.writer import LakeFile
from tracevals.model.batch import Batch
from tracevals.model.score import Score, scores_of
from tracevals.model.trajectory import Trajectory


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
        tallies = self.tallies if self.tallies is not None else tally(self.scores)
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


def tally(scores: pl.DataFrame) -> pl.DataFrame:
    """Per evaluator (in first-seen order): scores, passed, rated (rows whose `passed` is not null)."""
    return scores.group_by("evaluator", maintain_order=True).agg(
        scores=pl.len().cast(pl.Int64),
        passed=pl.col("passed").sum().cast(pl.Int64),
        rated=pl.col("passed").count().cast(pl.Int64),
    )


def with_sample(scores: pl.DataFrame, fraction: float, seed: int) -> pl.DataFrame:
    """Record the sample in every row's details (`"sample": {"fraction": f, "seed": n}`), so a figure
    computed from these rows can say what share of the traffic it stands for."""
    tag = f'"sample": {{"fraction": {float(fraction)!r}, "seed": {int(seed)}}}'
    body = pl.col("details").str.strip_suffix("}")
    joined = pl.when(pl.col("details") == "{}").then(pl.lit("{")).otherwise(pl.concat_str([body, pl.lit(", ")]))
    return scores.with_columns(details=pl.concat_str([joined, pl.lit(tag + "}")]))
