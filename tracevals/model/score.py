"""What a score is: one evaluator's verdict on one target, with its arithmetic (a row of `scores/`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import polars as pl

from tracevals.model.json_text import loads as json_loads


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
    """Score rows (a frame of `SCORE_FRAME_SCHEMA`) back as `Score` objects (their details: `details_of`)."""
    columns = [frame.get_column(name).to_list() for name in _SCORE_ORDER]
    columns[_DETAILS] = details_of(columns[_DETAILS])
    return [Score(*values) for values in zip(*columns, strict=True)]


# `Score`'s fields in order, and where its details are among them (scores are built positionally)
_SCORE_ORDER = tuple(f.name for f in fields(Score))
_DETAILS = _SCORE_ORDER.index("details")


def details_of(texts: Sequence[str | None]) -> list[dict[str, Any]]:
    """Each score's details from its JSON text (none, not JSON or not an object: {}), each distinct text parsed
    once: scores read together that have the same text share one dict (most do: a clean verdict's details are the
    same for every trace; 36 texts for the 819,757 scores of the 10^6-span bench lake), so a reader must not change
    a score's details."""
    parsed: dict[str | None, dict[str, Any]] = {}
    out = []
    for text in texts:
        value = parsed.get(text)
        if value is None:
            value = parsed[text] = parsed_details(text)
        out.append(value)
    return out


def parsed_details(text: str | None) -> dict[str, Any]:
    """One score's details from its JSON text: none, not JSON or not an object give {}."""
    try:
        value = json_loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
