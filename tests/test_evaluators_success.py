"""`task_success` on hand-built trajectories: must_include, must_not_include, regex, json_schema and
a custom checker. Hand calculations beside the expected numbers."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tracevals.evaluators import Case, Score, TaskSuccess, Trajectory
from tracevals.evaluators.testing import case_json, trajectory
from tracevals.model.tasks import case_from_dict
from tracevals.scoring.config import config_from_dict


def score_of(t: Trajectory, c: Case) -> Score:
    result = TaskSuccess().evaluate(t, c)
    assert result is not None
    return result


SEED = Case(case_id="case-1", input="查询客户最近一笔订单并生成摘要", must_include=("订单号", "状态", "金额"))


def test_all_strings_found_case_insensitively() -> None:
    c = Case(case_id="case-1", input="x", must_include=("Order", "SHIPPED"))
    result = score_of(trajectory(output="order 882 is shipped"), c)
    assert (result.passed, result.score, result.reason) == (True, 1.0, "2/2 checks met, score=2/2=1.000")
    assert (result.evaluator, result.evaluator_version) == ("task_success", 4)  # 4: typed findings


def test_partial_credit() -> None:
    result = score_of(trajectory(output="订单号 order_demo_882，状态 已发货"), SEED)
    assert (result.passed, result.score) == (False, pytest.approx(2 / 3))  # 2 of 3 strings
    assert result.reason == "2/3 checks met, score=2/3=0.667; missing '金额'"
    assert result.details["missing"] == ["金额"]


def test_without_output_or_with_an_error_fails() -> None:
    assert score_of(trajectory(), SEED).reason == "no output recorded; score=0"
    result = score_of(trajectory(output="订单号 状态 金额", error_type="TimeoutError: tool"), SEED)
    assert (result.passed, result.score, result.reason) == (
        False,
        0.0,
        "attempt failed with error: TimeoutError: tool; score=0",
    )


def test_every_criterion_is_one_or_more_checks() -> None:
    c = case_json(
        success_criteria={
            "must_include": ["refund"],
            "must_not_include": ["error", "sorry"],
            "regex": [r"ord_\d{4}", r"(?i)usd \d+"],
            "json_schema": {"type": "object", "required": ["status"]},
        }
    )
    good = '```json\n{"status": "refunded"}\n```\nRefund issued for ord_1005, USD 88'
    assert score_of(trajectory(output=good), c).reason == "6/6 checks met, score=6/6=1.000"
    bad = "Sorry, an error: refund for order 1005 failed"
    result = score_of(trajectory(output=bad), c)
    # refund found (1); error and sorry both present (0, 0); no ord_dddd (0); no usd (0); not JSON (0): 1/6
    assert (result.passed, result.score) == (False, pytest.approx(1 / 6))
    assert result.reason == (
        "1/6 checks met, score=1/6=0.167; must not include 'error' but does; must not include 'sorry' but does; "
        "no match for /ord_\\d{4}/; no match for /(?i)usd \\d+/; output is not JSON (nor holds a ```json block)"
    )


def test_json_schema_on_the_whole_output() -> None:
    c = case_json(success_criteria={"json_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}})
    assert score_of(trajectory(output='{"n": 3}'), c).passed
    result = score_of(trajectory(output='{"n": "3"}'), c)
    assert result.reason.endswith("output JSON not valid against json_schema: at 'n': '3' is not of type 'integer'")
    assert not score_of(trajectory(output="[1, 2]"), c).passed  # JSON, but not an object


def test_custom_checker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_checks.py").write_text(
        textwrap.dedent(
            """
            def refunded(output, case):
                return "refund" in output.lower(), f"expected a refund for {case.case_id}"

            def half(output, case):
                return 0.5

            def broken(output, case):
                raise RuntimeError("boom")
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    def checked(checker: str, output: str) -> Score:
        return score_of(trajectory(output=output), case_json(success_criteria={"checker": checker}))

    assert checked("my_checks:refunded", "Refund issued").passed
    assert checked("my_checks:refunded", "Done").reason.endswith(
        "checker my_checks:refunded: expected a refund for case-1"
    )
    assert checked("my_checks:half", "x").reason.endswith("checker my_checks:half: returned 0.500 < 1")
    assert checked("my_checks:broken", "x").reason.endswith("checker my_checks:broken raised RuntimeError: boom")
    assert checked("nope_module:f", "x").reason.endswith(
        "checker nope_module:f not loaded: "
        "cannot import 'nope_module': ModuleNotFoundError: No module named 'nope_module'"
    )


def test_no_criteria_passes_a_clean_ending() -> None:
    result = score_of(trajectory(output="anything"), case_from_dict({"case_id": "c", "input": "x"}))
    assert (result.passed, result.reason) == (
        True,
        "no success criteria; the attempt ended without error and recorded an output",
    )


def test_not_applicable_without_a_task_case() -> None:
    assert TaskSuccess().evaluate(trajectory(output="x"), None) is None
    assert TaskSuccess().evaluate(trajectory(output="x"), config_from_dict({"max_retries": 1}).default_case()) is None
