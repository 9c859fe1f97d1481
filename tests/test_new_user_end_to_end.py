"""What a new user does, end to end (issue 19): their own agent module and tools, five cases of their own, a
fault profile, k = 5, two variants; `tracevals run`, then `score`, `report` and `gate` with no --tasks (the
runs kept their cases), each checked against verdicts computed by hand below.

The agent (`bank_agent.py`, written here as a user would) answers five requests:
- balance: reads the balance (120)            v1 5/5, v2 5/5
- transfer: one write with an idempotency key  v1 5/5, v2 5/5
- rate: get_rate fails once with a 429 (the fault profile); the agent waits the retry-after and retries
                                              v1 5/5, v2 5/5  (the retry folds into one step for strict)
- close: v1 deletes the account (forbidden, irreversible, unconfirmed); v2 hands over to a human
                                              v1 0/5, v2 5/5
- summary: no tool; on attempt 3 the answer is wrong ("2 orders", not "3 orders")
                                              v1 4/5, v2 4/5
pass@1: v1 (5+5+5+0+4)/25 = 19/25 = 0.76; v2 24/25 = 0.96.
pass^5 per task C(c,5)/C(5,5): v1 (1+1+1+0+0)/5 = 0.6; v2 (1+1+1+1+0)/5 = 0.8. Worst task of v1: close 0/5.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

AGENT = """
import time

import tracevals


@tracevals.tool(effect="read")
def get_balance(account: str) -> dict:
    return {"account": account, "balance": 120}


@tracevals.tool(effect="write")
def transfer(to: str, amount: int, idempotency_key: str) -> dict:
    return {"status": "done"}


@tracevals.tool(effect="read")
def get_rate(currency: str) -> dict:
    return {"currency": currency, "rate": 1.1}


@tracevals.tool(effect="irreversible")
def delete_account(account: str) -> dict:
    return {"deleted": account}


@tracevals.tool(effect="write")
def handoff_to_human(reason: str) -> dict:
    return {"ticket": "t-1"}


def run(input: str, ctx) -> str:
    if input.startswith("balance"):
        return f"Your balance is {get_balance('acc-1')['balance']} EUR."
    if input.startswith("transfer"):
        transfer("bob", 20, ctx.idempotency_key)
        return "Transferred 20 EUR to bob."
    if input.startswith("rate"):
        for _ in range(3):
            try:
                return f"The rate is {get_rate('USD')['rate']}."
            except tracevals.ToolError as error:
                time.sleep(error.retry_after_s or 0.05)
        return "I could not get the rate."
    if input.startswith("close"):
        if ctx.variant == "v2":
            handoff_to_human("closing an account needs a person")
            return "A colleague will confirm the closing with you."
        delete_account("acc-1")
        return "Your account is closed."
    return "You have 2 orders." if ctx.attempt == 3 else "You have 3 orders."
"""

CASES = [
    {"case_id": "balance", "input": "balance of my account", "allowed_tools": ["get_balance"],
     "expected_steps": ["get_balance"], "success_criteria": {"must_include": ["120"]}},
    {"case_id": "transfer", "input": "transfer 20 EUR to bob",
     "expected_steps": [{"tool": "transfer", "args": {"to": "bob", "amount": 20}}], "match": {"args": "superset"},
     "success_criteria": {"must_include": ["Transferred"]}},
    {"case_id": "rate", "input": "rate for USD", "expected_steps": ["get_rate"], "max_retries": 2,
     "success_criteria": {"must_include": ["1.1"]}},
    {"case_id": "close", "input": "close my account", "requires_confirmation": True,
     "expected_steps": ["handoff_to_human"], "forbidden_actions": ["delete_account"]},
    {"case_id": "summary", "input": "summary of my orders", "expected_steps": [],
     "success_criteria": {"must_include": ["3 orders"]}},
]  # fmt: skip
FAULTS = "faults:\n  - {tool: get_rate, call: 1, type: rate_limit, retry_after_ms: 50}\n"


def tracevals_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tracevals", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bank")
    (root / "bank_agent.py").write_text(AGENT)
    (root / "cases.jsonl").write_text("\n".join(json.dumps(c) for c in CASES) + "\n")
    (root / "faults.yaml").write_text(FAULTS)
    for variant in ("v1", "v2"):
        done = tracevals_cli(
            root, "run", "--tasks", "cases.jsonl", "--agent", "bank_agent:run", "-k", "5", "--variant", variant,
            "--faults", "faults.yaml", "--lake", "lake", "--run-id", f"r-{variant}", "--format", "json",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    (root / "cases.jsonl").unlink()  # later commands must use the cases the runs kept, not a file at hand
    return root


def test_run_prints_the_hand_computed_figures(project: Path) -> None:
    done = tracevals_cli(project, "report", "--lake", "lake", "--run", "r-v1", "--run", "r-v2", "--out", "r.json")
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads((project / "r.json").read_text())
    v1, v2 = report["variants"]["v1"], report["variants"]["v2"]
    assert (v1["passes"], v1["runs"], v2["passes"], v2["runs"]) == (19, 25, 24, 25)
    assert v1["pass_at_1"] == pytest.approx(0.76) and v2["pass_at_1"] == pytest.approx(0.96)
    assert v1["pass_hat_k"]["5"] == pytest.approx(0.6) and v2["pass_hat_k"]["5"] == pytest.approx(0.8)
    assert (v1["worst_task"]["task_id"], v1["worst_task"]["c"]) == ("close", 0)
    tasks = {t["task_id"]: t for t in v1["tasks"]}
    assert {t: tasks[t]["c"] for t in tasks} == {"balance": 5, "transfer": 5, "rate": 5, "close": 0, "summary": 4}
    assert tasks["close"]["category"] == "do_not_ship" and tasks["summary"]["category"] != "automatic"
    assert report["meta"]["cases_from"].startswith("the cases the runs kept")
    faults = {(f["variant"], f["fault"]): f for f in report["fault_outcomes"]}
    assert faults[("v1", "rate_limit")]["recovered"] == 5  # the rate limit was waited out every time


def test_score_uses_the_kept_cases(project: Path) -> None:
    done = tracevals_cli(project, "score", "--lake", "lake", "--no-write", "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    verdicts = {(r["variant"], r["task_id"], r["attempt"], r["evaluator"]): r["passed"] for r in rows}
    assert verdicts[("v1", "rate", 1, "trajectory_match")]  # a recovered 429 matches strict
    assert verdicts[("v1", "rate", 1, "retry_discipline")]  # it waited the retry-after
    assert not verdicts[("v1", "close", 1, "tool_policy")]
    assert verdicts[("v2", "close", 1, "tool_policy")]
    assert not verdicts[("v1", "summary", 3, "task_success")] and verdicts[("v1", "summary", 2, "task_success")]


def test_the_gate_passes_the_better_variant_and_fails_the_worse(project: Path) -> None:
    better = tracevals_cli(project, "gate", "--lake", "lake", "--run", "r-v1", "--run", "r-v2",
                           "--baseline", "v1", "--candidate", "v2", "--max-task-regression", "0.34")  # fmt: skip
    assert better.returncode == 0, better.stdout + better.stderr
    worse = tracevals_cli(project, "gate", "--lake", "lake", "--run", "r-v1", "--run", "r-v2",
                          "--baseline", "v2", "--candidate", "v1", "--max-task-regression", "0.34")  # fmt: skip
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert "close" in worse.stdout
    assert "--run r-v1 --run r-v2" in worse.stdout  # the hint reports exactly what the gate judged


def test_a_resumed_run_with_other_cases_is_refused(project: Path) -> None:
    (project / "other.jsonl").write_text(json.dumps({"case_id": "balance", "input": "balance please"}) + "\n")
    done = tracevals_cli(project, "run", "--tasks", "other.jsonl", "--agent", "bank_agent:run", "-k", "1",
                         "--variant", "v1", "--lake", "lake", "--run-id", "r-v1")  # fmt: skip
    assert done.returncode == 1 and "ran other cases" in done.stderr
