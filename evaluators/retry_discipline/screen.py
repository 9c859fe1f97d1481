"""The set-at-a-time screen of `retry_discipline` (see `frames.py` for what a screen promises).

A trace is `check` when any rule might fire or any call might be unknown: more retries than the
bound (all chains together, which over-approximates per chain), a retry that may not have waited,
a retry of a non-retryable error, a retry whose identity is a guess, a write that timed out, a risky
call without a key when the case requires keys, two successful risky calls of one operation, a
successful risky call of unknown identity, or a repeated block of calls with the same outcome at the
loop threshold. A risky call without a key where keys are not required is a warning the reference
notes and still scores 1: the screen writes those warnings itself (a correct agent whose tools take no
key is the common case in production), unless a tool's name would need escaping in JSON.
"""

from __future__ import annotations

import polars as pl

from tracevals.evaluators.retry_discipline.declarations import MISSING_IDEMPOTENCY_KEY
from tracevals.evaluators.scope import (
    CALL_LABEL,
    JSON_SAFE,
    Scope,
    finding_json,
    finish,
    json_int,
    json_object,
    json_str,
)
from tracevals.model.calls import RETRYABLE_4XX
from tracevals.model.findings import WARNING

_RATE_LIMIT_TYPES = ["429", "rate_limit", "ratelimiterror"]


def _prev(name: str, k: int = 1) -> pl.Expr:
    """The value `k` calls earlier in the same trace (calls are sorted by trace; `tix` numbers traces),
    null at a trace's start: a shift with a mask, much cheaper than a window per trace."""
    return pl.when(pl.col("tix") == pl.col("tix").shift(k)).then(pl.col(name).shift(k))


def screen_retry(scope: Scope) -> pl.DataFrame:
    calls = scope.executed()
    params = scope.case_frame(
        max_retries=(lambda c: c.max_retries if c is not None else None, pl.Int64),
        loop_repeats=(lambda c: c.loop_repeats if c is not None else 3, pl.Int64),
        # `rules.missing_idempotency_keys`: a missing key fails when the case requires keys, warns when it says
        # nothing, is not checked when it waives them
        key_required=(lambda c: c is not None and c.require_idempotency_key is True, pl.Boolean),
        key_warned=(lambda c: c is None or c.require_idempotency_key is None, pl.Boolean),
        min_backoff=(lambda c: c.min_backoff_ms if c is not None else 0.0, pl.Float64),
    )
    calls = calls.join(params, on="case_key", how="left", maintain_order="left")
    return _verdicts(_per_trace(_flagged(calls)))


def _flagged(calls: pl.DataFrame) -> pl.DataFrame:
    """Each call flagged as `rules` reads it: a retry (of the previous call's failed operation), in doubt
    (too soon, after a non-retryable error, of an unknown operation), in a loop, suspicious."""
    prev = {
        name: _prev(name)
        for name in (
            "retry_after_ms",
            "end_ms",
            "status_code",
            "retryable",
            "error_type",
            "timeout",
            "clock_end_ms",
        )
    }
    is_retry = pl.col("retry")  # the scope's (`Scope.executed`)
    rate_limited = (prev["status_code"] == 429) | prev["error_type"].str.to_lowercase().is_in(_RATE_LIMIT_TYPES)
    # rules.waited_ms: the logical clock where both calls have it, else the spans' times
    clocked = prev["clock_end_ms"].is_not_null() & pl.col("clock_start_ms").is_not_null()
    untimed = ~clocked & ((prev["end_ms"].fill_null(0) == 0) | (pl.col("start_ms").fill_null(0) == 0))
    waited = (
        pl.when(clocked)
        .then(pl.col("clock_start_ms") - prev["clock_end_ms"])
        .otherwise(pl.col("start_ms") - prev["end_ms"])
    )
    non_retryable = (prev["retryable"] == False) | (  # noqa: E712 (a nullable column, not a Python bool)
        prev["retryable"].is_null()
        & prev["status_code"].is_between(400, 499)
        & ~prev["status_code"].is_in(list(RETRYABLE_4XX))
    )
    backoff_doubt = (prev["retry_after_ms"].is_not_null() & (untimed | (waited < prev["retry_after_ms"]))) | (
        (pl.col("min_backoff") > 0) & (rate_limited.fill_null(False) | prev["timeout"].fill_null(False))
    )
    outcome = (
        pl.when(pl.col("failed"))
        .then(pl.concat_str([pl.lit("error:"), pl.col("error_type")]))
        .otherwise(pl.concat_str([pl.lit("ok:"), pl.col("result")]).fill_null(pl.lit("ok")))
    )
    calls = calls.with_columns(
        is_retry=is_retry,
        doubt=is_retry & (backoff_doubt.fill_null(False) | non_retryable.fill_null(False) | ~pl.col("identity_known")),
        step_key=pl.concat_str([pl.col("op_key"), pl.lit("->"), outcome]),
    )
    calls = _with_loop_flags(calls)
    keyless = pl.col("risky") & (pl.col("idempotency_key").is_null() | (pl.col("idempotency_key") == ""))
    calls = calls.with_columns(
        chain_start=pl.col("is_retry") & ~_prev("is_retry").fill_null(False),
        suspicious=(
            pl.col("doubt")
            | (pl.col("risky") & pl.col("timeout"))
            | (keyless & pl.col("key_required"))
            | (pl.col("risky") & ~pl.col("failed") & ~pl.col("identity_known"))
            | pl.any_horizontal("loop_1", "loop_2", "loop_3")
        ),
        key_warning=(keyless & pl.col("key_warned")).fill_null(False),
    )
    return calls


def _per_trace(calls: pl.DataFrame) -> pl.DataFrame:
    """A trace's calls, retries and chains, and whether anything in it needs the full evaluator."""
    # two successful risky calls of one operation in a trace: few calls are risky, so group those only
    done = calls.filter(pl.col("risky") & ~pl.col("failed") & pl.col("identity_known"))
    repeated = done.group_by("tix", "op_key").len().filter(pl.col("len") > 1).select("tix").unique()
    per_trace = calls.group_by("tix").agg(
        trace_id=pl.col("trace_id").first(),
        n=pl.len(),
        retries=pl.col("is_retry").sum(),
        chains=pl.col("chain_start").sum(),
        max_retries=pl.col("max_retries").first(),
        doubt=pl.col("suspicious").any(),
    )
    # the missing keys' warnings, in call order: what the reference notes (and all it notes) of a clean trace
    warned = calls.filter(pl.col("key_warning"))
    if warned.height:
        per_trace = per_trace.join(_warnings(warned), on="tix", how="left").with_columns(
            pl.col("warnings", "warned_problems", "warned_findings").fill_null(""),
            doubt=pl.col("doubt") | pl.col("unsafe").fill_null(False),
        )
    else:  # no keyless write in the batch: no text to write
        per_trace = per_trace.with_columns(
            pl.lit("").alias(n) for n in ("warnings", "warned_problems", "warned_findings")
        )
    per_trace = per_trace.join(repeated.with_columns(dup=pl.lit(True)), on="tix", how="left")
    per_trace = per_trace.with_columns(
        over_bound=pl.col("max_retries").is_not_null() & (pl.col("retries") > pl.col("max_retries"))
    )
    return per_trace


def _warnings(warned: pl.DataFrame) -> pl.DataFrame:
    """Per trace, the warnings of its keyless risky calls (`warned`) as the reference writes them: the reason's
    sentences, `problems`, `findings` (from the kind's declaration), and whether a tool's name would need
    escaping in JSON (`unsafe`: the trace is then the reference's)."""
    message = pl.concat_str([pl.lit("no idempotency key: "), CALL_LABEL, pl.lit(" ("), pl.col("effect"), pl.lit(")")])
    finding = finding_json(
        MISSING_IDEMPOTENCY_KEY,
        WARNING,
        message=json_str(message),
        step=json_int(pl.col("epos") + 1),
        call=json_str(CALL_LABEL),
    )
    unsafe = ~pl.col("name").str.contains(JSON_SAFE).fill_null(False)
    return (
        warned.select("tix", message=message, finding=finding, unsafe=unsafe)
        .group_by("tix", maintain_order=True)
        .agg(
            warnings=pl.col("message").str.join("; "),
            warned_problems=json_str(pl.col("message")).str.join(", "),
            warned_findings=pl.col("finding").str.join(", "),
            unsafe=pl.col("unsafe").any(),
        )
    )


def _verdicts(per_trace: pl.DataFrame) -> pl.DataFrame:
    """The screen's rows: `check` for a trace with anything in doubt, else `clean` with the evaluator's reason
    and details for a trace with nothing to flag."""
    status = (
        pl.when(pl.col("doubt") | pl.col("over_bound") | pl.col("dup").fill_null(False))
        .then(pl.lit("check"))
        .otherwise(pl.lit("clean"))
    )
    bound = pl.col("max_retries").cast(pl.Utf8).fill_null("not set")
    n = pl.col("n").cast(pl.Utf8)
    warnings = pl.when(pl.col("warnings") != "").then(pl.concat_str([pl.lit("; "), pl.col("warnings")]))
    reason = pl.concat_str(
        n, pl.lit(" calls, "), pl.col("retries").cast(pl.Utf8), pl.lit(" retries in "), pl.col("chains").cast(pl.Utf8),
        pl.lit(" chains (max per call "), bound, pl.lit("), 0 flagged, 0 unknown; score="), n, pl.lit("/"), n,
        pl.lit("=1.000"), warnings.fill_null(""),
    )  # fmt: skip
    details = json_object(
        {
            "calls": json_int(pl.col("n")),
            "chains": json_int(pl.col("chains")),
            "findings": pl.concat_str([pl.lit("["), pl.col("warned_findings"), pl.lit("]")]),
            "flagged": pl.lit("[]"),
            "max_retries": json_int(pl.col("max_retries")),
            "problems": pl.concat_str([pl.lit("["), pl.col("warned_problems"), pl.lit("]")]),
            "retries": json_int(pl.col("retries")),
            "unknown": pl.lit("{}"),
        }
    )
    return finish(per_trace, status, reason, details)


def _with_loop_flags(calls: pl.DataFrame) -> pl.DataFrame:
    """`loop_1`..`loop_3`: this call completes `need` repeats of a block of 1-3 calls with equal outcomes.

    `run` counts how many calls in a row equalled the one `period` before; a run restarts where that
    fails (and at each trace's first calls, where there is nothing `period` before). Computed with
    global cumulative sums over the sorted calls rather than windows per trace."""
    for period in (1, 2, 3):
        same = (pl.col("step_key") == _prev("step_key", period)).fill_null(False)
        calls = calls.with_columns(same.alias("tv_same")).with_columns(tv_cs=pl.col("tv_same").cast(pl.Int64).cum_sum())
        base = pl.when(~pl.col("tv_same")).then(pl.col("tv_cs")).forward_fill().fill_null(0)
        need = (
            pl.max_horizontal(pl.col("loop_repeats"), pl.col("max_retries").fill_null(0) + 1)
            if period == 1
            else pl.col("loop_repeats")
        )
        calls = calls.with_columns(((pl.col("tv_cs") - base) >= need * period).alias(f"loop_{period}"))
    return calls.drop("tv_same", "tv_cs")
