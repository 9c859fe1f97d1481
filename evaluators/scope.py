"""What the set-at-a-time screens share: the scope of a batch (its frames plus the cases) and the
per-call columns every screen starts from.

A screen (`screen_*.py`) decides for each trace, with Polars expressions over the whole batch, one
of three things: not applicable (`na`), certainly clean (`clean`: the reference `evaluate` would give
score 1 with its standard reason and details, which the screen then writes itself), or `check`
(anything else, however unlikely: the reference `evaluate` scores those traces one by one). So the
verdicts are the reference's by construction wherever it matters; the screens only have to be
exact about "clean", and the equivalence tests hold them to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import polars as pl

from tracevals.model.batch import Batch
from tracevals.model.case import Case
from tracevals.model.findings import FindingKind
from tracevals.model.trajectory import HANDOFF_TOOL

NO_CASE = "\x00"  # the case key of traces scored without a case
SCREEN_SCHEMA = {"trace_id": pl.Utf8, "status": pl.Utf8, "reason": pl.Utf8, "details": pl.Utf8}
_TIMEOUT_PATTERN = "timeout|timedout|timed_out|deadline"


@dataclass(frozen=True)
class Scope:
    """A batch whose `traces` carry `case_key` (a key of `cases`, or `NO_CASE`), and those cases."""

    batch: Batch
    cases: Mapping[str, Case]

    def case(self, key: str) -> Case | None:
        return None if key == NO_CASE else self.cases.get(key)

    def case_frame(self, **columns: tuple[Callable[[Case | None], Any], Any]) -> pl.DataFrame:
        """One row per case key in the batch (`NO_CASE` included): `case_key` and the named columns,
        each `name=(function of the case or None, polars dtype)`."""
        keys = self.batch.traces.get_column("case_key").unique().to_list()
        data: dict[str, Any] = {"case_key": keys}
        schema: dict[str, Any] = {"case_key": pl.Utf8}
        for name, (fn, dtype) in columns.items():
            data[name] = [fn(self.case(k)) for k in keys]
            schema[name] = dtype
        return pl.DataFrame(data, schema=schema)

    def tool_effects(self) -> pl.DataFrame:
        """(case_key, name, case_effect): the effects the cases declare for tools."""
        rows = [
            (key, tool, effect)
            for key in self.batch.traces.get_column("case_key").unique().to_list()
            if (case := self.case(key)) is not None
            for tool, effect in case.tool_effects.items()
        ]
        return pl.DataFrame(rows, schema={"case_key": pl.Utf8, "name": pl.Utf8, "case_effect": pl.Utf8}, orient="row")

    @cached_property
    def _executed(self) -> pl.DataFrame:
        calls = self.batch.calls.filter(~pl.col("gap")).sort(["trace_id", "pos"])
        calls = calls.join(
            self.batch.traces.select("trace_id", "case_key"), on="trace_id", how="left", maintain_order="left"
        )
        calls = calls.join(self.tool_effects(), on=["case_key", "name"], how="left", maintain_order="left")
        squashed = pl.col("error_type").str.to_lowercase().str.replace_all(r"[ \-]", "")
        calls = calls.with_columns(tix=pl.col("trace_id").rle_id())
        first = pl.col("tix") != pl.col("tix").shift(1).fill_null(-1)
        start = pl.when(first).then(pl.int_range(pl.len())).forward_fill()
        calls = calls.with_columns(
            epos=pl.int_range(pl.len()) - start,
            effect=pl.coalesce("case_effect", "effect"),  # the case's word wins (model.calls.effect_of)
            failed=pl.col("error_type").is_not_null(),
        )
        # `model.retries`: the same operation as the executed call before it in the trace, which failed. A shift
        # masked where the trace changes: a window or a shift per group costs far more over many short traces.
        same_trace = ~first
        retry = same_trace & pl.col("failed").shift(1) & (pl.col("op_key") == pl.col("op_key").shift(1))
        return calls.with_columns(retry=retry.fill_null(False)).with_columns(
            risky=(pl.col("effect").is_in(["write", "irreversible"]) & (pl.col("name") != HANDOFF_TOOL)).fill_null(
                False
            ),
            timeout=(
                pl.col("error_type").is_not_null()
                & (squashed.str.contains(_TIMEOUT_PATTERN).fill_null(False) | pl.col("status_code").is_in([408, 504]))
            ).fill_null(False),
            identity_known=pl.col("args").is_not_null() | pl.col("args_hash").is_not_null(),
        )

    def executed(self) -> pl.DataFrame:
        """The executed calls, sorted by trace then position, with `case_key`, `tix` (a number per trace),
        `epos` (0-based among the trace's executed calls), the resolved `effect`, and `failed`, `retry` (the
        call retries the one before it: `model.retries`), `risky`, `timeout`, `identity_known`. Computed once
        per scope."""
        return self._executed


def json_object(fields: Mapping[str, pl.Expr]) -> pl.Expr:
    """A JSON object text as `json.dumps(..., sort_keys=True)` writes it, from expressions that each
    already render one value as JSON text (see `json_int`, `json_bool`, `json_str`)."""
    parts: list[pl.Expr] = [pl.lit("{")]
    for i, key in enumerate(sorted(fields)):
        parts.append(pl.lit(("" if i == 0 else ", ") + f'"{key}": '))
        parts.append(fields[key])
    parts.append(pl.lit("}"))
    return pl.concat_str(parts)


def json_int(expr: pl.Expr) -> pl.Expr:
    return pl.when(expr.is_null()).then(pl.lit("null")).otherwise(expr.cast(pl.Int64).cast(pl.Utf8))


def json_bool(expr: pl.Expr) -> pl.Expr:
    return pl.when(expr.fill_null(False)).then(pl.lit("true")).otherwise(pl.lit("false"))


def json_str(expr: pl.Expr) -> pl.Expr:
    """A string from a known vocabulary (no quotes or backslashes to escape), or null."""
    return pl.when(expr.is_null()).then(pl.lit("null")).otherwise(pl.concat_str([pl.lit('"'), expr, pl.lit('"')]))


# A call's label in reasons and details, `evaluator.call_label`'s `name#position` (position: 1-based among the
# trace's executed calls), over the columns of `Scope.executed`.
CALL_LABEL = pl.concat_str([pl.col("name"), pl.lit("#"), (pl.col("epos") + 1).cast(pl.Utf8)])


# Names (of tools, of fault types ...) that a screen may write into reasons and JSON details as they are: nothing
# to escape. A trace with any other name is left to the reference (`check`), which escapes it.
JSON_SAFE = r"^[A-Za-z0-9_.:\-]+$"


def finding_json(kind: FindingKind, severity: str, **columns: pl.Expr) -> pl.Expr:
    """One finding of `kind` as `findings_json` stores it in a score's details (`json.dumps(sort_keys=True)`):
    the kind's own fields from the kind itself, the others (`message`, `step`, `call`, `evidence`) from
    `columns`, each already JSON text (`json_str`, `json_int` ...; an absent one is the finding's default)."""
    stored = kind("", severity=severity).to_json()
    return json_object({key: columns.get(key, pl.lit(json.dumps(value))) for key, value in stored.items()})


def share_text(good: pl.Expr, total: pl.Expr) -> pl.Expr:
    """`evaluator.share`'s arithmetic for a full score: `n/n=1.000`, or `1.000 (nothing to check)`."""
    return (
        pl.when(total == 0)
        .then(pl.lit("1.000 (nothing to check)"))
        .otherwise(pl.concat_str([good.cast(pl.Utf8), pl.lit("/"), total.cast(pl.Utf8), pl.lit("=1.000")]))
    )


def finish(frame: pl.DataFrame, status: pl.Expr, reason: pl.Expr, details: pl.Expr) -> pl.DataFrame:
    """The screen's result: `trace_id`, `status`, and the clean rows' reason and details."""
    clean = status == "clean"
    return frame.select(
        "trace_id",
        status.alias("status"),
        pl.when(clean).then(reason).alias("reason"),
        pl.when(clean).then(details).alias("details"),
    ).cast(SCREEN_SCHEMA)  # type: ignore[arg-type]
