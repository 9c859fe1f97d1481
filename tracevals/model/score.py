"""What a score is: one evaluator's verdict on one target, with its arithmetic (a row of `scores/`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tracevals.model.attempt import attempt_fields


@dataclass(frozen=True)
class Score:
    """One row of `scores/`: an evaluator's verdict on one target, with its arithmetic."""

    evaluator: str
    evaluator_version: int
    passed: bool
    score: float  # in [0, 1]
    reason: str
    details: dict[str, Any] = field(default_factory=dict)
    trace_id: str | None = None
    session_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    attempt: int | None = None
    variant: str | None = None


# Score rows as a frame: what the batch path produces and `scoring.store` writes to `scores/`.
SCORE_FRAME_SCHEMA = pl.Schema(
    {
        "trace_id": pl.Utf8,
        "session_id": pl.Utf8,
        "run_id": pl.Utf8,
        "task_id": pl.Utf8,
        "attempt": pl.Int64,
        "variant": pl.Utf8,
        "evaluator": pl.Utf8,
        "evaluator_version": pl.Int32,
        "passed": pl.Boolean,
        "score": pl.Float64,
        "reason": pl.Utf8,
        "details": pl.Utf8,
    }
)


def score_details(score: Score) -> str:
    return json.dumps(score.details, sort_keys=True, default=str)


def score_rows_frame(scores: Sequence[Score]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            (s.trace_id, s.session_id, s.run_id, s.task_id, s.attempt, s.variant, s.evaluator, s.evaluator_version,
             s.passed, float(s.score), s.reason, score_details(s))
            for s in scores
        ],
        schema=SCORE_FRAME_SCHEMA,
        orient="row",
    )  # fmt: skip


def scores_of(frame: pl.DataFrame) -> list[Score]:
    """Score rows (a frame of `SCORE_FRAME_SCHEMA`) back as `Score` objects."""
    return [
        Score(
            evaluator=row["evaluator"],
            evaluator_version=row["evaluator_version"],
            passed=row["passed"],
            score=row["score"],
            reason=row["reason"],
            details=json.loads(row["details"]) if row["details"] else {},
            trace_id=row["trace_id"],
            **attempt_fields(row),
        )
        for row in frame.iter_rows(named=True)
    ]
