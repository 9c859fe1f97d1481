"""Score rows into the lake: `LAKE/scores/` (and a run's per-step rows, `LAKE/step_reliability/`), one
atomically committed Parquet file per write.

Re-scoring appends; the `scores` view keeps the newest row per (trace, evaluator), so new rows
supersede old ones without rewriting a file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from tracevals.lake.lake import Lake
from tracevals.lake.schema import SCORE_SCHEMA, SCORES_DIR, STEP_RELIABILITY_DIR, STEP_RELIABILITY_SCHEMA
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
    table = pa.Table.from_pylist(score_rows(scores), schema=SCORE_SCHEMA)
    return lake.write_table(SCORES_DIR, table)


def write_score_frame(lake: Lake, scores: pl.DataFrame, scored_at_ns: int | None = None) -> LakeFile | None:
    """Append a frame of score rows (`model.score.SCORE_FRAME_SCHEMA`) to `LAKE/scores/`, one file."""
    if scores.height == 0:
        return None
    now = time.time_ns() if scored_at_ns is None else scored_at_ns
    table = scores.with_columns(pl.lit(now).cast(pl.Datetime("ns", "UTC")).alias("scored_at")).to_arrow()
    table = table.select(SCORE_SCHEMA.names).cast(SCORE_SCHEMA)
    return lake.write_table(SCORES_DIR, table)


def write_step_reliability(lake: Lake, rows: Sequence[Mapping[str, Any]]) -> LakeFile | None:
    """Append a scored run's per-step rows (`report.reliability.lake_rows`) to `LAKE/step_reliability/`,
    one file; the `step_reliability` view keeps the newest set per run."""
    if not rows:
        return None
    now = time.time_ns()
    table = pa.Table.from_pylist([{**r, "computed_at": now} for r in rows], schema=STEP_RELIABILITY_SCHEMA)
    return lake.write_table(STEP_RELIABILITY_DIR, table)
