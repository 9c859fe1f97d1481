"""The set-at-a-time screen of `failure_handling` (see `evaluators/scope.py` for what a screen promises).

Not applicable to a trace whose every failed executed call was made good (`failures.made_good`, the
same rule): a later success of its tool (a result no shaping fault spoiled), or an earlier success of
its operation when its identity is known. Most traces have no failed call at all; a fault-injection
suite's faults are mostly recovered. Every other trace goes to the reference, which also leaves out the
failed calls that were injected faults.
"""

from __future__ import annotations

import polars as pl

from tracevals.evaluators.failures import SHAPING
from tracevals.evaluators.scope import Scope, finish


def screen_failures(scope: Scope) -> pl.DataFrame:
    calls = scope.executed().select(
        "trace_id", "tix", "epos", "name", "op_key", "failed", "identity_known", "injection_type"
    )
    failed = calls.filter(pl.col("failed"))
    ok = calls.filter(~pl.col("failed"))
    # a later success of the tool: the last unspoiled success of the name comes after the failed call
    later = (
        ok.filter(~pl.col("injection_type").is_in(list(SHAPING)).fill_null(False))
        .group_by("tix", "name")
        .agg(last_ok=pl.col("epos").max())
    )
    # an earlier success of the operation (identity known)
    earlier = ok.group_by("tix", "op_key").agg(first_ok=pl.col("epos").min())
    failed = failed.join(later, on=["tix", "name"], how="left").join(earlier, on=["tix", "op_key"], how="left")
    good = (pl.col("last_ok") > pl.col("epos")).fill_null(False) | (
        pl.col("identity_known") & (pl.col("first_ok") < pl.col("epos")).fill_null(False)
    )
    unsettled = failed.filter(~good).get_column("trace_id").unique()
    frame = scope.batch.traces.select("trace_id")
    status = pl.when(pl.col("trace_id").is_in(unsettled.implode())).then(pl.lit("check")).otherwise(pl.lit("na"))
    return finish(frame, status, pl.lit(None, dtype=pl.Utf8), pl.lit(None, dtype=pl.Utf8))
