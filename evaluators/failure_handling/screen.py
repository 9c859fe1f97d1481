"""The set-at-a-time screen of `failure_handling` (see `evaluators/scope.py` for what a screen promises).

Not applicable to a trace with no failed executed call (most traces); every other trace goes to the
reference, which also leaves out the failed calls that were injected faults or were made good.
"""

from __future__ import annotations

import polars as pl

from tracevals.evaluators.scope import Scope, finish


def screen_failures(scope: Scope) -> pl.DataFrame:
    failed = scope.executed().filter(pl.col("failed")).get_column("trace_id").unique()
    frame = scope.batch.traces.select("trace_id")
    status = pl.when(pl.col("trace_id").is_in(failed.implode())).then(pl.lit("check")).otherwise(pl.lit("na"))
    return finish(frame, status, pl.lit(None, dtype=pl.Utf8), pl.lit(None, dtype=pl.Utf8))
