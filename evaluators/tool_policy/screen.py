"""The set-at-a-time screen of `tool_policy` (see `frames.py` for what a screen promises).

Arguments are validated against the tool schemas once per distinct (case, tool, arguments). A trace
is `check` when a call is forbidden or not allowed, has invalid or uncaptured arguments under a
schema, is risky (or of unknown effect) under `requires_confirmation`, when a risky call follows a
successful lookup whose result holds candidates (a list of two objects or more an id tells apart: a
possible automatic choice), or when it has gap calls.
"""

from __future__ import annotations

import polars as pl

from tracevals.evaluators.arg_schemas import schema_error
from tracevals.evaluators.scope import Scope, finish, json_bool, json_int, json_object, share_text
from tracevals.evaluators.tool_policy.candidates import candidate_lists
from tracevals.evaluators.tool_policy.evaluator import has_rules
from tracevals.model.batch import parse_each
from tracevals.model.trajectory import HANDOFF_TOOL


def screen_policy(scope: Scope, allow_write_after_handoff: bool = False) -> pl.DataFrame:
    traces = scope.batch.traces.select("trace_id", "case_key")
    params = scope.case_frame(
        rules=(has_rules, pl.Boolean),
        confirm=(lambda c: c is not None and c.requires_confirmation, pl.Boolean),
        restricted=(lambda c: c is not None and c.allowed_tools is not None, pl.Boolean),
    )
    calls = scope.executed().join(params, on="case_key", how="left")
    calls = calls.join(_permissions(scope), on=["case_key", "name"], how="left").with_columns(
        pl.col("forbidden").fill_null(False), pl.col("allowed").fill_null(False)
    )
    calls = calls.join(_schema_verdicts(scope, calls), on=["case_key", "name", "args"], how="left", nulls_equal=True)
    # a successful lookup whose result holds a list, before a risky call of its trace: maybe candidates
    lookup = (
        ~pl.col("failed")
        & ~pl.col("risky")
        & (pl.col("name") != HANDOFF_TOOL)
        & pl.col("result").str.contains("[", literal=True)
    ).fill_null(False)
    last_risky = calls.filter("risky").group_by("trace_id").agg(last_risky=pl.col("epos").max())
    maybe = calls.filter(lookup).join(last_risky, on="trace_id").filter(pl.col("epos") < pl.col("last_risky"))
    listed = _with_candidates(maybe.get_column("result"))
    # the membership computed on its own first: the list inside the window (`.over`) was broadcast to every
    # trace's group (`tracevals score --follow` at 100,000 sessions 3.4x slower, and memory without end)
    calls = calls.with_columns(lookup_with_list=lookup & pl.col("result").is_in(listed.implode()).fill_null(False))
    calls = calls.with_columns(
        first_list_lookup=pl.when("lookup_with_list").then(pl.col("epos")).min().over("trace_id"),
    )
    not_permitted = pl.col("forbidden") | (pl.col("restricted") & ~pl.col("allowed") & (pl.col("name") != HANDOFF_TOOL))
    confirm_doubt = (
        pl.col("confirm") & (pl.col("name") != HANDOFF_TOOL) & (pl.col("risky") | pl.col("effect").is_null())
    )
    choice_doubt = pl.col("risky") & (pl.col("epos") > pl.col("first_list_lookup")).fill_null(False)
    calls = calls.with_columns(
        doubt=not_permitted | confirm_doubt | pl.col("schema_doubt").fill_null(False) | choice_doubt
    )
    per_trace = calls.group_by("trace_id").agg(
        n=pl.len(),
        doubt=pl.col("doubt").any(),
        any_risky=pl.col("risky").any(),
        handed_off=((pl.col("name") == HANDOFF_TOOL) & ~pl.col("failed")).any(),
    )
    gaps = scope.batch.calls.group_by("trace_id").agg(gaps=pl.col("gap").any())
    frame = (
        traces.join(params, on="case_key", how="left")
        .join(per_trace, on="trace_id", how="left")
        .join(gaps, on="trace_id", how="left")
        .with_columns(pl.col("n").fill_null(0), pl.col("doubt", "any_risky", "handed_off", "gaps").fill_null(False))
    )
    applicable = pl.col("rules") | pl.col("any_risky")
    status = (
        pl.when(~applicable)
        .then(pl.lit("na"))
        .when(pl.col("doubt") | pl.col("gaps") | (pl.col("confirm") & pl.lit(allow_write_after_handoff)))
        .then(pl.lit("check"))
        .otherwise(pl.lit("clean"))
    )
    reason = pl.concat_str(
        pl.col("n").cast(pl.Utf8),
        pl.lit(" calls, 0 in violation, 0 unknown; score="),
        share_text(pl.col("n"), pl.col("n")),
    )
    details = json_object(
        {
            "calls": json_int(pl.col("n")),
            "findings": pl.lit("[]"),
            "handed_off": json_bool(pl.col("handed_off")),
            "invalid_args": pl.lit("[]"),
            "requested_not_executed": pl.lit("[]"),
            "unknown": pl.lit("{}"),
            "violating_calls": pl.lit("[]"),
            "violations": pl.lit("[]"),
        }
    )
    return finish(frame, status, reason, details)


def _with_candidates(results: pl.Series) -> pl.Series:
    """The distinct `results` that hold candidates (`candidates.candidate_lists`, the evaluator's own rule,
    once per distinct result): a list that is not of two objects or more an id tells apart (names, one
    order) cannot lead to an automatic choice, and its trace is not sent to Python for it."""
    return pl.Series("result", [r for r in results.unique().to_list() if candidate_lists(r)], dtype=pl.Utf8)


def _permissions(scope: Scope) -> pl.DataFrame:
    """(case_key, name, forbidden, allowed) for every tool a case names."""
    rows = []
    for key in scope.batch.traces.get_column("case_key").unique().to_list():
        case = scope.case(key)
        if case is None:
            continue
        for tool in set(case.forbidden_actions) | set(case.allowed_tools or ()):
            rows.append((key, tool, tool in case.forbidden_actions, tool in (case.allowed_tools or ())))
    schema = {"case_key": pl.Utf8, "name": pl.Utf8, "forbidden": pl.Boolean, "allowed": pl.Boolean}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _schema_verdicts(scope: Scope, calls: pl.DataFrame) -> pl.DataFrame:
    """(case_key, name, args, schema_doubt): invalid or uncaptured arguments of a tool with a schema."""
    schema = {"case_key": pl.Utf8, "name": pl.Utf8, "args": pl.Utf8, "schema_doubt": pl.Boolean}
    keyed = [(k, c) for k in calls.get_column("case_key").unique().to_list() if (c := scope.case(k)) and c.tool_schemas]
    if not keyed:
        return pl.DataFrame(schema=schema)
    checked = []  # (key, its case, tool, arguments' text): each distinct call of a tool with a schema
    for key, case in keyed:
        tools = list(case.tool_schemas)
        distinct = (
            calls.filter((pl.col("case_key") == key) & pl.col("name").is_in(tools)).select("name", "args").unique()
        )
        checked += [(key, case, name, args) for name, args in distinct.iter_rows()]
    rows = []
    for (key, case, name, args), parsed in zip(checked, parse_each([c[3] for c in checked]), strict=True):
        doubt = parsed is None or schema_error(case.tool_schemas[name], parsed) is not None
        rows.append((key, name, args, doubt))
    return pl.DataFrame(rows, schema=schema, orient="row")
