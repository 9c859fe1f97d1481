"""Score bench trajectories with pydantic-evals' span-based evaluators (runs in bench/.venvs/pydantic_evals).

    bench/.venvs/pydantic_evals/bin/python bench/peers/pydantic_evals_trajectories.py CORPUS.json OUT.json [--repeat 3]

Each trajectory of CORPUS.json (see agentevals_trajectories.py) becomes a `SpanTree`: an agent root,
a `chat` span per model turn and an `execute_tool NAME` span (`gen_ai.tool.name`,
`gen_ai.tool.call.arguments`, error status when it failed) per call that ran, started in the order the
calls started. The evaluators compare tool names only, so they apply where arguments are ignored:
strict -> `TrajectoryMatch(order="exact")`, in_order -> `TrajectoryMatch(order="in_order")` (an F1
score; passed means 1.0), unordered -> `ToolCorrectness()`, superset ->
`ToolCorrectness(allow_extra=True)`; subset has no counterpart. Building the trees and contexts is not
timed; `evaluate(ctx)` is.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pydantic_evals.evaluators import ToolCorrectness, TrajectoryMatch
from pydantic_evals.evaluators.context import EvaluatorContext
from pydantic_evals.otel.span_tree import SpanNode, SpanTree

T0 = datetime(2026, 11, 29, tzinfo=timezone.utc)


def evaluator(mode: str) -> Any:
    return {
        "strict": TrajectoryMatch(expected_trajectory=[], order="exact"),
        "in_order": TrajectoryMatch(expected_trajectory=[], order="in_order"),
        "unordered": ToolCorrectness(expected_tools=[]),
        "superset": ToolCorrectness(expected_tools=[], allow_extra=True),
    }.get(mode)


def tree(t: dict[str, Any], number: int) -> SpanTree:
    trace_id = number + 1
    nodes = [
        SpanNode(
            name="invoke_agent",
            trace_id=trace_id,
            span_id=1,
            parent_span_id=None,
            start_timestamp=T0,
            end_timestamp=T0 + timedelta(seconds=1),
            attributes={},
        )
    ]
    span_id = 1
    for k, turn in enumerate(t["turns"]):
        span_id += 1
        at = T0 + timedelta(milliseconds=10 * k)
        nodes.append(
            SpanNode(
                name="chat model",
                trace_id=trace_id,
                span_id=span_id,
                parent_span_id=1,
                start_timestamp=at,
                end_timestamp=at + timedelta(milliseconds=5),
                attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "model"},
            )
        )
        for call in turn["calls"]:
            if not call["executed"]:
                continue
            span_id += 1
            start = T0 + timedelta(milliseconds=10 * k + 6, microseconds=call.get("start", 0))
            nodes.append(
                SpanNode(
                    name=f"execute_tool {call['name']}",
                    trace_id=trace_id,
                    span_id=span_id,
                    parent_span_id=1,
                    start_timestamp=start,
                    end_timestamp=start + timedelta(milliseconds=1),
                    attributes={
                        "gen_ai.tool.name": call["name"],
                        "gen_ai.tool.call.arguments": json.dumps(call.get("args") or {}),
                    },
                    status="error" if call.get("error") else "unset",
                )
            )
    spans = SpanTree()
    spans.add_spans(nodes)
    return spans


def context(t: dict[str, Any], number: int) -> EvaluatorContext[Any, Any, Any]:
    return EvaluatorContext(
        name=t["id"],
        inputs=t["user"],
        metadata=None,
        expected_output=None,
        output=t.get("final"),
        duration=0.0,
        _span_tree=tree(t, number),
        attributes={},
        metrics={},
    )


def configured(t: dict[str, Any]) -> Any:
    base = evaluator(t["mode"])
    if base is None:
        return None
    names = [name for name, _ in t["expected"]]
    if isinstance(base, TrajectoryMatch):
        return TrajectoryMatch(expected_trajectory=names, order=base.order)
    return ToolCorrectness(expected_tools=names, allow_extra=base.allow_extra)


def passed(result: Any) -> bool:
    value = result.value
    return bool(value) if isinstance(value, bool) else value >= 1.0


def main() -> int:
    corpus_path, out_path = sys.argv[1], sys.argv[2]
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    corpus = json.loads(Path(corpus_path).read_text())
    result: dict[str, Any] = {"rates": {}, "verdicts": {}}
    by_mode: dict[str, list[tuple[Any, Any]]] = {}
    for n, t in enumerate(corpus["throughput"]):
        ev = configured(t)
        if ev is not None and t["args_mode"] == "ignore":
            by_mode.setdefault(f"{t['mode']}/{t['args_mode']}", []).append((ev, context(t, n)))
    for key, items in by_mode.items():
        runs = []
        for _ in range(repeat):
            started = time.perf_counter()
            ok = sum(passed(ev.evaluate(ctx)) for ev, ctx in items)
            runs.append(len(items) / (time.perf_counter() - started))
        result["rates"][key] = {"runs": runs, "n": len(items), "passed": ok}
    for n, t in enumerate(corpus["verdicts"]):
        ev = configured(t)
        if ev is None:
            result["verdicts"][t["id"]] = {"passed": None, "note": f"no {t['mode']} mode"}
            continue
        out = ev.evaluate(context(t, n))
        note = "names only" if t["args_mode"] != "ignore" else ""
        if isinstance(out.value, float) and out.value < 1:
            note = f"score {out.value:.2f}" + (f", {note}" if note else "")
        result["verdicts"][t["id"]] = {"passed": passed(out), "note": note}
    Path(out_path).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
