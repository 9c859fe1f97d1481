"""Issue 35: `score` and `report` take prices and options from the same places, and an unknown cost is
unknown on both: never a fail, never a pass, never $0.

Attempts of a model no price table knows are recorded by the real harness into a real lake; the
scoring config that prices it is handed to `tracevals score --config` and `tracevals report
--scoring-config` (one environment variable serves both), and the cost figures are checked by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from opentelemetry import trace

import tracevals
from tracevals.cli import main
from tracevals.harness import run_cases
from tracevals.model.attempt import AttemptContext
from tracevals.model.tasks import case_from_dict

MODEL = "helpdesk-llm-unpriced"
CASE = {"case_id": "reset", "input": "reset my password", "budgets": {"max_cost_usd": 1.5}}
# USD per million tokens: 1000 input tokens at 1000 + 500 output tokens at 2000 = 1.0 + 1.0 = 2.0 USD
CONFIG = f"prices:\n  {MODEL}: {{input: 1000, output: 2000}}\n"


def agent(task: str, ctx: AttemptContext) -> str:
    tracer = trace.get_tracer("helpdesk")
    with tracer.start_as_current_span(f"chat {MODEL}") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.request.model", MODEL)
        span.set_attribute("gen_ai.response.model", MODEL)
        span.set_attribute("gen_ai.usage.input_tokens", 1000)
        span.set_attribute("gen_ai.usage.output_tokens", 500)
    return "Your password was reset."


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lake = tmp_path_factory.mktemp("prices") / "lake"
    telemetry = tracevals.instrument(lake=lake, batch=False)
    try:
        run_cases(agent, [case_from_dict(CASE)], k=2, run_id="r1", variant="v", concurrency=1)
    finally:
        telemetry.shutdown()
    return lake


def _report(lake: Path, out: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["report", "--lake", str(lake), "--run", "r1", "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def test_an_unpriced_model_is_unknown_cost_on_every_surface(lake: Path, tmp_path: Path) -> None:
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    tasks = tmp_path / "cases.jsonl"
    tasks.write_text(json.dumps(CASE) + "\n")
    scored = CliRunner().invoke(main, ["score", "--lake", str(copy), "--tasks", str(tasks), "--format", "json"])
    assert scored.exit_code == 0, scored.output
    [budget, _budget2] = [r for r in json.loads(scored.stdout) if r["evaluator"] == "step_budget"]
    # neither a fail nor a lower score: the check is left out, and said (it was 0.667-like before)
    assert (budget["passed"], budget["score"]) == (True, 1.0)
    assert [f["kind"] for f in budget["findings"]] == ["budget_unknown"]
    assert f"no price for model '{MODEL}'" in budget["findings"][0]["message"]
    doc = _report(copy, tmp_path / "report.json")
    v = doc["variants"]["v"]
    assert (v["passes"], v["cost_known"], v["avg_cost"]) == (2, 0, None)  # unknown, not $0.000
    assert [a["cost"] for a in doc["attempts"]] == [None, None]


def test_score_and_report_price_from_the_same_config(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    config = tmp_path / "scoring.yaml"
    config.write_text(CONFIG)
    monkeypatch.setenv("TRACEVALS_SCORING_CONFIG", str(config))  # what a nightly job sets once for both
    tasks = tmp_path / "cases.jsonl"
    tasks.write_text(json.dumps(CASE) + "\n")
    scored = CliRunner().invoke(main, ["score", "--lake", str(copy), "--tasks", str(tasks), "--format", "json"])
    assert scored.exit_code == 0, scored.output
    budgets = [r for r in json.loads(scored.stdout) if r["evaluator"] == "step_budget"]
    assert [(b["passed"], b["reason"]) for b in budgets] == [
        (False, "1 budgets, 1 exceeded, 0 unknown; score=0/1=0.000; cost_usd 2 > 1.5")
    ] * 2
    doc = _report(copy, tmp_path / "report.json")
    v = doc["variants"]["v"]
    # the report prices the attempts as score did: 2.0 USD each, and the budget's verdict is the stored one
    assert (v["passes"], v["cost_known"], v["avg_cost"], v["total_cost"]) == (
        0,
        2,
        pytest.approx(2.0),
        pytest.approx(4.0),
    )
    assert [a["failed_by"] for a in doc["attempts"]] == [["step_budget: budget_exceeded"]] * 2
    # and a report that scores the attempts itself (nothing stored) with the same config says the same
    fresh = tmp_path / "fresh"
    shutil.copytree(lake, fresh)
    again = _report(fresh, tmp_path / "again.json", "--tasks", str(tasks))
    assert [(a["passed"], a["cost"], a["failed_by"]) for a in again["attempts"]] == [
        (False, pytest.approx(2.0), ["step_budget: budget_exceeded"])
    ] * 2
