"""Score bench trajectories with LangChain agentevals' trajectory match (runs in bench/.venvs/agentevals).

    bench/.venvs/agentevals/bin/python bench/peers/agentevals_trajectories.py CORPUS.json OUT.json [--repeat 3]

CORPUS.json is written by bench/compare_scoring.py: {"throughput": [...], "verdicts": [...]}, each a
trajectory in the bench's neutral form (model turns with the calls they requested, which of them ran,
the expected calls, the match and argument modes). Here each becomes what agentevals reads: OpenAI chat
messages (the user message, one assistant message per model turn with its `tool_calls`, one `tool`
message per call that ran, the final answer), and the reference the same way from the expected calls.
Building the messages is not timed; scoring is (`create_trajectory_match_evaluator(...)(outputs=...,
reference_outputs=...)`). agentevals has no in-order mode: such a case is scored with `superset`, its
nearest mode, and says so.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from agentevals.trajectory.match import create_trajectory_match_evaluator

MODES = {
    "strict": "strict",
    "unordered": "unordered",
    "superset": "superset",
    "subset": "subset",
    "in_order": "superset",
}


def _call(call: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call["id"],
        "type": "function",
        "function": {"name": call["name"], "arguments": json.dumps(call.get("args") or {})},
    }


def messages(t: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": t["user"]}]
    for turn in t["turns"]:
        out.append(
            {"role": "assistant", "content": turn.get("text", ""), "tool_calls": [_call(c) for c in turn["calls"]]}
        )
        out += [
            {"role": "tool", "tool_call_id": c["id"], "content": c.get("error") or '{"ok": true}'}
            for c in turn["calls"]
            if c["executed"]
        ]
    out.append({"role": "assistant", "content": t.get("final", "done")})
    return out


def reference(t: dict[str, Any]) -> list[dict[str, Any]]:
    groups = t.get("reference_turns") or [[i] for i in range(len(t["expected"]))]
    out: list[dict[str, Any]] = [{"role": "user", "content": t["user"]}]
    for g, indices in enumerate(groups):
        calls = [{"id": f"ref_{g}_{i}", "name": t["expected"][i][0], "args": t["expected"][i][1]} for i in indices]
        out.append({"role": "assistant", "content": "", "tool_calls": [_call(c) for c in calls]})
        out += [{"role": "tool", "tool_call_id": c["id"], "content": '{"ok": true}'} for c in calls]
    out.append({"role": "assistant", "content": "done"})
    return out


def main() -> int:
    corpus_path, out_path = sys.argv[1], sys.argv[2]
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    corpus = json.loads(Path(corpus_path).read_text())
    evaluators = {
        (m, a): create_trajectory_match_evaluator(trajectory_match_mode=MODES[m], tool_args_match_mode=a)
        for m in MODES
        for a in ("exact", "ignore", "subset", "superset")
    }
    result: dict[str, Any] = {"rates": {}, "verdicts": {}}
    by_mode: dict[tuple[str, str], list[tuple[Any, Any]]] = {}
    for t in corpus["throughput"]:
        if t["mode"] == "in_order":  # no such mode: a rate for another mode would not be comparable
            continue
        by_mode.setdefault((t["mode"], t["args_mode"]), []).append((messages(t), reference(t)))
    for (mode, args_mode), items in by_mode.items():
        evaluate = evaluators[(mode, args_mode)]
        runs = []
        for _ in range(repeat):
            started = time.perf_counter()
            passed = sum(bool(evaluate(outputs=o, reference_outputs=r)["score"]) for o, r in items)
            runs.append(len(items) / (time.perf_counter() - started))
        result["rates"][f"{mode}/{args_mode}"] = {"runs": runs, "n": len(items), "passed": passed}
    for t in corpus["verdicts"]:
        verdict = evaluators[(t["mode"], t["args_mode"])](outputs=messages(t), reference_outputs=reference(t))
        note = "no in-order mode: scored as superset" if t["mode"] == "in_order" else ""
        result["verdicts"][t["id"]] = {"passed": bool(verdict["score"]), "note": note}
    Path(out_path).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
