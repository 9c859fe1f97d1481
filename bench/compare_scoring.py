"""Trajectory scoring side by side: tracevals' trajectory_match, LangChain agentevals' trajectory match
and pydantic-evals' span-based evaluators, on the same trajectories.

    .venv/bin/python bench/compare_scoring.py [--per-mode 3000] [--repeat 3] [--json FILE]

Throughput: `--per-mode` trajectories for each of two configurations every tool has (strict with exact
arguments, superset ignoring arguments) and one agentevals lacks (in order): four order-support tasks,
each copy correct or perturbed (a call missing, an extra call, two calls swapped, an argument changed).
Each tool gets the trajectory in the form it reads, built before the clock starts (agentevals: OpenAI
chat messages; pydantic-evals: a `SpanTree`; tracevals: `Trajectory` objects, and for the batch path
the frames `Batch.from_trajectories` makes). Timed: scoring alone, `--repeat` times, in one process per
tool (each peer in its own virtual environment). tracevals is timed twice: `TrajectoryMatch.evaluate`
per trajectory (the same shape of work as the peers), and `score_batch` (set at a time: one evaluation
per distinct case and call sequence, what `tracevals score` runs).

Verdicts: a handful of trajectories where the tools disagree, each with which verdict is right and why.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PEERS, Figure, PeerUnavailable, Section, distribution_versions, last_lines, peer_python

TASKS = {
    "refund": ["search_customer", "get_orders", "refund_order", "send_message"],
    "status": ["search_customer", "get_orders", "get_order"],
    "address": ["search_customer", "update_address", "send_message"],
    "cancel": ["get_order", "cancel_order", "send_message", "send_message"],
}
CONFIGS = [("strict", "exact"), ("superset", "ignore"), ("in_order", "ignore")]


def _turns(calls: list[tuple[str, dict[str, Any]]], prefix: str) -> list[dict[str, Any]]:
    return [
        {"text": "", "calls": [{"id": f"{prefix}_{i}", "name": n, "args": a, "executed": True}]}
        for i, (n, a) in enumerate(calls)
    ]


def throughput_corpus(per_mode: int, seed: int = 7) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for mode, args_mode in CONFIGS:
        for k in range(per_mode):
            task = rnd.choice(list(TASKS))
            customer = f"cus_{task}"  # a task case expects fixed arguments; the perturbations vary
            expected = [(name, {"customer_id": customer, "step": i}) for i, name in enumerate(TASKS[task])]
            actual = list(expected)
            change = rnd.choice(["ok", "ok", "missing", "extra", "swap", "args"])
            if change == "missing":
                actual.pop(rnd.randrange(len(actual)))
            elif change == "extra":
                actual.insert(
                    rnd.randrange(len(actual) + 1), ("get_orders", {"customer_id": customer, "step": rnd.randrange(99)})
                )
            elif change == "swap":
                i = rnd.randrange(len(actual) - 1)
                actual[i], actual[i + 1] = actual[i + 1], actual[i]
            elif change == "args":
                i = rnd.randrange(len(actual))
                actual[i] = (actual[i][0], {**actual[i][1], "customer_id": "cus_wrong"})
            tid = f"{mode}-{k}"
            out.append(
                {
                    "id": tid,
                    "task": task,
                    "mode": mode,
                    "args_mode": args_mode,
                    "user": f"please {task}",
                    "expected": [list(e) for e in expected],
                    "turns": _turns(actual, tid),
                    "final": "done",
                }
            )
    return out


def _one(name: str, args: dict[str, Any], cid: str, executed: bool = True, **kw: Any) -> dict[str, Any]:
    return {"id": cid, "name": name, "args": args, "executed": executed, **kw}


# Each: the trajectory, the verdict that is right, and why. `start` orders calls that ran in parallel.
VERDICT_CASES: list[dict[str, Any]] = [
    {
        "id": "repeated-tool",
        "label": "same tool twice, different arguments; one expected call accepts any arguments",
        "mode": "superset",
        "args_mode": "superset",
        "user": "refund order B",
        "expected": [["get_order", {}], ["get_order", {"order_id": "B"}]],
        "turns": [
            {"calls": [_one("get_order", {"order_id": "B"}, "c1")]},
            {"calls": [_one("get_order", {"order_id": "A"}, "c2")]},
        ],
        "right": True,
        "why": "pairing A with the open step and B with the B step satisfies both; a greedy first fit gives "
        "B to the open step and then finds no B",
    },
    {
        "id": "gap",
        "label": "a requested refund_order never ran (no tool span, no tool result)",
        "mode": "superset",
        "args_mode": "ignore",
        "user": "refund my order",
        "expected": [["get_order", None], ["refund_order", None]],
        "turns": [
            {"calls": [_one("get_order", {"order_id": "A"}, "c1")]},
            {"calls": [_one("refund_order", {"order_id": "A"}, "c2", executed=False)]},
        ],
        "final": "Your refund is done.",
        "right": False,
        "why": "the refund was only requested; reading the model's messages counts the request as the call",
    },
    {
        "id": "order",
        "label": "refund before the lookup; the case needs lookup then refund (in order)",
        "mode": "in_order",
        "args_mode": "ignore",
        "user": "refund my order",
        "expected": [["get_order", None], ["refund_order", None]],
        "turns": [
            {"calls": [_one("refund_order", {"order_id": "A"}, "c1")]},
            {"calls": [_one("get_order", {"order_id": "A"}, "c2")]},
        ],
        "right": False,
        "why": "the order is the requirement; a superset check cannot see it",
    },
    {
        "id": "batched",
        "label": "the same two calls in the same order, requested in one model turn instead of two",
        "mode": "strict",
        "args_mode": "exact",
        "user": "order status",
        "expected": [["search_customer", {"name": "Ada"}], ["get_orders", {"customer_id": "c1"}]],
        "turns": [
            {
                "calls": [
                    _one("search_customer", {"name": "Ada"}, "c1", start=0),
                    _one("get_orders", {"customer_id": "c1"}, "c2", start=1),
                ]
            }
        ],
        "right": True,
        "why": "the calls, their arguments and their order are identical; how the model grouped them into "
        "turns is not part of the trajectory",
    },
    {
        "id": "parallel",
        "label": "two parallel get_weather calls from one model turn; London's span started first",
        "mode": "strict",
        "args_mode": "exact",
        "user": "weather in Paris and London",
        "expected": [["get_weather", {"city": "Paris"}], ["get_weather", {"city": "London"}]],
        "reference_turns": [[0, 1]],
        "turns": [
            {
                "calls": [
                    _one("get_weather", {"city": "Paris"}, "c1", start=5),
                    _one("get_weather", {"city": "London"}, "c2", start=0),
                ]
            }
        ],
        "right": True,
        "why": "calls requested together run concurrently: their start order is an accident, not the agent's choice",
    },
    {
        "id": "retry",
        "label": "send_message failed with a 429 and was sent again (two model turns)",
        "mode": "strict",
        "args_mode": "ignore",
        "user": "tell the customer",
        "expected": [["send_message", None]],
        "turns": [
            {"calls": [_one("send_message", {"text": "hi"}, "c1", error="rate_limit")]},
            {"calls": [_one("send_message", {"text": "hi"}, "c2")]},
        ],
        "right": None,
        "why": "a design choice: strict means exactly these calls, and a retried call was made twice "
        "(tracevals judges retries in retry_discipline); counting only successful attempts is also defensible",
    },
    {
        "id": "subset-args",
        "label": "subset mode, argument mode subset; the agent left out an optional argument",
        "mode": "subset",
        "args_mode": "subset",
        "user": "tell the customer",
        "expected": [["send_message", {"customer_id": "c1", "text": "shipped"}]],
        "turns": [{"calls": [_one("send_message", {"customer_id": "c1"}, "c1")]}],
        "right": True,
        "why": "both tools document argument mode subset as 'the actual arguments are a subset of the "
        "expected ones' ({customer_id} is); agentevals' subset mode swaps the two sides, so its argument "
        "check becomes superset",
    },
]


# ---------------------------------------------------------------- tracevals


def as_tracevals(t: dict[str, Any]) -> tuple[Any, Any]:
    from tracevals.model.tasks import case_from_dict
    from tracevals.model.trajectory import ToolCall, Trajectory

    calls = []
    for k, turn in enumerate(t["turns"]):
        for c in sorted(turn["calls"], key=lambda c: c.get("start", 0)):
            start = 1000.0 * k + c.get("start", 0)
            calls.append(
                ToolCall(
                    name=c["name"],
                    args=c.get("args"),
                    error_type=c.get("error"),
                    start_ms=start,
                    end_ms=start + 1,
                    call_id=c["id"],
                    gap=not c["executed"],
                )
            )
    case_id = f"{t.get('task', t['id'])}-{t['mode']}-{t['args_mode']}"
    steps = [{"tool": n} if a is None else {"tool": n, "args": a} for n, a in t["expected"]]
    case = case_from_dict(
        {
            "case_id": case_id,
            "input": t["user"],
            "expected_steps": steps,
            "match": {"mode": t["mode"], "args": t["args_mode"]},
        }
    )
    return Trajectory(trace_id=t["id"], tool_calls=tuple(calls), task_id=case_id), case


def run_tracevals(corpus: dict[str, list[dict[str, Any]]], repeat: int) -> dict[str, Any]:
    from tracevals.evaluators.apply import score_batch
    from tracevals.evaluators.trajectory_match.evaluator import TrajectoryMatch
    from tracevals.model.batch import Batch
    from tracevals.scoring.cases import attach_cases

    match = TrajectoryMatch()
    result: dict[str, Any] = {"rates": {}, "batch_rates": {}, "verdicts": {}}
    for mode, args_mode in CONFIGS:
        items = [as_tracevals(t) for t in corpus["throughput"] if (t["mode"], t["args_mode"]) == (mode, args_mode)]
        cases = list({c.case_id: c for _, c in items}.values())
        batch = Batch.from_trajectories([t for t, _ in items])
        runs, batch_runs = [], []
        for _ in range(repeat):
            started = time.perf_counter()
            passed = sum(match.evaluate(t, c).passed for t, c in items)  # type: ignore[union-attr]
            runs.append(len(items) / (time.perf_counter() - started))
            started = time.perf_counter()
            scores = score_batch(attach_cases(batch, cases), [match])
            batch_runs.append(len(items) / (time.perf_counter() - started))
            assert int(scores["passed"].sum()) == passed, "the batch path and evaluate() disagree"
        key = f"{mode}/{args_mode}"
        result["rates"][key] = {"runs": runs, "n": len(items), "passed": passed}
        result["batch_rates"][key] = {"runs": batch_runs, "n": len(items), "passed": passed}
    for t in corpus["verdicts"]:
        trajectory, case = as_tracevals(t)
        score = match.evaluate(trajectory, case)
        assert score is not None
        result["verdicts"][t["id"]] = {"passed": score.passed, "note": "", "reason": score.reason}
    return result


# ---------------------------------------------------------------- the peers


def run_peer(peer: str, script: str, corpus_file: Path, repeat: int) -> dict[str, Any]:
    python = peer_python(peer)
    out = corpus_file.with_name(f"{peer}.out.json")
    cmd = [str(python), str(PEERS / script), str(corpus_file), str(out), "--repeat", str(repeat)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise PeerUnavailable(f"{peer}: {script} exited {done.returncode}: {last_lines(done.stderr)}")
    result: dict[str, Any] = json.loads(out.read_text())
    result["versions"] = distribution_versions(
        python, {"agentevals": ["agentevals"], "pydantic_evals": ["pydantic-evals"]}[peer]
    )
    return result


def _verdict(v: dict[str, Any] | None) -> str:
    if v is None:
        return "not run"
    if v["passed"] is None:
        return f"n/a ({v['note']})"
    word = "pass" if v["passed"] else "fail"
    return f"{word} ({v['note']})" if v.get("note") else word


def verdict_table(results: dict[str, dict[str, Any]]) -> str:
    head = "| case | mode / args | tracevals | agentevals | pydantic-evals | right verdict | why |"
    rows = [head, "|---|---|---|---|---|---|---|"]
    for case in VERDICT_CASES:
        got = {name: r.get("verdicts", {}).get(case["id"]) for name, r in results.items()}
        right = {True: "pass", False: "fail", None: "depends"}[case["right"]]
        rows.append(
            f"| {case['label']} | {case['mode']} / {case['args_mode']} | {_verdict(got.get('tracevals'))} | "
            f"{_verdict(got.get('agentevals'))} | {_verdict(got.get('pydantic_evals'))} | {right} | {case['why']} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-mode", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    cmd = f".venv/bin/python bench/compare_scoring.py --per-mode {args.per_mode} --repeat {args.repeat}"
    section = Section("scoring", "Trajectory scoring: tracevals vs agentevals vs pydantic-evals", cmd)
    corpus = {"throughput": throughput_corpus(args.per_mode), "verdicts": VERDICT_CASES}
    results: dict[str, dict[str, Any]] = {"tracevals": run_tracevals(corpus, args.repeat)}
    with tempfile.TemporaryDirectory(prefix="tracevals-scoring-") as tmp:
        corpus_file = Path(tmp) / "corpus.json"
        corpus_file.write_text(json.dumps(corpus))
        for peer, script in (
            ("agentevals", "agentevals_trajectories.py"),
            ("pydantic_evals", "pydantic_evals_trajectories.py"),
        ):
            try:
                results[peer] = run_peer(peer, script, corpus_file, args.repeat)
                section.versions.update(results[peer].pop("versions"))
            except (PeerUnavailable, OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                section.errors.append(f"{peer} could not run: {exc}")
    ours = results["tracevals"]
    for mode, args_mode in CONFIGS:
        key = f"{mode}/{args_mode}"
        compared = False
        for peer, label in (("agentevals", "agentevals"), ("pydantic_evals", "pydantic-evals")):
            theirs = results.get(peer, {}).get("rates", {}).get(key)
            if theirs is None:
                continue
            compared = True
            for path, rates in (("evaluate() per trajectory", "rates"), ("score_batch (set at a time)", "batch_rates")):
                section.figures.append(
                    Figure(
                        f"{key}: tracevals {path} vs {label}",
                        "trajectories/s",
                        ours[rates][key]["runs"],
                        True,
                        label,
                        theirs["runs"],
                    )
                )
        if not compared:
            for path, rates in (("evaluate() per trajectory", "rates"), ("score_batch (set at a time)", "batch_rates")):
                section.figures.append(Figure(f"{key}: tracevals {path}", "trajectories/s", ours[rates][key]["runs"]))
        passes = {name: r.get("rates", {}).get(key, {}).get("passed") for name, r in results.items()}
        section.notes.append(
            f"{key}: {args.per_mode:,} trajectories; passed: "
            + ", ".join(f"{name} {n:,}" for name, n in passes.items() if n is not None)
        )
    section.tables.append(verdict_table(results))
    section.notes += [
        "pydantic-evals' agentic evaluators compare tool names only, so they are timed on the configurations that "
        "ignore arguments; its in-order verdict is an F1 score (passed = 1.0), which extra calls lower.",
        "agentevals has no in-order mode; in the verdict table such a case is scored with superset, its nearest mode.",
        "score_batch evaluates once per distinct (case, call sequence): with arguments ignored many trajectories "
        "share a key, so its rate depends on how repetitive the traffic is (production and repeated test runs are).",
    ]
    section.print()
    print(section.tables[0])
    section.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
