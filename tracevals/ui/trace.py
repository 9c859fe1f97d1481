"""One trace as a page shows it: the span tree with a waterfall, each model and tool call with what was
captured of it, faults and injections, retry chains, and the findings each evaluator attached.

Everything comes from one lookup of the trace (`queries.lookup.trace_lookups`: the trace's files found
by their Bloom filters, the views computed over its rows only), never from a scan of the lake.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from tracevals.evaluators.evaluator import executed_calls
from tracevals.model.calls import operation_key_of
from tracevals.model.findings import failure_kinds, findings_of
from tracevals.model.json_text import loads as json_loads
from tracevals.model.retries import retry_chains
from tracevals.model.score import Score, parsed_details
from tracevals.model.trajectory import ToolCall, Trajectory
from tracevals.queries.lookup import trace_lookups

__all__ = ["SpanRow", "TraceView", "load_trace"]

# An attempt of a computed run: its calls are the trajectory its report read (the evaluators' own list,
# cheaper than computing `steps` again); any other trace: its calls from `steps`.
TRACE_VIEWS = ("spans", "steps", "message_parts", "scores")
ATTEMPT_VIEWS = ("spans", "message_parts", "scores")
_EXCLUDED_ATTRIBUTES = ("gen_ai.input.messages", "gen_ai.output.messages")  # shown as messages instead


@dataclass
class SpanRow:
    span_id: str
    parent_span_id: str | None
    depth: int
    name: str
    kind: str | None
    start_ms: float  # from the trace's start
    duration_ms: float | None
    status: str | None
    status_message: str | None
    error_type: str | None
    row: dict[str, Any]  # every column of the `spans` view
    attributes: list[tuple[str, Any]]
    events: list[dict[str, Any]]
    step: dict[str, Any] | None = None  # its row of `steps` (a model or tool call)
    position: int | None = None  # 1-based among the executed tool calls (what `name#position` names)
    messages: list[dict[str, Any]] = field(default_factory=list)
    injection: dict[str, Any] | None = None
    chain: str | None = None  # "retry 2 of the chain started by <span>" where it is one
    findings: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TraceView:
    trace_id: str
    session_id: str | None
    spans: list[SpanRow]
    total_ms: float
    chains: list[list[str]]  # span ids of each retry chain, first call first
    verdicts: list[dict[str, Any]]  # one per evaluator: passed, score, reason, kinds, findings
    unplaced: list[dict[str, Any]]  # findings that name no step of this trace
    run_id: str | None = None
    task_id: str | None = None
    variant: str | None = None
    attempt: int | None = None

    @property
    def names(self) -> dict[str, str]:
        return {s.span_id: s.name for s in self.spans}


def _ms(value: Any) -> float:
    return value.timestamp() * 1000.0 if value is not None else 0.0


def _attributes(text: str | None) -> list[tuple[str, Any]]:
    try:
        data = json_loads(text or "{}")
    except ValueError:
        return [("(attributes, not JSON)", text)]
    if not isinstance(data, dict):
        return [("(attributes)", text)]
    return [(k, v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)) for k, v in sorted(data.items())]


def _events(text: str | None) -> list[dict[str, Any]]:
    try:
        data = json_loads(text or "[]")
    except ValueError:
        return [{"name": "(events, not JSON)", "attributes": [("text", text)]}]
    out = []
    for e in data if isinstance(data, list) else []:
        if isinstance(e, dict):
            attrs = e.get("attributes") if isinstance(e.get("attributes"), dict) else {}
            out.append({"name": str(e.get("name")), "attributes": _attributes(json.dumps(attrs))})
    return out


def _tree(rows: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """Depth-first, children by start time; a span whose parent is absent (or a cycle) is a root."""
    ids = {r["span_id"] for r in rows}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for r in rows:
        parent = r["parent_span_id"] if r["parent_span_id"] in ids and r["parent_span_id"] != r["span_id"] else None
        children.setdefault(parent, []).append(r)
    for kids in children.values():
        kids.sort(key=lambda r: (_ms(r["start_time"]), r["span_id"]))
    out: list[tuple[dict[str, Any], int]] = []
    seen: set[str] = set()
    # a stack, not recursion: a chain of spans each beneath the last (a recursive agent, thousands deep)
    # would pass Python's recursion limit
    stack = [(r, 0) for r in reversed(children.get(None, []))]
    while stack:
        r, depth = stack.pop()
        if r["span_id"] in seen:
            continue
        seen.add(r["span_id"])
        out.append((r, depth))
        stack.extend((kid, depth + 1) for kid in reversed(children.get(r["span_id"], [])))
    for r in rows:  # spans only reachable through a cycle
        if r["span_id"] not in seen:
            seen.add(r["span_id"])
            out.append((r, 0))
    return out


def load_trace(
    con: duckdb.DuckDBPyConnection,
    trace_id: str,
    trajectory: Trajectory | None = None,
    verdicts: Sequence[Score] | None = None,
) -> TraceView | None:
    """The trace's page, or None when the lake holds no span of it; `trajectory`: the attempt as a run's
    report read it, when one did (see `ATTEMPT_VIEWS`); `verdicts`: what a computed report counted for
    it (stored or computed then), else the scores stored in the lake."""
    tables = trace_lookups(con, trace_id, ATTEMPT_VIEWS if trajectory is not None else TRACE_VIEWS)
    rows = [r for r in tables["spans"].to_pylist() if r["trace_id"] == trace_id]
    if not rows:
        return None
    start = min(_ms(r["start_time"]) for r in rows)
    end = max(_ms(r["end_time"]) or _ms(r["start_time"]) for r in rows)
    spans = []
    for r, depth in _tree(rows):
        spans.append(
            SpanRow(
                span_id=r["span_id"], parent_span_id=r["parent_span_id"], depth=depth, name=r["name"], kind=r["kind"],
                start_ms=_ms(r["start_time"]) - start, duration_ms=r["duration_ms"], status=r["status_code"],
                status_message=r["status_message"], error_type=r["error_type"], row=r,
                attributes=[(k, v) for k, v in _attributes(r["attributes"]) if k not in _EXCLUDED_ATTRIBUTES],
                events=_events(r["events"]),
            )
        )  # fmt: skip
    by_id = {s.span_id: s for s in spans}
    if trajectory is None:  # the executed calls as the trajectory loader reads them from `steps`
        trajectory = Trajectory(trace_id, tool_calls=_calls(tables["steps"].to_pylist()))
    chains = _from_trajectory(by_id, trajectory, {s.span_id: dict(s.attributes) for s in spans})
    _place_messages(by_id, tables["message_parts"].to_pylist())
    stored = [s for s in tables["scores"].to_pylist() if s["trace_id"] == trace_id]
    if verdicts is not None:
        stored = [{"evaluator": v.evaluator, "passed": v.passed, "score": v.score, "reason": v.reason,
                   "details": json.dumps(v.details, default=str)} for v in verdicts]  # fmt: skip
    shown, unplaced = _verdicts(by_id, stored)
    root = next((s.row for s in spans if s.depth == 0), rows[0])
    facts = {k: next((r[k] for r in rows if r.get(k) is not None), None) for k in ("session_id", "run_id", "task_id",
             "variant", "attempt")}  # fmt: skip
    return TraceView(
        trace_id=trace_id,
        session_id=facts["session_id"] or root.get("session_id"),
        spans=spans,
        total_ms=max(end - start, 0.001),
        chains=chains,
        verdicts=shown,
        unplaced=unplaced,
        run_id=facts["run_id"],
        task_id=facts["task_id"],
        variant=facts["variant"],
        attempt=facts["attempt"],
    )


def _calls(steps: Sequence[dict[str, Any]]) -> tuple[ToolCall, ...]:
    """A trace's tool calls from its `steps` rows, in step order, each with the operation identity the
    writer recorded (`calls.operation_key_of`, as the trajectory loader and the `retries` view read it)."""
    calls = []
    for step in sorted(steps, key=lambda s: s["step_index"] or 0):
        if step["step_kind"] != "tool":
            continue
        key = operation_key_of(step["name"], step["args"], step["args_hash"])
        calls.append(ToolCall(name=step["name"] or "", error_type=step["error_type"], span_id=step["span_id"] or "",
                              gap=bool(step["is_gap"]), op_key=key))  # fmt: skip
    return tuple(calls)


def _from_trajectory(
    by_id: Mapping[str, SpanRow], trajectory: Trajectory, attributes: Mapping[str, Mapping[str, Any]]
) -> list[list[str]]:
    """Call positions and retry chains from the attempt's executed calls (the evaluators' own list: a
    finding's `name#position` counts among them), and the faults and prompts the harness injected."""
    calls = executed_calls(trajectory)
    for position, call in enumerate(calls, start=1):
        span = by_id.get(call.span_id)
        if span is not None:
            span.position, span.step = position, {"name": call.name}
    for span_id, attrs in attributes.items():
        kind = attrs.get("tracevals.injection.kind")
        if kind is not None and span_id in by_id:
            by_id[span_id].injection = {"injection_kind": kind, "injection_type": attrs.get("tracevals.injection.type")}
    chains = [[calls[i].span_id for i in chain] for chain in retry_chains(calls) if len(chain) > 1]
    for chain in chains:
        for n, span_id in enumerate(chain, start=1):
            if span_id in by_id:
                by_id[span_id].chain = f"call {n} of a retry chain of {len(chain)}"
    return chains


def _place_messages(by_id: Mapping[str, SpanRow], parts: Sequence[dict[str, Any]]) -> None:
    for part in sorted(parts, key=lambda p: (p["direction"] or "", p["message_index"] or 0, p["part_index"] or 0)):
        span = by_id.get(part["call_span_id"] or "") or by_id.get(part["span_id"] or "")
        if span is not None:
            span.messages.append(part)


def _verdicts(
    by_id: Mapping[str, SpanRow], scores: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each evaluator's verdict, and its findings placed on the step they blame (`name#position`, the
    position among the executed tool calls, or a span id where a finding gives one)."""
    by_position = {s.position: s for s in by_id.values() if s.position is not None}
    verdicts, unplaced = [], []
    for s in sorted(scores, key=lambda s: (bool(s["passed"]), s["evaluator"])):
        details = parsed_details(s["details"])
        # the findings to show on a step: what went wrong or warns (notes and unknowns stay in the verdict)
        found = [
            {**f.to_json(), "problem": f.message}
            for f in findings_of(details)
            if f.severity in ("hazard", "failure", "warning")
        ]
        for f in found:
            target = by_id.get(str(f.get("span_id") or "")) or _at_call(by_position, f.get("call"))
            item = {"evaluator": s["evaluator"], **f}
            if target is not None:
                target.findings.append(item)
                item["span_id"] = target.span_id
            else:
                unplaced.append(item)
        verdicts.append(
            {
                "evaluator": s["evaluator"], "passed": s["passed"], "score": s["score"], "reason": s["reason"],
                "kinds": [] if s["passed"] else failure_kinds(s["evaluator"], details), "findings": found,
            }
        )  # fmt: skip
    return verdicts, unplaced


def _at_call(by_position: Mapping[int, SpanRow], call: Any) -> SpanRow | None:
    if not isinstance(call, str) or "#" not in call:
        return None
    name, _, number = call.rpartition("#")
    span = by_position.get(int(number)) if number.isdigit() else None
    return span if span is not None and span.step is not None and span.step["name"] == name else None
