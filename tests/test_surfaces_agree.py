"""Issue 35, acceptance 1: every surface gives every attempt the same verdict.

A seeded generator of agents (tools with effects, natural and injected faults, retries with and without
idempotency keys, duplicates, hand-offs, admitted and unadmitted failures, a tool that calls another,
answers or exceptions, as pytest tests too) runs through `tracevals run`, `score`, `report`, `gate` and
the pytest plugin. For each attempt: `run`, `score` and `report` give the same pass/fail and hazards,
`run` and `report` the same release category, and the gate's checks list exactly the tasks the report
puts in each category and hazard; the pytest plugin passes a test exactly when `report` on its lake
counts every attempt passed. Hypothesis shrinks a disagreement to the smallest agent that shows it.

Cost: a fixed number of derandomized examples, each a whole pipeline (run in this process, pytest in a
subprocess; about 12 s of CPU each): the explicit example of the issue plus `TRACEVALS_SURFACE_EXAMPLES`
generated ones (default 2; raise it to search further, e.g. 50 before a release).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tracevals.cli import main

TOOLS = {"lookup": "read", "fetch": "read", "open_ticket": "write", "wipe_device": "irreversible"}
CATEGORIES = ("automatic", "canary", "needs_confirmation", "do_not_ship")
HAZARDS = ("silent_failure", "duplicate_side_effect", "unauthorised_call", "endless_loop")

AGENT = '''
import json
import tracevals
from tracevals import ToolError

SPEC = json.loads({spec!r})
FAILS = {{}}
NOW = {{}}  # the attempt in progress (attempts run one at a time): its context and task


def _failing(name):
    """Whether this call of `name` fails on its own (a natural failure, not an injected one)."""
    ctx, task = NOW["ctx"], NOW["task"]
    for step in SPEC["tasks"][task]["steps"]:
        if step["tool"] == name and step["fail"] and (step["fail_on"] == "all" or ctx.attempt % 2 == 1):
            key = (ctx.session_id, name)
            FAILS[key] = FAILS.get(key, 0) + 1
            return FAILS[key] <= step["fail_times"]
    return False


def _make(name, effect):
    @tracevals.tool(effect=effect, name=name)
    def call(target, idempotency_key=None):
        if name == "fetch":  # a tool that calls another tool: two calls, each judged
            lookup(target)
        if _failing(name):
            raise ToolError(f"{{name}}: service unavailable", error_type="server_error", status_code=503)
        return {{"ok": True, "target": target}}
    return call


lookup = _make("lookup", "read")
fetch = _make("fetch", "read")
open_ticket = _make("open_ticket", "write")
wipe_device = _make("wipe_device", "irreversible")
TOOLS = {{"lookup": lookup, "fetch": fetch, "open_ticket": open_ticket, "wipe_device": wipe_device}}


@tracevals.tool(effect="write", name="handoff_to_human")
def handoff_to_human(reason, pending):
    return {{"queued": True}}


def run_task(task, ctx):
    spec = SPEC["tasks"][task]
    NOW.update(ctx=ctx, task=task)
    failed = False
    for i, step in enumerate(spec["steps"]):
        if step["handoff_before"]:
            handoff_to_human("needs a person", [step["tool"]])
        key = f"{{task}}-{{i}}-{{ctx.attempt}}" if step["key"] else None
        times = 2 if step["twice"] and ctx.attempt == SPEC["k"] else 1
        for _ in range(times):
            for attempt in range(step["retries"] + 1):
                try:
                    TOOLS[step["tool"]](f"d{{i}}", idempotency_key=key)
                    break
                except ToolError:
                    if attempt == step["retries"]:
                        failed = True
    if spec["answer"] == "raise":
        raise RuntimeError("the agent gave up")
    if failed and spec["answer"] == "admit":
        return "I couldn't reach the device service; please try again later."
    return "All done."


def agent(task_input, ctx):
    return run_task(ctx.task_id, ctx)
'''

PYTEST_FILE = """
import pytest
from {module} import run_task

{tests}
"""

step = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(sorted(TOOLS)),
        "fail": st.booleans(),
        "fail_on": st.sampled_from(["all", "odd"]),
        "fail_times": st.integers(1, 3),
        "retries": st.integers(0, 2),
        "key": st.booleans(),
        "twice": st.booleans(),
        "handoff_before": st.booleans(),
    }
)
case = st.fixed_dictionaries(
    {},
    optional={
        "max_retries": st.integers(0, 2),
        "requires_confirmation": st.just(True),
        "retry_policy": st.fixed_dictionaries({"require_idempotency_key": st.booleans()}),
        "success_criteria": st.just({"must_include": ["done"]}),
        "faults": st.sampled_from(
            [[{"tool": "lookup", "call": 1, "type": "timeout"}], [{"tool": "open_ticket", "call": 1, "type": "429"}]]
        ),
    },
)
task = st.fixed_dictionaries(
    {
        "steps": st.lists(step, min_size=1, max_size=3),
        "answer": st.sampled_from(["done", "admit", "raise"]),
        "case": case,
    }
)
spec = st.fixed_dictionaries({"tasks": st.lists(task, min_size=1, max_size=2), "k": st.integers(2, 3)})

# the pytest example: attempt k opens a ticket twice (its own key each time: a duplicate)
TICKET_TWICE = {
    "k": 2,
    "tasks": [
        {
            "steps": [
                dict(
                    tool="open_ticket",
                    fail=False,
                    fail_on="all",
                    fail_times=1,
                    retries=0,
                    key=False,
                    twice=True,
                    handoff_before=False,
                )
            ],
            "answer": "done",
            "case": {},
        }
    ],
}


def _invoke(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code in (0, 1), result.output + str(result.exception)
    return result


def _write_project(root: Path, generated: dict[str, Any]) -> str:
    module = f"surface_agent_{abs(hash(json.dumps(generated, sort_keys=True))):x}"
    tasks = {f"t{i}": t for i, t in enumerate(generated["tasks"])}
    resolved = {"k": generated["k"], "tasks": tasks}
    (root / f"{module}.py").write_text(AGENT.format(spec=json.dumps(resolved)))
    lines = [
        json.dumps({"case_id": tid, "input": f"do {tid}", **t["case"], "tool_effects": TOOLS})
        for tid, t in tasks.items()
    ]
    (root / "cases.jsonl").write_text("\n".join(lines) + "\n")
    marker = f"@pytest.mark.tracevals(k={generated['k']})"
    tests = "\n".join(
        f"{marker}\ndef test_{tid}(tracevals_ctx):\n    run_task({tid!r}, tracevals_ctx)\n" for tid in tasks
    )
    (root / f"test_{module}.py").write_text(PYTEST_FILE.format(module=module, tests=tests))
    return module


def _by_attempt(rows: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["task_id"], r["attempt"]): r for r in rows}


def _check_pytest(root: Path, module: str, pytester: pytest.Pytester) -> None:
    """The plugin's verdict per test against `report` on the lake the plugin wrote."""
    lake = root / "pytest-lake"
    result = pytester.runpytest_subprocess(
        str(root / f"test_{module}.py"), "--tracevals-lake", str(lake), "--tracevals-run-id", "p1",
        "--tracevals-variant", "v", "-p", "no:cacheprovider", "-rA",
    )  # fmt: skip
    text = "\n".join(result.outlines)
    verdicts = {tid: word for word, tid in re.findall(r"^(PASSED|FAILED) \S+::test_(t\d+)", text, flags=re.M)}
    _invoke("report", "--lake", str(lake), "--run", "p1", "--out", str(root / "pytest-report.json"))
    doc = json.loads((root / "pytest-report.json").read_text())
    for t in doc["variants"]["v"]["tasks"]:
        tid = t["task_id"].rsplit("test_", 1)[-1]
        assert verdicts[tid] == ("PASSED" if t["c"] == t["n"] else "FAILED"), (tid, t, text[-2000:])
        failed = re.search(rf"_ test_{tid} _+\n(\d+) of (\d+) attempts failed", text)  # its FAILURES section
        assert (int(failed.group(1)) if failed else 0) == t["n"] - t["c"], (tid, t, text[-2000:])


def _check_run_lake(root: Path, module: str, k: int) -> None:
    lake = str(root / "lake")
    ran = _invoke("run", "--tasks", str(root / "cases.jsonl"), "--agent", f"{module}:agent", "-k", str(k), "--lake",
                  lake, "--run-id", "r1", "--variant", "v", "--concurrency", "1", "--format", "json")  # fmt: skip
    by_run = _by_attempt(json.loads(ran.stdout)["attempts"])
    _invoke("report", "--lake", lake, "--out", str(root / "report.json"))
    by_report = _by_attempt(json.loads((root / "report.json").read_text())["attempts"])
    scored = json.loads(_invoke("score", "--lake", lake, "--no-write", "--format", "json").stdout)
    by_score: dict[tuple[str, int], dict[str, Any]] = {}
    for row in scored:
        got = by_score.setdefault((row["task_id"], row["attempt"]), {"passed": True, "hazards": set()})
        got["passed"] = got["passed"] and row["passed"]
        got["hazards"] |= {f["hazard"] for f in row["findings"] if f["severity"] == "hazard"}
    assert set(by_run) == set(by_report) == set(by_score)
    for key, r in by_report.items():
        said = {
            "run": (by_run[key]["passed"], by_run[key]["hazards"], by_run[key]["category"]),
            "score": (by_score[key]["passed"], sorted(by_score[key]["hazards"]), r["category"]),
        }
        assert said == {name: (r["passed"], r["hazards"], r["category"]) for name in said}, (key, r)
    gated = json.loads(_invoke("gate", "--lake", lake, "--candidate", "v", "--min-pass-rate", "0", "--format", "json",
                               *(a for c in (*CATEGORIES, *HAZARDS) for a in ("--forbid", c))).stdout)  # fmt: skip
    checks = {c["check"]: c for c in gated["checks"]}
    for category in CATEGORIES:
        assert set(checks[f"forbid:{category}"]["tasks"]) == {
            t for t, _ in by_report if by_report[(t, 1)]["category"] == category
        }
    for hazard in HAZARDS:
        assert set(checks[f"forbid:{hazard}"]["tasks"]) == {
            t for (t, _), r in by_report.items() if hazard in r["hazards"]
        }
    passes = sum(r["passed"] for r in by_report.values())
    assert checks["min_pass_rate"]["value"] == pytest.approx(passes / len(by_report))


@settings(
    max_examples=int(os.environ.get("TRACEVALS_SURFACE_EXAMPLES", "2")),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@example(generated=TICKET_TWICE)
@given(generated=spec)
def test_every_surface_gives_every_attempt_the_same_verdict(
    generated: dict[str, Any], pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("surfaces")
    module = _write_project(root, generated)
    sys.path.insert(0, str(root))
    try:
        _check_pytest(root, module, pytester)
        _check_run_lake(root, module, generated["k"])
    finally:
        sys.path.remove(str(root))
