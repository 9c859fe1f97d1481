"""The set-at-a-time screen of `task_success` (see `evaluators/scope.py` for what a screen promises).

It settles outputs that meet plain string criteria; anything else goes to the reference.
"""

from __future__ import annotations

import json

import polars as pl

from tracevals.evaluators.scope import Scope, finish


def screen_success(scope: Scope) -> pl.DataFrame:
    """`task_success`: clean when the attempt raised nothing, recorded an output, and the case's only
    criteria are strings found (must_include) and not found (must_not_include). Case-insensitive
    matching is `str.casefold` in the reference; for ASCII text that is lower-casing, so the screen
    settles ASCII outputs and leaves any other to the reference."""
    needles = []
    settled: dict[str, tuple[str, str]] = {}  # case key -> (reason, details) of a clean row
    for key in scope.batch.traces.get_column("case_key").unique().to_list():
        case = scope.case(key)
        if case is None or not case.is_task or case.regex or case.json_schema is not None or case.checker:
            continue
        texts = [*case.must_include, *case.must_not_include]
        if not all(t.isascii() for t in texts):
            continue
        checks = [{"kind": "must_include", "value": t, "met": True, "why": None} for t in case.must_include]
        checks += [{"kind": "must_not_include", "value": t, "met": True, "why": None} for t in case.must_not_include]
        n = len(checks)
        reason = (
            f"{n}/{n} checks met, score={n}/{n}=1.000"
            if n
            else "no success criteria; the attempt ended without error and recorded an output"
        )
        details = {"checks": checks, "findings": [], "missing": []} if n else {"checks": [], "findings": []}
        settled[key] = (reason, json.dumps(details, sort_keys=True, default=str))
        needles += [(key, t.lower(), True) for t in case.must_include]
        needles += [(key, t.lower(), False) for t in case.must_not_include]
    traces = scope.batch.traces.select("trace_id", "case_key", "output", "error_type")
    applicable = scope.case_frame(applies=(lambda c: c is not None and c.is_task, pl.Boolean))
    known = pl.DataFrame(
        [(k, r, d) for k, (r, d) in settled.items()],
        schema={"case_key": pl.Utf8, "clean_reason": pl.Utf8, "clean_details": pl.Utf8},
        orient="row",
    )
    frame = traces.join(applicable, on="case_key", how="left").join(known, on="case_key", how="left")
    frame = frame.with_columns(lowered=pl.col("output").str.to_lowercase())
    table = pl.DataFrame(needles, schema={"case_key": pl.Utf8, "needle": pl.Utf8, "wanted": pl.Boolean}, orient="row")
    misses = (
        frame.select("trace_id", "case_key", "lowered")
        .join(table, on="case_key", how="inner")
        .with_columns(miss=pl.col("lowered").str.contains(pl.col("needle"), literal=True) != pl.col("wanted"))
        .group_by("trace_id")
        .agg(missed=pl.col("miss").fill_null(True).any())
    )
    frame = frame.join(misses, on="trace_id", how="left")
    clean = (
        pl.col("clean_reason").is_not_null()
        & pl.col("error_type").is_null()
        & pl.col("output").is_not_null()
        & ~pl.col("output").str.contains(r"[^\x00-\x7F]").fill_null(True)
        & ~pl.col("missed").fill_null(False)
    )
    status = (
        pl.when(~pl.col("applies").fill_null(False))
        .then(pl.lit("na"))
        .when(clean)
        .then(pl.lit("clean"))
        .otherwise(pl.lit("check"))
    )
    return finish(frame, status, pl.col("clean_reason"), pl.col("clean_details"))
