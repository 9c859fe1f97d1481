"""Verdict keys: traces with equal keys get equal verdicts, so the reference runs once per key.

`trajectory_match` reads only the case and the sequence of calls (name, arguments, gap, asked together with the
one before), and
`task_success` only the case, the output and the error: in repeated test runs and in production most
traces share both with many others, so one evaluation per distinct key scores the whole batch.
A null key means "not applicable".
"""

from __future__ import annotations

from collections.abc import Collection

import polars as pl

from tracevals.evaluators.scope import Scope
from tracevals.model.args_match import args_rule
from tracevals.model.case import Case

_SEP, _NULL = "\x1f", "\x00"


def call_sequence_keys(scope: Scope, comparators: Collection[str] = ()) -> pl.DataFrame:
    """trace_id -> key: the case and every call's (name, gap, whether it is a retry, and arguments where
    they can matter), for cases that say which steps to expect. Arguments matter only for a tool that
    some expected step gives arguments and whose rule compares them (not `ignore`, or a custom
    comparison): elsewhere two calls of a tool pair the same whatever their arguments, so the key leaves
    them out."""
    wanted = scope.case_frame(wanted=(lambda c: c is not None and c.expects_steps, pl.Boolean))
    rows = [
        (key, tool)
        for key in scope.batch.traces.get_column("case_key").unique().to_list()
        if (case := scope.case(key)) is not None
        for tool in _tools_compared_by_args(case, comparators)
    ]
    by_args = pl.DataFrame(rows, schema={"case_key": pl.Utf8, "name": pl.Utf8}, orient="row").with_columns(
        uses_args=pl.lit(True)
    )
    calls = scope.batch.calls.join(scope.batch.traces.select("trace_id", "case_key"), on="trace_id", how="left")
    calls = calls.join(by_args, on=["case_key", "name"], how="left")
    calls = calls.join(_retry_flags(scope), on=["trace_id", "pos"], how="left")
    args = pl.when(pl.col("uses_args").fill_null(False)).then(pl.col("args").fill_null(_NULL)).otherwise(pl.lit(""))
    retry = pl.col("retry").fill_null(False).cast(pl.Utf8)
    # whether one response asked for this call and the one before (`model.asked`: their order is read freely);
    # in (trace, pos) order, a call's predecessor is the row before it when that row is of the same trace
    same = (pl.col("asked_by") == pl.col("asked_by").shift(1)) & (pl.col("trace_id") == pl.col("trace_id").shift(1))
    together = same.fill_null(False).cast(pl.Utf8)
    steps = calls.sort(["trace_id", "pos"]).select(
        "trace_id",
        step=pl.concat_str([pl.col("name"), args, pl.col("gap").cast(pl.Utf8), retry, together], separator=_SEP),
    )
    sequences = steps.group_by("trace_id", maintain_order=True).agg(pl.col("step").str.join("\x1e").alias("sequence"))
    frame = (
        scope.batch.traces.select("trace_id", "case_key")
        .join(wanted, on="case_key", how="left")
        .join(sequences, on="trace_id", how="left")
        .join(_handoff_positions(scope), on="trace_id", how="left")
    )
    key = pl.concat_str(
        [pl.col("case_key"), pl.col("sequence").fill_null(""), pl.col("handoffs").fill_null("")], separator="\x1d"
    )
    return frame.select("trace_id", pl.when(pl.col("wanted").fill_null(False)).then(key).alias("key"))


def _handoff_positions(scope: Scope) -> pl.DataFrame:
    """(trace_id, handoffs): where the structured hand-offs fall among the executed calls (how many calls
    started before each), which `trajectory_match` reads as `handoff_to_human` steps."""
    handoffs = scope.batch.handoffs.select("trace_id", "at_ms")
    if handoffs.height == 0:
        return pl.DataFrame(schema={"trace_id": pl.Utf8, "handoffs": pl.Utf8})
    starts = scope.executed().select("trace_id", "start_ms")
    before = (
        handoffs.with_row_index("h")
        .join(starts, on="trace_id", how="left")
        .group_by("trace_id", "h", maintain_order=True)
        .agg(n=(pl.col("start_ms") <= pl.col("at_ms")).sum())
    )
    return before.group_by("trace_id").agg(pl.col("n").sort().cast(pl.Utf8).str.join(",").alias("handoffs"))


def _retry_flags(scope: Scope) -> pl.DataFrame:
    """(trace_id, pos, retry): whether an executed call retries the executed call before it (`model.retries`:
    the same operation, right after it failed), which `trajectory_match` folds into one step."""
    return scope.executed().select("trace_id", "pos", "retry")


def _tools_compared_by_args(case: Case, comparators: Collection[str]) -> set[str]:
    tools = set()
    for step in case.expected_steps:
        if step.args is None:
            continue
        rule = args_rule(case, step.tool)
        if rule.mode != "ignore" or rule.compare is not None or step.tool in comparators:
            tools.add(step.tool)
    return tools


def output_keys(scope: Scope) -> pl.DataFrame:
    """trace_id -> key: the case, the error and the output, for task cases."""
    wanted = scope.case_frame(wanted=(lambda c: c is not None and c.is_task, pl.Boolean))
    frame = scope.batch.traces.select("trace_id", "case_key", "error_type", "output").join(
        wanted, on="case_key", how="left"
    )
    key = pl.concat_str(
        [
            pl.col("case_key"),
            pl.col("error_type").fill_null(_NULL),
            pl.when(pl.col("output").is_null())
            .then(pl.lit(_NULL))
            .otherwise(pl.concat_str([pl.lit("="), pl.col("output")])),
        ],
        separator=_SEP,
    )
    return frame.select("trace_id", pl.when(pl.col("wanted").fill_null(False)).then(key).alias("key"))
