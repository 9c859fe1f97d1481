"""A batch of trajectories as Polars frames: what the set-at-a-time evaluators read.

`Batch.traces` has one row per trace (`TRACE_SCHEMA`), `Batch.calls` one row per tool call in
trajectory order (`CALL_SCHEMA`; `pos` is the index in `Trajectory.tool_calls`), `Batch.handoffs` one
row per structured hand-off. `Batch.from_trajectories` and `Batch.trajectories` convert both ways
and lose nothing an evaluator reads, so the per-trajectory `evaluate` and the frame path see the same
data. Arguments travel as JSON text; `op_key` (see `calls.operation_key`) is computed once, here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import polars as pl

from tracevals.model import calls
from tracevals.model.attempt import attempt_fields
from tracevals.model.calls import args_text, operation_key
from tracevals.model.trajectory import Handoff, SpanFacts, ToolCall, Trajectory

_STR, _I64, _F64, _BOOL = pl.Utf8, pl.Int64, pl.Float64, pl.Boolean
USAGE_TYPE = pl.List(pl.Struct({"model": _STR, "input_tokens": _I64, "output_tokens": _I64}))
FACT_COLUMNS = {
    "span_count": _I64,
    "root_present": _BOOL,
    "root_ended": _BOOL,
    "orphan_spans": _I64,
    "open_spans": _I64,
    "dangling_calls": _I64,
    "end_marker": _BOOL,
    "end_status": _STR,
    "terminal": _STR,
    "turn": _I64,
    "session_traces": _I64,
    "turns_expected": _I64,
}
TRACE_SCHEMA: dict[str, Any] = {
    "trace_id": _STR,
    "session_id": _STR,
    "run_id": _STR,
    "task_id": _STR,
    "attempt": _I64,
    "variant": _STR,
    "output": _STR,
    "error_type": _STR,
    "model_calls": _I64,
    "input_tokens": _I64,
    "output_tokens": _I64,
    "start_ms": _F64,
    "end_ms": _F64,
    "input": _STR,
    "cost_usd": _F64,
    "model_usage": USAGE_TYPE,
    "facts_loaded": _BOOL,
    **FACT_COLUMNS,
    "root_span_id": _STR,  # batch only: where a `gen_ai.evaluation.result` event is parented
}
CALL_SCHEMA: dict[str, Any] = {
    "trace_id": _STR,
    "pos": _I64,
    "name": _STR,
    "args": _STR,  # JSON text of an object, None when not captured
    "op_key": _STR,
    "result": _STR,
    "error_type": _STR,
    "start_ms": _F64,
    "end_ms": _F64,
    "span_id": _STR,
    "call_id": _STR,
    "effect": _STR,
    "retry_after_ms": _F64,
    "idempotency_key": _STR,
    "gap": _BOOL,
    "status_code": _I64,
    "retryable": _BOOL,
    "args_hash": _STR,
    "injection_kind": _STR,
    "injection_type": _STR,
    "injection_id": _STR,
    "injection_goal": _STR,
    "clock_start_ms": _F64,
    "clock_end_ms": _F64,
    "asked_by": _STR,
}
HANDOFF_SCHEMA: dict[str, Any] = {
    "trace_id": _STR,
    "at_ms": _F64,
    "reason": _STR,
    "completed": pl.List(_STR),
    "pending": pl.List(_STR),
    "candidates": pl.List(_STR),
}
_CALL_POSITIONAL = [f.name for f in fields(ToolCall)]  # the fields in order, op_key (computed here) last
_CALL_FIELDS = [n for n in _CALL_POSITIONAL if n != "op_key"]
# SpanFacts are built positionally from these columns (it is the hot loop of the reference path)
assert list(FACT_COLUMNS) == [f.name for f in fields(SpanFacts)], "FACT_COLUMNS must follow SpanFacts"
_TRAJECTORY_COLUMNS = [n for n in TRACE_SCHEMA if n not in FACT_COLUMNS and n not in ("facts_loaded", "root_span_id")]
_CALL_DEFAULTS = (("start_ms", 0.0), ("end_ms", 0.0), ("span_id", ""), ("gap", False))  # for nulls


@dataclass(frozen=True)
class Batch:
    traces: pl.DataFrame
    calls: pl.DataFrame
    handoffs: pl.DataFrame

    def __len__(self) -> int:
        return self.traces.height

    @classmethod
    def empty(cls) -> Batch:
        return cls(
            pl.DataFrame(schema=TRACE_SCHEMA), pl.DataFrame(schema=CALL_SCHEMA), pl.DataFrame(schema=HANDOFF_SCHEMA)
        )

    @classmethod
    def from_trajectories(cls, trajectories: Iterable[Trajectory]) -> Batch:
        traces: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        handoffs: list[dict[str, Any]] = []
        for t in trajectories:
            traces.append(_trace_row(t))
            for pos, c in enumerate(t.tool_calls):
                row = {name: getattr(c, name) for name in _CALL_FIELDS}
                row.update(trace_id=t.trace_id, pos=pos, args=_dump(c.args), op_key=operation_key(c))
                calls.append(row)
            handoffs += [{"trace_id": t.trace_id, **_handoff_row(h)} for h in t.handoffs]
        return cls(
            pl.DataFrame(traces, schema=TRACE_SCHEMA),
            pl.DataFrame(calls, schema=CALL_SCHEMA),
            pl.DataFrame(handoffs, schema=HANDOFF_SCHEMA),
        )

    @classmethod
    def concat(cls, batches: Sequence[Batch]) -> Batch:
        """One batch of the traces of `batches` (of disjoint sessions: the chunks of one scoring run)."""
        if not batches:
            return cls.empty()
        if len(batches) == 1:
            return batches[0]
        return cls(
            *(pl.concat([getattr(b, n) for b in batches], how="vertical") for n in ("traces", "calls", "handoffs"))
        )

    def select(self, trace_ids: Sequence[str] | pl.Series) -> Batch:
        """The traces with these ids (and their calls and hand-offs)."""
        ids = pl.Series("trace_id", list(trace_ids), dtype=_STR).implode()
        return Batch(
            self.traces.filter(pl.col("trace_id").is_in(ids)),
            self.calls.filter(pl.col("trace_id").is_in(ids)),
            self.handoffs.filter(pl.col("trace_id").is_in(ids)),
        )

    def trajectories(self) -> list[Trajectory]:
        """Every trace as a `Trajectory`, in `traces` order. Reads whole columns at a time (row dicts
        cost more than the objects they build)."""
        calls: dict[str, list[ToolCall]] = {}
        ordered = self.calls.sort(["trace_id", "pos"]).with_columns(
            pl.col(name).fill_null(default) for name, default in _CALL_DEFAULTS
        )
        # ToolCall is built positionally, its fields in order (the hot loop of the reference path)
        columns = [
            parse_each(ordered.get_column("args").to_list()) if name == "args" else ordered.get_column(name).to_list()
            for name in _CALL_POSITIONAL
        ]
        for trace_id, values in zip(ordered.get_column("trace_id").to_list(), zip(*columns, strict=True), strict=True):
            calls.setdefault(trace_id, []).append(ToolCall(*values))
        handoffs: dict[str, list[Handoff]] = {}
        for row in self.handoffs.sort(["trace_id", "at_ms"]).iter_rows(named=True):
            handoffs.setdefault(row["trace_id"], []).append(
                Handoff(
                    at_ms=row["at_ms"] or 0.0,
                    reason=row["reason"],
                    completed=tuple(row["completed"] or ()),
                    pending=tuple(row["pending"] or ()),
                    candidates=tuple(row["candidates"] or ()),
                )
            )
        columns = [self.traces.get_column(name).to_list() for name in _TRAJECTORY_COLUMNS]
        facts = [self.traces.get_column(name).to_list() for name in FACT_COLUMNS]
        loaded = self.traces.get_column("facts_loaded").to_list()
        out = []
        for i, values in enumerate(zip(*columns, strict=True)):
            trace_id = values[0]
            row = dict(zip(_TRAJECTORY_COLUMNS, values, strict=True))
            span_facts = SpanFacts(*(column[i] for column in facts)) if loaded[i] else None
            out.append(_trajectory(row, tuple(calls.get(trace_id, ())), tuple(handoffs.get(trace_id, ())), span_facts))
        return out


def parse_each(texts: Iterable[str | None]) -> list[dict[str, Any] | None]:
    """Each captured argument text as a dict (`calls.parse_args`: anything that is not a JSON object counts as
    not captured), each distinct text parsed once (the same texts recur across a batch; equal texts share one
    dict). What it remembers lives as long as the call: a cache of the process held the texts of every batch a
    worker had scored, 65,536 of them (~30 MiB, and a Python heap left fragmented, at 10^7 spans)."""
    parsed: dict[str | None, dict[str, Any] | None] = {}
    out = []
    for text in texts:
        if text in parsed:
            out.append(parsed[text])
        else:
            out.append(parsed.setdefault(text, calls.parse_args(text)))
    return out


def _dump(args: dict[str, Any] | None) -> str | None:
    return None if args is None else args_text(args)


def _trace_row(t: Trajectory) -> dict[str, Any]:
    row: dict[str, Any] = {
        name: getattr(t, name)
        for name in TRACE_SCHEMA
        if name not in FACT_COLUMNS and name not in ("model_usage", "facts_loaded", "root_span_id")
    }
    row["model_usage"] = [{"model": m, "input_tokens": i, "output_tokens": o} for m, i, o in t.model_usage]
    row["facts_loaded"] = t.spans is not None
    facts = t.spans or SpanFacts()
    row.update({name: getattr(facts, name) for name in FACT_COLUMNS})
    return row


def _handoff_row(h: Handoff) -> dict[str, Any]:
    return {
        "at_ms": h.at_ms,
        "reason": h.reason,
        "completed": list(h.completed),
        "pending": list(h.pending),
        "candidates": list(h.candidates),
    }


def _trajectory(
    row: dict[str, Any], calls: tuple[ToolCall, ...], handoffs: tuple[Handoff, ...], facts: SpanFacts | None
) -> Trajectory:
    usage = tuple((u["model"], u["input_tokens"] or 0, u["output_tokens"] or 0) for u in row["model_usage"] or ())
    return Trajectory(
        trace_id=row["trace_id"],
        tool_calls=calls,
        **attempt_fields(row),
        output=row["output"],
        error_type=row["error_type"],
        model_calls=row["model_calls"] or 0,
        input_tokens=row["input_tokens"] or 0,
        output_tokens=row["output_tokens"] or 0,
        start_ms=row["start_ms"] or 0.0,
        end_ms=row["end_ms"] or 0.0,
        input=row["input"],
        model_usage=usage,
        cost_usd=row["cost_usd"],
        handoffs=handoffs,
        spans=facts,
    )


# The operation key of a call whose span recorded its arguments' digest, as SQL over the batch loader's
# columns (`name`, `args_hash`): `operation_key_of`'s first rule, computed by DuckDB for every such call.
OP_KEY_SQL = "CASE WHEN {c}.args_hash <> '' THEN coalesce({c}.name, '') || '(#' || {c}.args_hash || ')' END"
# Whether a call's recorded arguments may carry an idempotency key of their own (`idempotency_key_in`): every
# spelling of it contains "dempotency", unless the JSON spells a letter of it as a \u escape. Calls for which
# this is false (and that have an op_key) are settled by SQL alone.
KEY_IN_ARGS_SQL = "(contains({c}.args, 'dempotency') OR contains({c}.args, '\\u'))"


def with_op_keys(calls_frame: pl.DataFrame) -> pl.DataFrame:
    """`calls_frame` with `op_key` (the operation identity of `calls.operation_key_of`, computed once per
    distinct recorded call) and `idempotency_key` filled from the arguments where the span recorded none.

    Calls that already carry an `op_key` (the loader's SQL, `OP_KEY_SQL`) and whose arguments cannot hold
    an idempotency key (`tv_args_key` false) are left as they are: Python parses only the rest."""
    if "op_key" not in calls_frame.columns:
        calls_frame = calls_frame.with_columns(op_key=pl.lit(None, dtype=pl.Utf8))
    if "tv_args_key" not in calls_frame.columns:
        calls_frame = calls_frame.with_columns(tv_args_key=pl.lit(True))
    settled = pl.col("op_key").is_not_null() & (
        pl.col("idempotency_key").is_not_null() | pl.col("args").is_null() | ~pl.col("tv_args_key").fill_null(True)
    )
    todo = calls_frame.filter(~settled).select("name", "args", "args_hash").unique()
    if not todo.height:
        return calls_frame.drop("tv_args_key")
    computed = [
        (calls.operation_key_of(n, a, h), calls.idempotency_key_in(calls.parse_args(a))) for n, a, h in todo.iter_rows()
    ]
    todo = todo.with_columns(
        pl.Series("tv_op_key", [c[0] for c in computed], dtype=pl.Utf8),
        pl.Series("tv_key_in_args", [c[1] for c in computed], dtype=pl.Utf8),
    )
    joined = calls_frame.join(
        todo, on=["name", "args", "args_hash"], how="left", nulls_equal=True, maintain_order="left"
    )
    return joined.with_columns(
        op_key=pl.coalesce("op_key", "tv_op_key"),
        idempotency_key=pl.coalesce("idempotency_key", "tv_key_in_args"),
    ).drop("tv_op_key", "tv_key_in_args", "tv_args_key")
