"""The evaluator registry, plugins through a real `tracevals.evaluators` entry point, and batch scoring
with `evaluate_all` / `attempt_passed`."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracevals.evaluators import (
    Case,
    ExpectedCall,
    RetryDiscipline,
    Score,
    Trajectory,
    TrajectoryMatch,
    UnknownEvaluatorError,
    attempt_passed,
    default_evaluators,
    evaluate_all,
    register,
    registry,
)
from tracevals.evaluators.testing import call, trajectory

BUILT_INS = [
    "trajectory_match",
    "tool_policy",
    "retry_discipline",
    "task_success",
    "step_budget",
    "injection",
    "session_completeness",
    "failure_handling",
]


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry that has not looked at entry points yet (and forgets what a test registers)."""
    from tracevals.model import options

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    monkeypatch.setattr(registry, "_plugin_errors", {})
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    monkeypatch.setattr(registry, "_installed", [])
    monkeypatch.setattr(registry, "_kinds", dict(registry._kinds))
    monkeypatch.setattr(options, "_extra", dict(options._extra))


class ReplyLanguage:
    name = "reply_language"
    version = 1

    def evaluate(self, trajectory: Trajectory, case: Case | None) -> Score | None:
        return None


def test_registry_lookup_and_unknown_names(clean_registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    assert registry.get("trajectory_match") is TrajectoryMatch
    assert [e.name for e in default_evaluators()] == BUILT_INS
    with pytest.raises(UnknownEvaluatorError) as info:
        registry.get("trajectory_mtch")
    assert str(info.value) == f"unknown evaluator 'trajectory_mtch'; valid: {', '.join(sorted(BUILT_INS))}"


def test_register_checks_shape_and_name_clashes(clean_registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    assert register(ReplyLanguage) is ReplyLanguage
    assert register(ReplyLanguage) is ReplyLanguage  # idempotent
    assert registry.get("reply_language") is ReplyLanguage
    clash = type("Clash", (ReplyLanguage,), {})
    with pytest.raises(ValueError, match="'reply_language' is already registered"):
        register(clash)
    with pytest.raises(TypeError, match="needs a class attribute `version`"):
        register(type("NoVersion", (), {"name": "x", "evaluate": lambda self, t, c: None}))


PLUGIN = '''
from tracevals.evaluators import make_score


class AnswerLength:
    """A plugin: the final answer is at most 40 characters."""

    name = "answer_length"
    version = 1

    def evaluate(self, trajectory, case):
        if trajectory.output is None:
            return None
        n = len(trajectory.output)
        return make_score(self, trajectory, passed=n <= 40, score=1.0 if n <= 40 else 40 / n, reason=f"{n} chars")
'''


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_registry: None) -> Path:
    """A package installed the way pip installs one: a module and a dist-info with entry_points.txt."""
    site = tmp_path / "site"
    dist = site / "answer_length_plugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (site / "answer_length_plugin.py").write_text(textwrap.dedent(PLUGIN))
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: answer-length-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[tracevals.evaluators]\n"
        "answer_length = answer_length_plugin:AnswerLength\n"
        "broken = answer_length_plugin_missing:Nope\n"
    )
    monkeypatch.syspath_prepend(str(site))
    return site


def test_a_plugin_from_a_real_entry_point(installed_plugin: Path) -> None:
    cls = registry.get("answer_length")
    assert cls.__module__ == "answer_length_plugin"
    assert {"answer_length", *BUILT_INS} <= set(registry.names())
    [score] = evaluate_all([trajectory(output="x" * 80)], {}, evaluators=[cls()])
    assert (score.evaluator, score.passed, score.score, score.reason) == ("answer_length", False, 0.5, "80 chars")
    with pytest.raises(UnknownEvaluatorError, match=r"plugin 'broken' failed to load: ModuleNotFoundError"):
        registry.get("broken")


def test_a_plugin_runs_in_tracevals_score(installed_plugin: Path, tmp_path: Path) -> None:
    from tracevals.cli import main

    lake = tmp_path / "lake"
    lake.mkdir()
    result = CliRunner().invoke(main, ["score", "--lake", str(lake), "--evaluators", "answer_length,nope"])
    assert result.exit_code == 1
    assert (
        "unknown evaluator 'nope'; valid: answer_length, failure_handling, injection" in result.output
    )  # 'broken' is not valid
    result = CliRunner().invoke(main, ["score", "--lake", str(lake), "--evaluators", "answer_length"])
    assert result.exit_code == 1 and "holds no spans: nothing to score" in result.output  # an empty lake is said
    import tracevals
    from tracevals.harness import run_cases
    from tracevals.model.case import Case

    telemetry = tracevals.instrument(lake=lake, batch=False)
    try:
        run_cases(lambda text, ctx: "x" * 50, [Case("c1", "q")], k=1, run_id="r", variant="v")
    finally:
        telemetry.shutdown()
    result = CliRunner().invoke(
        main, ["score", "--lake", str(lake), "--evaluators", "answer_length", "--format", "json", "--no-write"]
    )
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert (row["evaluator"], row["passed"], row["reason"]) == ("answer_length", False, "50 chars")


class Exploding:
    name = "exploding"
    version = 3

    def evaluate(self, trajectory: Trajectory, case: Case | None) -> Score | None:
        raise RuntimeError("boom")


SEED = Case(
    case_id="case-1",
    input="查询客户最近一笔订单并生成摘要",
    allowed_tools=("search_customer", "get_orders"),
    expected_steps=(ExpectedCall("search_customer"), ExpectedCall("get_orders")),
    forbidden_actions=("update_order", "send_message"),
    max_retries=2,
    must_include=("订单号", "状态", "金额"),
)


def test_evaluate_all_and_attempt_passed() -> None:
    good = trajectory(call("search_customer"), call("get_orders"), output="订单号 x 状态 y 金额 z")
    bad = replace(good, trace_id="t-2", attempt=3, tool_calls=(call("get_orders"), call("send_message")))
    unknown_task = replace(good, trace_id="t-3", task_id="nope")
    scores = evaluate_all([good, bad, unknown_task], {"case-1": SEED})
    by_trace = {t: [s for s in scores if s.trace_id == t] for t in ("t-1", "t-2", "t-3")}
    # match, policy, retry and success apply; budgets (none set), injection (none) and completeness
    # (hand-built: no span facts) do not
    assert [s.evaluator for s in by_trace["t-1"]] == BUILT_INS[:4] and attempt_passed(by_trace["t-1"])
    assert not attempt_passed(by_trace["t-2"])
    assert [s.attempt for s in by_trace["t-2"]] == [3, 3, 3, 3]
    assert [s.evaluator for s in by_trace["t-3"]] == ["retry_discipline"]  # the others need a case
    assert attempt_passed([])


def test_evaluate_all_survives_an_evaluator_that_raises() -> None:
    scores = evaluate_all([trajectory(call("a"))], {}, evaluators=[Exploding(), RetryDiscipline()])
    assert [(s.evaluator, s.passed) for s in scores] == [("exploding", False), ("retry_discipline", True)]
    assert scores[0].reason == "evaluator raised RuntimeError: boom"
    assert [f["kind"] for f in scores[0].details["findings"]] == ["evaluator_error"]
    assert scores[0].evaluator_version == 3


def test_the_testing_factory_docstring_holds() -> None:
    from tracevals.evaluators import ToolPolicy
    from tracevals.evaluators.testing import case

    t = trajectory(call("search", {"q": "x"}), call("delete", {"id": 1}, effect="irreversible"))
    result: Any = ToolPolicy().evaluate(t, case(requires_confirmation=True))
    assert result.passed is False
