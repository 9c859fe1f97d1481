"""Which case each trace is an attempt at: by `tracevals.task.id`, else by its input text.

A trace whose task id names a case gets that case. Otherwise its input (the request of its first model
call, see `queries/completeness.py`) is normalised (`tasks.normalize_input`) and compared with the
cases' inputs; a match gives the case, and the trace's `task_id` becomes the case id (the score rows
then say which task the trace was an attempt at). Every other trace gets the scoring config's policy,
when there is one, or no case. The scoring config sits beneath every case (`ScoringConfig.apply`).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from tracevals.evaluators.scope import NO_CASE, Scope
from tracevals.model.batch import Batch
from tracevals.model.case import Case
from tracevals.model.tasks import normalize_input
from tracevals.scoring.config import ScoringConfig

CONFIG_CASE = "\x01config"  # the case key of the scoring config's policy


def attach_cases(batch: Batch, tasks: Sequence[Case] | None, config: ScoringConfig | None = None) -> Scope:
    """`batch` with `case_key` (and `task_id` filled for input matches), and the cases by key."""
    config = config or ScoringConfig()
    cases = {c.case_id: config.apply(c) for c in tasks or ()}
    fallback = NO_CASE
    if set(config.policy) - {"prices"}:  # prices alone price the cases; they check nothing of other traffic
        cases[CONFIG_CASE] = config.default_case()
        fallback = CONFIG_CASE
    by_input: dict[str, str] = {}
    for case in tasks or ():
        by_input.setdefault(normalize_input(case.input), case.case_id)
    traces = batch.traces
    inputs = traces.select("input").unique()
    matched = inputs.with_columns(
        pl.Series("by_input", [by_input.get(normalize_input(t)) for t in inputs.get_column("input")], dtype=pl.Utf8)
    )
    known = [k for k in cases if k != CONFIG_CASE]
    traces = traces.join(matched, on="input", how="left", nulls_equal=True).with_columns(
        case_key=pl.when(pl.col("task_id").is_in(known))
        .then(pl.col("task_id"))
        .otherwise(pl.coalesce(pl.col("by_input"), pl.lit(fallback)))
    )
    traces = traces.with_columns(
        task_id=pl.when(pl.col("task_id").is_null() & pl.col("by_input").is_not_null())
        .then(pl.col("by_input"))
        .otherwise(pl.col("task_id"))
    ).drop("by_input")
    return Scope(Batch(traces, batch.calls, batch.handoffs), cases)
