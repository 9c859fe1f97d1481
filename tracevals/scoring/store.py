"""Score rows into the lake: `LAKE/scores/` (and a run's per-step rows, `LAKE/step_reliability/`), one
atomically committed Parquet file per write.

Re-scoring appends; the `scores` view keeps the newest row per (trace, evaluator), so new rows
supersede old ones without rewriting a file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from tracevals.lake.lake import Lake
from tracevals.lake.schema import (
    SCORE_SCHEMA,
    SCORES_DIR,
    STEP_RELIABILITY_DIR,
    STEP_RELIABILITY_SCHEMA,
    pylist_table,
)
from tracevals.lake.writer import LakeFile
from tracevals.model.score import Score


def score_rows(scores: Iterable[Score]) -> list[dict[str, Any]]:
    now = time.time_ns()
    return [
        {
            "trace_id": s.trace_id,
            "session_id": s.session_id,
            "run_id": s.run_id,
            "task_id": s.task_id,
            "attempt": s.attempt,
            "variant": s.variant,
            "evaluator": s.evaluator,
            "evaluator_version": s.evaluator_version,
            "passed": s.passed,
            "score": float(s.score),
            "reason": s.reason,
            "details": json.dumps(s.details, sort_keys=True, default=str),
            "scored_at": now,
        }
        for s in scores
    ]


def write_scores(lake: Lake, scores: Sequence[Score]) -> LakeFile | None:
    """Append score rows to `LAKE/scores/` as one atomically committed Parquet file."""
    if not scores:
        return None
    table = pylist_table(score_rows(scores), SCORE_SCHEMA)
    return lake.write_table(SCORES_DIR, table)


def write_score_frame(lake: Lake, scores: pl.DataFrame, scored_at_ns: int | None = None) -> LakeFile | None:
    """Append a frame of score rows (`model.score.SCORE_FRAME_SCHEMA`) to `LAKE/scores/`, one file."""
    return write_score_frames(lake, [scores], scored_at_ns)


def write_score_frames(lake: Lake, frames: Iterable[pl.DataFrame], scored_at_ns: int | None = None) -> LakeFile | None:
    """Append frames of score rows to `LAKE/scores/` as one file, a frame at a time (each let go once written:
    a group of sessions scored a chunk at a time holds one chunk's rows); the file appears once the last is
    written, or not at all when iterating `frames` fails. None when they held no row."""
    now = time.time_ns() if scored_at_ns is None else scored_at_ns
    stamp = pl.lit(now).cast(pl.Datetime("ns", "UTC")).alias("scored_at")

    def tables() -> Iterator[pa.Table]:
        for scores in frames:  # each frame let go before the next is made
            if scores.height:
                table = scores.with_columns(stamp).to_arrow()
                del scores
                yield table
                del table

    return lake.write_tables(SCORES_DIR, tables(), SCORE_SCHEMA)


def write_step_reliability(lake: Lake, rows: Sequence[Mapping[str, Any]]) -> LakeFile | None:
    """Append a scored run's per-step rows (`report.reliability.lake_rows`) to `LAKE/step_reliability/`,
    one file; the `step_reliability` view keeps the newest set per run."""
    if not rows:
        return None
    now = time.time_ns()
    table = pylist_table([{**r, "computed_at": now} for r in rows], STEP_RELIABILITY_SCHEMA)
    return lake.write_table(STEP_RELIABILITY_DIR, table)
