"""The set-at-a-time screen of `injection` (see `frames.py` for what a screen promises).

Not applicable to traces with no injection marks whose case declares no faults or injections. Clean
when every injection is a fault that was recovered (a later call of the same tool succeeded, or, for
`slow`, the faulted call itself): the common outcome of a fault-injection suite. Prompt injections,
and any fault not recovered, go to the reference, as do names that JSON would have to escape.
"""

from __future__ import annotations

import polars as pl

from tracevals.evaluators.scope import CALL_LABEL, JSON_SAFE, Scope, finish, json_int, json_object, json_str

_SHAPING = ["empty", "malformed"]


def screen_injection(scope: Scope) -> pl.DataFrame:
    calls = scope.executed().with_columns(
        label=CALL_LABEL,
    )
    marked_traces = calls.filter(pl.col("injection_kind").is_not_null()).select("tix").unique()
    declared = scope.case_frame(
        declares=(lambda c: c is not None and bool(c.faults or c.injections), pl.Boolean),
        prompts=(lambda c: c is not None and bool(c.injections), pl.Boolean),
    )
    points = pl.concat([_marked_points(calls, marked_traces), _declared_points(scope, calls, marked_traces)])
    later = calls.select(
        "tix", "name", later_epos="epos", later_label="label", later_ok=~pl.col("failed"), later_type="injection_type"
    )
    recovery = (
        points.join(later, on=["tix", "name"], how="inner")
        .filter(
            pl.col("later_ok")
            & pl.when(pl.col("type") == "slow")
            .then(pl.col("later_epos") >= pl.col("epos"))
            .otherwise(pl.col("later_epos") > pl.col("epos"))
            & ~(pl.col("later_type").is_in(_SHAPING).fill_null(False) & (pl.col("later_epos") != pl.col("epos")))
        )
        .group_by("tix", "epos")
        .agg(pl.col("later_label").sort_by("later_epos").first().alias("by"))
    )
    points = points.join(recovery, on=["tix", "epos"], how="left").sort("tix", "order")
    safe = (
        pl.col("name").str.contains(JSON_SAFE)
        & pl.col("type").str.contains(JSON_SAFE)
        & pl.col("id").fill_null("x").str.contains(JSON_SAFE)
    )
    what = pl.concat_str([pl.lit("fault "), pl.col("type"), pl.lit(" at "), pl.col("label")])
    why = pl.concat_str([pl.col("by"), pl.lit(" succeeded")])
    item = json_object(  # one entry of details["injections"], as json.dumps(..., sort_keys=True) writes it
        {
            "at": json_str(pl.col("label")),
            "id": json_str(pl.col("id")),
            "kind": pl.lit('"fault"'),
            "outcome": pl.lit('"recovered"'),
            "type": json_str(pl.col("type")),
            "what": json_str(what),
            "why": json_str(why),
        }
    )
    finding = _recovered_finding(what, why)
    per_trace = points.group_by("tix").agg(
        trace_id=pl.col("trace_id").first(),
        n=pl.len(),
        recovered=(pl.col("by").is_not_null() & safe.fill_null(False)).all(),
        parts=pl.concat_str([what, pl.lit(" -> recovered ("), why, pl.lit(")")]).str.join("; "),
        items=item.str.join(", "),
        found=finding.str.join(", "),
    )
    frame = (
        scope.batch.traces.select("trace_id", "case_key")
        .join(declared, on="case_key", how="left")
        .join(per_trace.drop("tix"), on="trace_id", how="left")
        .with_columns(pl.col("n").fill_null(0))
    )
    marked_ids = calls.join(marked_traces, on="tix").get_column("trace_id").unique()
    other_ids = calls.join(_non_fault_marks(calls), on="tix").get_column("trace_id").unique()
    frame = frame.with_columns(
        marked=pl.col("trace_id").is_in(marked_ids.implode()), other_mark=pl.col("trace_id").is_in(other_ids.implode())
    )
    # the reference takes a trace's injections from its marks when it has any, else from its case
    undecided = pl.col("other_mark") | (~pl.col("marked") & pl.col("prompts").fill_null(False))
    reason, details = _clean_texts()
    status = (
        pl.when(undecided)
        .then(pl.lit("check"))
        .when(pl.col("n") == 0)
        .then(pl.lit("na"))
        .when(pl.col("recovered").fill_null(False))
        .then(pl.lit("clean"))
        .otherwise(pl.lit("check"))
    )
    return finish(frame, status, reason, details)


def _clean_texts() -> tuple[pl.Expr, pl.Expr]:
    """The reason and details of a clean trace (every injection a recovered fault), from its columns."""
    n = pl.col("n").cast(pl.Utf8)
    ones = pl.lit("1+").repeat_by(pl.col("n")).list.join("").str.strip_suffix("+")
    reason = pl.concat_str(
        [n, pl.lit(" injections, score=("), ones, pl.lit(")/"), n, pl.lit("=1.000; "), pl.col("parts")]
    )
    details = pl.concat_str(
        [pl.lit('{"findings": ['), pl.col("found"), pl.lit('], "injections": ['), pl.col("items"),
         pl.lit('], "outcomes": {"recovered": '), n, pl.lit("}}")]
    )  # fmt: skip
    return reason, details


def _recovered_finding(what: pl.Expr, why: pl.Expr) -> pl.Expr:
    """A recovered fault's entry of details["findings"], as `failures.outcome_finding` writes it."""
    evidence = {"fault": json_str(pl.col("type")), "id": json_str(pl.col("id")), "outcome": pl.lit('"recovered"')}
    return json_object(
        {
            "call": json_str(pl.col("label")),
            "evidence": json_object(evidence),
            "hazard": pl.lit("null"),
            "kind": pl.lit('"failure_recovered"'),
            "message": json_str(pl.concat_str([what, pl.lit(" -> recovered ("), why, pl.lit(")")])),
            "release": pl.lit("null"),
            "severity": pl.lit('"note"'),
            "step": json_int(pl.col("epos") + 1),
        }
    )


def _non_fault_marks(calls: pl.DataFrame) -> pl.DataFrame:
    """Traces with a mark other than a fault (a prompt injection): left to the reference."""
    marks = pl.col("injection_kind")
    return calls.filter(marks.is_not_null() & (marks != "fault")).select("tix").unique()


def _marked_points(calls: pl.DataFrame, marked: pl.DataFrame) -> pl.DataFrame:
    """Faults marked on the spans (traces with any mark take their injections from the marks only)."""
    faults = calls.join(marked, on="tix").filter(pl.col("injection_kind") == "fault")
    return faults.select(
        "tix", "trace_id", "name", "epos", "label", type=pl.col("injection_type").fill_null("unknown"),
        id="injection_id", order=pl.col("epos"),
    )  # fmt: skip


def _declared_points(scope: Scope, calls: pl.DataFrame, marked: pl.DataFrame) -> pl.DataFrame:
    """Faults the case declares, at the n-th call of their tool (when the attempt made that call)."""
    rows = [
        (key, str(f.get("tool")), int(f.get("call", 1)), str(f.get("type", "unknown")), f.get("id"), i)
        for key in scope.batch.traces.get_column("case_key").unique().to_list()
        if (case := scope.case(key)) is not None
        for i, f in enumerate(case.faults)
    ]
    schema = {"case_key": pl.Utf8, "name": pl.Utf8, "nth": pl.Int64, "type": pl.Utf8, "id": pl.Utf8, "order": pl.Int64}
    faults = pl.DataFrame(rows, schema=schema, orient="row")
    # the calls of the tools a case declares faults at, in traces with no mark: each one's number among its
    # tool's calls in the trace (a window over these few, not over every call of the batch)
    unmarked = calls.join(marked, on="tix", how="anti").join(
        faults.select("case_key", "name").unique(), on=["case_key", "name"], how="semi"
    )
    unmarked = unmarked.sort("tix", "epos").with_columns(
        nth=(pl.int_range(pl.len()).over(["tix", "name"]) + 1).cast(pl.Int64)
    )
    hit = unmarked.join(faults, on=["case_key", "name", "nth"], how="inner")
    return hit.select("tix", "trace_id", "name", "epos", "label", "type", "id", "order")
