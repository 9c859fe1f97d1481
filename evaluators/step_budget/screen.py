"""The set-at-a-time screen of `step_budget` (see `frames.py` for what a screen promises).

Every budgeted quantity is measured with expressions over the batch; a trace is `clean` when no check
of its case is exceeded and every check it cannot make is unknown for a reason the screen can name (no
token counts, no times, a model without a price: `settled`, whose reason and details the evaluator's own
`verdict` writes once per case and reason). Anything exceeded, and a cost budget when the cases of the batch
price models differently, is `check`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from tracevals.evaluators.scope import Scope, finish, json_int, json_object
from tracevals.evaluators.step_budget.evaluator import _LABELS, BUDGET_KEYS, StepBudget, _check
from tracevals.model.case import Case
from tracevals.model.prices import with_defaults
from tracevals.model.score import score_details
from tracevals.model.trajectory import Trajectory

_SCALAR_KEYS = [k for k in BUDGET_KEYS if k != "max_tool_calls_per_tool"]


def screen_budget(scope: Scope) -> pl.DataFrame:
    traces = scope.batch.traces
    limits = scope.case_frame(
        n_checks=(_check_count, pl.Int64),
        **{key: (_limit(key), pl.Float64) for key in _SCALAR_KEYS},
    )
    calls = scope.executed()
    counts = calls.group_by("trace_id").agg(tool_calls=pl.len(), retries=pl.col("retry").sum())
    frame = (
        traces.join(limits, on="case_key", how="left", suffix="_limit")
        .join(counts, on="trace_id", how="left")
        .with_columns(pl.col("tool_calls", "retries").fill_null(0))
        .join(_per_tool_excess(scope, calls), on="trace_id", how="left")
        .join(_costs(scope), on="trace_id", how="left")
        .with_columns(pl.col("per_tool_over").fill_null(False))
    )
    tokens_known = (pl.col("model_calls") == 0) | (pl.col("input_tokens") + pl.col("output_tokens") > 0)
    timed = (pl.col("start_ms") > 0) & (pl.col("end_ms") > 0)
    measures: Mapping[str, tuple[pl.Expr, pl.Expr]] = {  # key -> (actual, known)
        "max_steps": (pl.col("model_calls") + pl.col("tool_calls"), pl.lit(True)),
        "max_model_calls": (pl.col("model_calls"), pl.lit(True)),
        "max_tool_calls": (pl.col("tool_calls"), pl.lit(True)),
        "max_retries_total": (pl.col("retries"), pl.lit(True)),
        "max_tokens": (pl.col("input_tokens") + pl.col("output_tokens"), tokens_known),
        "max_input_tokens": (pl.col("input_tokens"), tokens_known),
        "max_output_tokens": (pl.col("output_tokens"), tokens_known),
        "max_cost_usd": (pl.col("cost"), pl.col("cost").is_not_null()),
        "max_duration_s": (pl.max_horizontal(pl.col("end_ms") - pl.col("start_ms"), pl.lit(0.0)) / 1000, timed),
    }
    exceeded = [
        pl.col(key).is_not_null() & known.fill_null(False) & (actual.cast(pl.Float64) > pl.col(key)).fill_null(True)
        for key, (actual, known) in measures.items()
    ]
    whys = {"max_cost_usd": pl.col("cost_why"), "max_duration_s": pl.lit(_NO_TIMES)}
    whys.update(dict.fromkeys(("max_tokens", "max_input_tokens", "max_output_tokens"), pl.lit(_NO_TOKENS)))
    unknown = {key: pl.col(key).is_not_null() & ~known.fill_null(False) for key, (_, known) in measures.items()}
    signature = pl.concat_str(
        [pl.when(unknown[key]).then(pl.concat_str(pl.lit(key + "="), whys.get(key, pl.lit(None)))) for key in measures],
        separator="\x1f",
        ignore_nulls=True,
    )  # null when an unknown check has no reason the screen can name: the reference decides
    frame = frame.with_columns(signature=signature, any_unknown=pl.any_horizontal(*unknown.values()))
    frame = frame.join(settled(scope, frame), on=["case_key", "signature"], how="left")
    status = (
        pl.when(pl.col("n_checks") == 0)
        .then(pl.lit("na"))
        .when(pl.any_horizontal(*exceeded, pl.col("per_tool_over")))
        .then(pl.lit("check"))
        .when(pl.col("any_unknown") & pl.col("settled_reason").is_null())
        .then(pl.lit("check"))
        .otherwise(pl.lit("clean"))
    )
    k = pl.col("n_checks").cast(pl.Utf8)
    reason = pl.concat_str(k, pl.lit(" budgets, 0 exceeded, 0 unknown; score="), k, pl.lit("/"), k, pl.lit("=1.000"))
    details = json_object(
        {
            "budgets": json_int(pl.col("n_checks")),
            "exceeded": pl.lit("[]"),
            "findings": pl.lit("[]"),
            "unknown": pl.lit("[]"),
        }
    )
    unknown_any = pl.col("any_unknown")
    return finish(
        frame,
        status,
        pl.when(unknown_any).then(pl.col("settled_reason")).otherwise(reason),
        pl.when(unknown_any).then(pl.col("settled_details")).otherwise(details),
    )


# Why a check is unknown, as `measure_all` says it (the cost's reason is per model: `_costs`).
_NO_TOKENS = "model calls recorded no token counts"
_NO_TIMES = "start or end time not recorded"
_NO_USAGE = "no per-model token counts recorded"


def settled(scope: Scope, frame: pl.DataFrame) -> pl.DataFrame:
    """(case_key, signature, settled_reason, settled_details) for each case and set of unknown checks the
    batch has (`signature`: `key=why` of each unknown check): the evaluator's own verdict of such checks
    when it passes with score 1 (every known check within), else no reason (the trace is `check`)."""
    evaluator = StepBudget()
    rows = []
    pairs = frame.filter(pl.col("any_unknown") & pl.col("signature").is_not_null())
    for case_key, signature in pairs.select("case_key", "signature").unique().iter_rows():
        case = scope.case(case_key)
        if case is None:
            continue
        whys = dict(part.split("=", 1) for part in signature.split("\x1f"))
        checks = []
        for key in BUDGET_KEYS:
            if key == "max_tool_calls_per_tool":
                checks += [
                    _check(f"calls of {t}", lim, (0.0, None)) for t, lim in sorted(case.budgets.get(key, {}).items())
                ]
            elif key in case.budgets:
                measure = (None, whys[key]) if key in whys else (0.0, None)
                checks.append(_check(_LABELS[key], case.budgets[key], measure))
        score = evaluator.verdict(Trajectory(trace_id=""), checks)
        if score.passed and score.score == 1.0:
            rows.append((case_key, signature, score.reason, score_details(score)))
    schema = {"case_key": pl.Utf8, "signature": pl.Utf8, "settled_reason": pl.Utf8, "settled_details": pl.Utf8}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _check_count(case: Case | None) -> int:
    if case is None:
        return 0
    budgets = case.budgets
    return sum(1 for k in _SCALAR_KEYS if k in budgets) + len(budgets.get("max_tool_calls_per_tool", {}))


def _limit(key: str) -> Callable[[Case | None], Any]:
    return lambda case: None if case is None else case.budgets.get(key)


def _per_tool_excess(scope: Scope, calls: pl.DataFrame) -> pl.DataFrame:
    """trace_id -> per_tool_over: some tool called more often than its case allows."""
    rows = [
        (key, tool, float(limit))
        for key in scope.batch.traces.get_column("case_key").unique().to_list()
        if (case := scope.case(key)) is not None
        for tool, limit in case.budgets.get("max_tool_calls_per_tool", {}).items()
    ]
    out_schema = {"trace_id": pl.Utf8, "per_tool_over": pl.Boolean}
    if not rows:
        return pl.DataFrame(schema=out_schema)
    budget = pl.DataFrame(rows, schema={"case_key": pl.Utf8, "name": pl.Utf8, "limit": pl.Float64}, orient="row")
    counts = calls.group_by("trace_id", "name").agg(count=pl.len())
    wanted = scope.batch.traces.select("trace_id", "case_key").join(budget, on="case_key")
    over = wanted.join(counts, on=["trace_id", "name"], how="left").with_columns(pl.col("count").fill_null(0))
    return over.group_by("trace_id").agg(per_tool_over=(pl.col("count") > pl.col("limit")).any()).cast(out_schema)  # type: ignore[arg-type]


def _costs(scope: Scope) -> pl.DataFrame:
    """trace_id -> cost (USD, null when unknown or when the batch's cases price models differently), and
    cost_why: why it is unknown, as `cost_usd` says it (null where the screen cannot tell: the reference
    then decides)."""
    traces = scope.batch.traces
    out_schema = {"trace_id": pl.Utf8, "cost": pl.Float64, "cost_why": pl.Utf8}
    keys = traces.get_column("case_key").unique().to_list()
    tables = {tuple(sorted(with_defaults(c.prices if (c := scope.case(k)) else {}).items())) for k in keys}
    if len(tables) != 1:
        return pl.DataFrame(schema=out_schema)  # unknown, for no reason said -> check: the reference prices each case
    prices = pl.DataFrame(
        [(m, p[0], p[1]) for m, p in tables.pop()],
        schema={"model": pl.Utf8, "p_in": pl.Float64, "p_out": pl.Float64},
        orient="row",
    )
    usage = (
        traces.select("trace_id", "model_usage")
        .explode("model_usage")
        .unnest("model_usage")
        .filter(pl.col("model").is_not_null() | pl.col("input_tokens").is_not_null())
        .join(prices, on="model", how="left")
        .with_columns(
            term=(pl.col("input_tokens") * pl.col("p_in") + pl.col("output_tokens") * pl.col("p_out")) / 1_000_000
        )
        .group_by("trace_id", maintain_order=True)
        .agg(
            priced=pl.col("term").sum(),
            unpriced=pl.col("p_in").is_null().any(),
            entries=pl.len(),
            first_unpriced=pl.col("model").filter(pl.col("p_in").is_null()).first(),
        )
    )
    frame = traces.select("trace_id", "cost_usd", "model_calls", n_usage=pl.col("model_usage").list.len())
    frame = frame.join(usage, on="trace_id", how="left")
    cost = (
        pl.when(pl.col("cost_usd").is_not_null())
        .then(pl.col("cost_usd"))
        .when(pl.col("model_calls") == 0)
        .then(pl.lit(0.0))
        .when(pl.col("entries").is_null() | pl.col("unpriced"))
        .then(pl.lit(None, dtype=pl.Float64))
        .otherwise(pl.col("priced"))
    )
    names = frame.filter(pl.col("unpriced").fill_null(False)).get_column("first_unpriced").unique().to_list()
    said = pl.DataFrame(
        {"first_unpriced": names, "priced_why": [f"no price for model {name!r}" for name in names]},
        schema={"first_unpriced": pl.Utf8, "priced_why": pl.Utf8},
    )
    frame = frame.join(said, on="first_unpriced", how="left", nulls_equal=True)
    why = (
        pl.when(pl.col("cost_usd").is_not_null() | (pl.col("model_calls") == 0))
        .then(pl.lit(None, dtype=pl.Utf8))
        .when(pl.col("n_usage").fill_null(0) == 0)
        .then(pl.lit(_NO_USAGE))
        .when(pl.col("entries") == pl.col("n_usage"))  # every entry priced or not (no empty entry dropped)
        .then(pl.col("priced_why"))
    )
    return frame.select("trace_id", cost.alias("cost"), why.alias("cost_why"))
