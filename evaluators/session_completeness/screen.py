"""The set-at-a-time screen of `session_completeness` (see `evaluators/scope.py` for what a screen promises).

Completeness is decided entirely from the trace's span facts; only incomplete traces go to the
reference (for their reasons).
"""

from __future__ import annotations

import polars as pl

from tracevals.evaluators.scope import Scope, finish, json_bool, json_int, json_object, json_str
from tracevals.evaluators.session_completeness.evaluator import CHECKS
from tracevals.model.trajectory import TERMINAL_STATES


def screen_completeness(scope: Scope) -> pl.DataFrame:
    gaps = scope.batch.calls.group_by("trace_id").agg(gaps=pl.col("gap").sum())
    frame = scope.batch.traces.join(gaps, on="trace_id", how="left").with_columns(pl.col("gaps").fill_null(0))
    complete = (
        pl.col("root_present")
        & pl.col("root_ended")
        & (pl.col("orphan_spans") == 0)
        & (pl.col("open_spans") == 0)
        & (pl.col("dangling_calls") + pl.col("gaps") == 0)
        & pl.col("terminal").is_in(list(TERMINAL_STATES))
        & (pl.col("turns_expected").is_null() | (pl.col("session_traces") >= pl.col("turns_expected")))
    ).fill_null(False)
    status = (
        pl.when(~pl.col("facts_loaded").fill_null(False))
        .then(pl.lit("na"))
        .when(complete)
        .then(pl.lit("clean"))
        .otherwise(pl.lit("check"))
    )
    n = str(len(CHECKS))
    reason = pl.concat_str(
        pl.lit(f"{n}/{n} checks passed ("), pl.col("span_count").cast(pl.Utf8), pl.lit(f" spans), score={n}/{n}=1.000")
    )
    details = json_object(
        {
            "end_marker": json_bool(pl.col("end_marker")),
            "failed": pl.lit("[]"),
            "findings": pl.lit("[]"),
            "gaps": json_int(pl.col("gaps")),
            "span_count": json_int(pl.col("span_count")),
            "terminal": json_str(pl.col("terminal")),
        }
    )
    return finish(frame, status, reason, details)
