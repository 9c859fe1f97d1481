"""Acceptance: variance attribution on the demo separates the simulated world's flakiness from the model's.

The simulator's randomness is seeded and keyed (`tracevals.simulator.rng`), the world's faults are drawn
from each attempt's seed (`tracevals.harness.faults`), so the split is known in advance:

- a disciplined model (no mistakes) in a flaky world: every bit of flakiness is the world's; with the
  tools frozen every attempt of a task meets the same world and gives the same verdict, so the model's
  and the agent's parts are exactly 0;
- the demo (`tracevals demo --attribute-variance`: the baseline model, seeded mistakes, in the flaky
  world): both sources show, the parts add up to the live flakiness, and nothing is left once the model
  is frozen too (the reference agent is deterministic), so the agent's part is exactly 0.

Real runs against the simulated model server, through `tracevals run --attribute-variance` and
`tracevals demo --attribute-variance`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracevals.cli import main
from tracevals.demo import tasks_path
from tracevals.simulator import SimulatedModelServer

# cases of every group, the fault cases among them (their own call-indexed faults are no randomness)
CASES = ("clear_01", "clear_02", "clear_05", "confirm_02", "fault_01", "fault_02", "fault_03", "vague_01")


def _tasks(tmp: Path) -> Path:
    lines = [line for line in tasks_path().read_text(encoding="utf-8").splitlines() if line.strip()]
    chosen = [line for line in lines if json.loads(line)["case_id"] in CASES]
    path = tmp / "cases.jsonl"
    path.write_text("\n".join(chosen) + "\n", encoding="utf-8")
    return path


def _attribute(tmp: Path, model: str, *more: str) -> dict[str, Any]:
    with SimulatedModelServer() as server:
        args = ["run", "--tasks", str(_tasks(tmp)), "--agent", "tracevals.demo.agent:order_support_agent",
                "-k", "3", "--lake", str(tmp / "lake"), "--run-id", "attr", "--attribute-variance",
                "--setting", f"base_url={server.base_url}", "--setting", f"model={model}", "--format", "json",
                *more]  # fmt: skip
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)["attribution"]
    return doc


def test_a_disciplined_model_in_a_flaky_world_is_all_the_worlds(tmp_path: Path) -> None:
    world = tmp_path / "world.yaml"
    world.write_text(
        "faults:\n  - {tool: get_orders, probability: 0.4, type: empty}\n"
        "  - {tool: search_customer, probability: 0.2, type: server_error}\n",
        encoding="utf-8",
    )
    doc = _attribute(tmp_path, "order-support-disciplined", "--faults", str(world))
    live = doc["levels"]["live"]["flakiness"]
    assert live > 0  # the seeded draws fire on some attempts and not on others
    assert doc["levels"]["tools-frozen"]["flakiness"] == 0.0 and doc["levels"]["frozen"]["flakiness"] == 0.0
    assert doc["sources"]["world"]["flakiness"] == pytest.approx(live)
    assert doc["sources"]["model"]["flakiness"] == 0.0 and doc["sources"]["agent"]["flakiness"] == 0.0
    assert doc["main_source"] == "world" and doc["sources"]["world"]["share"] == pytest.approx(1.0)
    assert "most flakiness is the world (tools)'s (100%)" in doc["statement"]
    # the frozen levels replayed the reference: every call answered from it, none ran live
    assert doc["levels"]["frozen"]["live_calls"] == 0


def test_the_demo_splits_its_flaky_world_from_its_model(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["demo", "--attribute-variance", "-k", "2", "--out", str(tmp_path), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)["attribution"]
    live = doc["levels"]["live"]["flakiness"]
    assert live > 0 and doc["sources"]["agent"]["flakiness"] == 0.0
    assert doc["sources"]["world"]["flakiness"] > 0 and doc["sources"]["model"]["flakiness"] > 0
    parts = sum(doc["sources"][s]["flakiness"] for s in ("world", "model", "agent"))
    assert parts == pytest.approx(live)
    assert doc["levels"]["frozen"]["pass_hat_k"] >= doc["levels"]["live"]["pass_hat_k"]
    # with everything frozen every call is answered by the reference and every task repeats itself
    assert doc["levels"]["frozen"]["live_calls"] == 0 and doc["levels"]["frozen"]["consistency"] == 1.0
    assert doc["levels"]["frozen"]["flakiness"] == 0.0
