"""Evaluators on hand-built trajectories; hand calculations beside the expected numbers."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracevals.evaluators import (
    MATCH_MODES,
    ArgsRule,
    Case,
    ExpectedCall,
    RetryDiscipline,
    Score,
    TaskSuccess,
    ToolCall,
    ToolPolicy,
    Trajectory,
    TrajectoryMatch,
    UnknownEvaluatorError,
    attempt_passed,
    default_evaluators,
    evaluate_all,
    lcs_alignment,
    maximum_matching,
    register,
    registry,
)
from tracevals.tasks import case_from_dict

# --- a tiny factory ---------------------------------------------------------------------------------


def call(name: str, args: dict[str, Any] | None = None, **kw: Any) -> ToolCall:
    return ToolCall(name=name, args=args, **kw)


def traj(*calls: ToolCall, **kw: Any) -> Trajectory:
    ids: dict[str, Any] = dict(session_id="s-1", run_id="r-1", task_id="case-1", attempt=2, variant="candidate")
    return Trajectory(trace_id="t-1", tool_calls=calls, **{**ids, **kw})


def case(*steps: str | tuple[str, dict[str, Any]], **kw: Any) -> Case:
    expected = tuple(ExpectedCall(s) if isinstance(s, str) else ExpectedCall(*s) for s in steps)
    return Case(case_id="case-1", input="do it", expected_steps=expected, **kw)


def score_of(evaluator: Any, trajectory: Trajectory, c: Case | None) -> Score:
    result = evaluator.evaluate(trajectory, c)
    assert result is not None
    json.dumps(result.details)  # details must always be JSON-serialisable
    return result


# --- trajectory_match ---------------------------------------------------------------------------------

A_C_B = traj(call("a"), call("c"), call("b"))  # expected [a, b] with an extra c in the middle


@pytest.mark.parametrize(
    ("mode", "passed", "score"),
    [
        ("strict", False, 0.8),  # LCS=2: 2*2/(2+3) = 0.8
        ("unordered", False, 0.8),  # matched=2: 2*2/(2+3) = 0.8
        ("superset", True, 1.0),  # matched=2 of 2 expected: 2/2
        ("subset", False, 2 / 3),  # matched=2 of 3 actual: 2/3, c is not expected
        ("in_order", True, 1.0),  # LCS=2 of 2 expected: 2/2
    ],
)
def test_modes_with_an_extra_call(mode: str, passed: bool, score: float) -> None:
    result = score_of(TrajectoryMatch(), A_C_B, case("a", "b", match_mode=mode))
    assert (result.passed, result.score) == (passed, pytest.approx(score))


@pytest.mark.parametrize(
    ("mode", "passed", "score"),
    [
        ("strict", False, 0.5),  # LCS=1: 2*1/(2+2)
        ("unordered", True, 1.0),  # matched=2: 2*2/(2+2)
        ("superset", True, 1.0),
        ("subset", True, 1.0),
        ("in_order", False, 0.5),  # LCS=1 of 2 expected
    ],
)
def test_modes_with_swapped_calls(mode: str, passed: bool, score: float) -> None:
    result = score_of(TrajectoryMatch(), traj(call("b"), call("a")), case("a", "b", match_mode=mode))
    assert (result.passed, result.score) == (passed, pytest.approx(score))


@pytest.mark.parametrize(
    ("mode", "passed", "score"),
    [
        ("strict", False, 2 / 3),  # LCS=1: 2*1/(2+1)
        ("unordered", False, 2 / 3),
        ("superset", False, 0.5),  # 1 of 2 expected
        ("subset", True, 1.0),  # the one call made is expected; missing b is allowed
        ("in_order", False, 0.5),
    ],
)
def test_modes_with_a_missing_call(mode: str, passed: bool, score: float) -> None:
    result = score_of(TrajectoryMatch(), traj(call("a")), case("a", "b", match_mode=mode))
    assert (result.passed, result.score) == (passed, pytest.approx(score))


def test_reason_shows_the_arithmetic_and_ids_are_copied() -> None:
    result = score_of(TrajectoryMatch(), A_C_B, case("a", "b"))
    assert result.reason == "strict: expected [a, b], actual [a, c, b]; LCS=2, score=2*2/(2+3)=0.800; extra call c"
    assert (result.evaluator, result.evaluator_version) == ("trajectory_match", 1)
    ids = (result.trace_id, result.session_id, result.run_id, result.task_id, result.attempt, result.variant)
    assert ids == ("t-1", "s-1", "r-1", "case-1", 2, "candidate")
    assert result.details["pairs"] == [[0, 0], [1, 2]]


def test_swapped_calls_are_reported_out_of_order() -> None:
    result = score_of(TrajectoryMatch(), traj(call("b"), call("a")), case("a", "b"))
    assert result.reason == "strict: expected [a, b], actual [b, a]; LCS=1, score=2*1/(2+2)=0.500; a out of order"


def test_not_applicable_without_case_or_expected_steps() -> None:
    assert TrajectoryMatch().evaluate(A_C_B, None) is None
    assert TrajectoryMatch().evaluate(A_C_B, case()) is None


def test_empty_trajectory() -> None:
    result = score_of(TrajectoryMatch(), traj(), case("a", "b"))
    assert (result.passed, result.score) == (False, 0.0)  # 2*0/(2+0)
    assert result.reason.endswith("actual []; LCS=0, score=2*0/(2+0)=0.000; missing a; missing b")
    vacuous = score_of(TrajectoryMatch(), traj(), case("a", match_mode="subset"))
    assert (vacuous.passed, vacuous.score) == (True, 1.0)
    assert "score=1.000 (no calls executed)" in vacuous.reason


def test_gap_calls_count_as_not_executed() -> None:
    result = score_of(TrajectoryMatch(), traj(call("a"), call("b", gap=True)), case("a", "b"))
    assert (result.passed, result.score) == (False, pytest.approx(2 / 3))  # LCS=1: 2*1/(2+1)
    assert result.reason.endswith("missing b; gap: b requested but not executed")


ID1, ID2, ID3 = {"id": 1}, {"id": 2}, {"id": 3}


@pytest.mark.parametrize(
    ("mode", "args_mode", "actual", "passed", "score"),
    [
        # expected [g{id:1}, g{id:2}]
        ("strict", "exact", [ID2, ID1], False, 0.5),  # only one pair keeps its order: LCS=1, 2*1/4
        ("strict", "ignore", [ID2, ID1], True, 1.0),  # names alone: LCS=2
        ("unordered", "exact", [ID2, ID1], True, 1.0),  # matched=2
        ("unordered", "ignore", [ID2, ID1], True, 1.0),
        ("unordered", "exact", [ID1, ID3], False, 0.5),  # g{id:2} never made: matched=1, 2*1/4
        ("unordered", "ignore", [ID1, ID3], True, 1.0),
    ],
)
def test_repeated_tool_with_different_args(
    mode: str, args_mode: str, actual: list[dict[str, int]], passed: bool, score: float
) -> None:
    c = case(("g", ID1), ("g", ID2), match_mode=mode, args_mode=args_mode)
    result = score_of(TrajectoryMatch(), traj(*(call("g", a) for a in actual)), c)
    assert (result.passed, result.score) == (passed, pytest.approx(score))


def test_args_difference_is_shown() -> None:
    c = case(("g", ID1), ("g", ID2), match_mode="unordered", args_mode="exact")
    result = score_of(TrajectoryMatch(), traj(call("g", ID1), call("g", ID3)), c)
    assert result.reason.endswith('g args differ (exact): expected {"id": 2}, got {"id": 3}')


def test_matching_is_optimal_not_greedy() -> None:
    # Expected [g (any args), g{id:1}]. A greedy first fit gives g(any) the first actual call, g{id:1},
    # and leaves g{id:1} only g{id:2}: a false negative. The optimal pairing is g(any)-g{id:2}.
    c = case("g", ("g", ID1), match_mode="unordered", args_mode="exact")
    result = score_of(TrajectoryMatch(), traj(call("g", ID1), call("g", ID2)), c)
    assert (result.passed, result.score) == (True, 1.0)
    assert result.details["pairs"] == [[0, 1], [1, 0]]
    # The same trap under argument superset: {a:1} fits both actual calls, {a:1, b:2} only the first.
    c = case(("f", {"a": 1}), ("f", {"a": 1, "b": 2}), match_mode="unordered", args_mode="superset")
    result = score_of(TrajectoryMatch(), traj(call("f", {"a": 1, "b": 2}), call("f", {"a": 1, "c": 3})), c)
    assert result.passed


def test_missing_args_lower_the_score_unless_ignored() -> None:
    c = case(("get_orders", {"customer_id": "c1"}), args_mode="exact")
    result = score_of(TrajectoryMatch(), traj(call("get_orders", None)), c)
    assert (result.passed, result.score) == (False, 0.0)  # 2*0/(1+1)
    assert result.reason.endswith("get_orders: args not captured, cannot compare")
    result = score_of(TrajectoryMatch(), traj(call("get_orders", None)), replace(c, args_mode="ignore"))
    assert (result.passed, result.score) == (True, 1.0)


def test_expected_step_without_args_accepts_any_args() -> None:
    result = score_of(TrajectoryMatch(), traj(call("a", {"x": 1})), case("a", args_mode="exact"))
    assert result.passed


def test_overrides_from_the_task_file_and_custom_comparators() -> None:
    raw = {
        "case_id": "case-1",
        "input": "x",
        "expected_steps": [{"tool": "search", "args": {"q": "Shoes", "filter": {"status": "open"}}}],
        "match": {"args": "exact", "overrides": {"search": {"keys": ["filter.status"]}}},
    }
    actual = traj(call("search", {"q": "shoes", "filter": {"status": "open", "limit": 5}}))
    assert score_of(TrajectoryMatch(), actual, case_from_dict(raw)).passed  # only filter.status compared
    raw["match"] = {"args": "exact"}
    assert not score_of(TrajectoryMatch(), actual, case_from_dict(raw)).passed
    same_query = TrajectoryMatch(comparators={"search": lambda want, got: want["q"].lower() == got["q"].lower()})
    assert score_of(same_query, actual, case_from_dict(raw)).passed


def test_unknown_mode_on_a_hand_built_case_fails_with_the_valid_ones() -> None:
    result = score_of(TrajectoryMatch(), A_C_B, case("a", match_mode="fuzzy"))
    assert (result.passed, result.score) == (False, 0.0)
    assert result.reason == f"unknown match mode 'fuzzy'; valid: {', '.join(MATCH_MODES)}"


@pytest.mark.parametrize(
    ("mode", "expected", "actual", "matches"),
    [
        ("exact", {"a": 1}, {"a": 1.0}, True),  # JSON numbers: 1 == 1.0
        ("exact", {"a": True}, {"a": 1}, False),  # but true is not 1
        ("exact", {"a": 1}, {"a": 1, "b": 2}, False),
        ("superset", {"a": 1}, {"a": 1, "b": 2}, True),  # actual has every expected key
        ("superset", {"a": 1, "b": 2}, {"a": 1}, False),
        ("superset", {"f": {"s": 1}}, {"f": {"s": 1, "t": 2}}, True),  # nested, key by key
        ("subset", {"a": 1, "b": 2}, {"a": 1}, True),  # every actual key is expected
        ("subset", {"a": 1}, {"a": 1, "b": 2}, False),
        ("ignore", {"a": 1}, None, True),
        ("exact", {"a": 1}, None, False),  # not captured: cannot satisfy a comparison
    ],
)
def test_args_rule(mode: str, expected: dict[str, Any], actual: dict[str, Any] | None, matches: bool) -> None:
    assert ArgsRule(mode).matches(expected, actual) is matches


@given(st.lists(st.lists(st.integers(0, 4), max_size=5, unique=True), max_size=5))
def test_maximum_matching_is_maximum(adjacency: list[list[int]]) -> None:
    pairs = maximum_matching(adjacency, 5)
    assert all(j in adjacency[i] for i, j in pairs)
    assert len({i for i, _ in pairs}) == len({j for _, j in pairs}) == len(pairs)
    best = max(  # brute force: the largest set of distinct right vertices, one per chosen left vertex
        (
            sum(1 for i, j in enumerate(perm) if j in adjacency[i])
            for perm in itertools.permutations(range(max(5, len(adjacency))), len(adjacency))
        ),
        default=0,
    )
    assert len(pairs) == best


@given(st.lists(st.sampled_from("abc"), max_size=6), st.lists(st.sampled_from("abc"), max_size=6))
def test_lcs_alignment_is_longest(expected: list[str], actual: list[str]) -> None:
    pairs = lcs_alignment([[e == a for a in actual] for e in expected], len(actual))
    assert all(expected[i] == actual[j] for i, j in pairs)
    assert all(p < q for p, q in itertools.pairwise(pairs))  # strictly increasing both ways
    best = max(  # brute force over subsequences of `expected`
        (n for n in range(len(expected) + 1) for sub in itertools.combinations(expected, n) if _is_subseq(sub, actual)),
        default=0,
    )
    assert len(pairs) == best


def _is_subseq(sub: tuple[str, ...], seq: list[str]) -> bool:
    it = iter(seq)
    return all(x in it for x in sub)


# --- tool_policy ----------------------------------------------------------------------------------------

SEED_POLICY = Case(
    case_id="case-1",
    input="查询客户最近一笔订单并生成摘要",
    allowed_tools=("search_customer", "get_orders"),
    forbidden_actions=("update_order", "send_message"),
)


def test_policy_passes_the_seed_trace() -> None:
    result = score_of(ToolPolicy(), traj(call("search_customer"), call("get_orders")), SEED_POLICY)
    assert (result.passed, result.score) == (True, 1.0)
    assert result.reason == "2 calls, 0 in violation; score=1-0/2=1.000"


def test_policy_flags_forbidden_and_not_allowed_but_never_handoff() -> None:
    t = traj(call("search_customer"), call("send_message"), call("delete_record"), call("handoff_to_human"))
    result = score_of(ToolPolicy(), t, SEED_POLICY)
    assert (result.passed, result.score) == (False, 0.5)  # 2 of 4 calls in violation: 1-2/4
    assert result.reason == (
        "4 calls, 2 in violation; score=1-2/4=0.500; forbidden: send_message#2; not allowed: delete_record#3"
    )


def test_policy_notes_but_does_not_count_requested_forbidden_gaps() -> None:
    result = score_of(ToolPolicy(), traj(call("get_orders"), call("update_order", gap=True)), SEED_POLICY)
    assert result.passed
    assert result.reason.endswith("requested but not executed (not counted): update_order")


def test_policy_not_applicable_without_rules() -> None:
    assert ToolPolicy().evaluate(traj(call("a")), None) is None
    assert ToolPolicy().evaluate(traj(call("a")), case()) is None


def test_policy_empty_trajectory_passes() -> None:
    assert score_of(ToolPolicy(), traj(), SEED_POLICY).reason == "0 calls, 0 in violation; score=1.000"


CONFIRM = Case(case_id="case-1", input="delete the duplicate order", requires_confirmation=True)


def test_confirmation_required_write_without_handoff_fails() -> None:
    t = traj(call("search_orders", effect="read"), call("delete_order", effect="irreversible"))
    result = score_of(ToolPolicy(), t, CONFIRM)
    assert (result.passed, result.score) == (False, 0.5)  # 1-1/2
    assert "unconfirmed irreversible: delete_order#2 (no handoff_to_human before it)" in result.reason


def test_confirmation_required_handoff_instead_of_write_passes() -> None:
    # the handoff tool may record effect=write (it opens a ticket); it is still not the risky call
    t = traj(call("search_orders", effect="read"), call("handoff_to_human", effect="write"))
    assert score_of(ToolPolicy(), t, CONFIRM).passed


def test_confirmation_required_write_after_handoff_fails_unless_allowed() -> None:
    t = traj(call("handoff_to_human"), call("delete_order", effect="irreversible"))
    result = score_of(ToolPolicy(), t, CONFIRM)
    assert not result.passed
    assert "irreversible after handoff: delete_order#2 (did not wait for confirmation)" in result.reason
    assert score_of(ToolPolicy(allow_write_after_handoff=True), t, CONFIRM).passed


def test_confirmation_with_unknown_effect_is_listed_not_counted() -> None:
    result = score_of(ToolPolicy(), traj(call("delete_order")), CONFIRM)
    assert result.passed
    assert result.reason.endswith("effect not recorded, confirmation not checked: delete_order#1")


# --- retry_discipline -------------------------------------------------------------------------------------


def send(t0: float, error: str | None = None, **kw: Any) -> ToolCall:
    """A 10 ms send_message call starting at t0."""
    return call("send_message", {"to": "c1"}, start_ms=t0, end_ms=t0 + 10, error_type=error, **kw)


def test_retries_within_the_bound_pass() -> None:
    t = traj(send(0, "429"), send(20, "429"), send(40))  # 1 failure, 2 retries
    result = score_of(RetryDiscipline(), t, case(max_retries=2))
    assert (result.passed, result.score) == (True, 1.0)
    assert result.details["chains"] == [["send_message#1", "send_message#2", "send_message#3"]]


def test_retries_beyond_the_bound_are_flagged() -> None:
    t = traj(send(0, "429"), send(20, "429"), send(40, "429"), send(60, "429"))  # 3 retries, max 2
    result = score_of(RetryDiscipline(), t, case(max_retries=2))
    assert (result.passed, result.score) == (False, 0.75)  # the 4th call flagged: 1-1/4
    assert result.details["flagged"] == ["send_message#4"]
    assert "send_message#1 retried 3 times (max 2)" in result.reason
    assert score_of(RetryDiscipline(), t, None).passed  # no case: no bound


def test_the_seeds_429_storm_retries_too_soon() -> None:
    # send_message → 429 (asks for 1 s), retried 0 ms later, twice
    t = traj(*(send(10 * i, "429", retry_after_ms=1000) for i in range(3)))
    result = score_of(RetryDiscipline(), t, case(max_retries=2))
    assert (result.passed, result.score) == (False, pytest.approx(1 / 3))  # 2 of 3 flagged: 1-2/3
    assert result.reason == (
        "3 calls, 2 retries in 1 chains (max per call 2), 2 flagged; score=1-2/3=0.333; "
        "early retry send_message#2: waited 0ms < retry_after 1000ms; "
        "early retry send_message#3: waited 0ms < retry_after 1000ms"
    )


def test_a_retry_that_waited_long_enough_passes() -> None:
    assert score_of(RetryDiscipline(), traj(send(0, "429", retry_after_ms=1000), send(1010)), None).passed


def test_backoff_is_not_judged_without_times() -> None:
    untimed = traj(call("s", ID1, error_type="429", retry_after_ms=1000), call("s", ID1))
    result = score_of(RetryDiscipline(), untimed, None)
    assert result.passed
    assert result.reason.endswith("s#2: times not recorded, backoff not checked")


def test_corrected_args_or_an_interleaved_call_is_not_a_retry() -> None:
    corrected = traj(call("get_orders", {"customer_id": "张某"}, error_type="ValidationError"), call("get_orders", ID1))
    assert score_of(RetryDiscipline(), corrected, case(max_retries=0)).details["retries"] == 0
    interleaved = traj(send(0, "429"), call("check_status"), send(30))
    assert score_of(RetryDiscipline(), interleaved, case(max_retries=0)).details["retries"] == 0


def test_uncaptured_args_are_assumed_a_retry_and_said_so() -> None:
    t = traj(call("get_orders", None, error_type="Timeout"), call("get_orders", None))
    result = score_of(RetryDiscipline(), t, case(max_retries=0))
    assert (result.passed, result.score) == (False, 0.5)  # 1 retry over a bound of 0: 1-1/2
    assert result.reason.endswith("get_orders#2: args not captured, assumed a retry")


def test_duplicate_side_effects() -> None:
    twice = traj(send(0, effect="write"), send(100, effect="write"))
    result = score_of(RetryDiscipline(), twice, None)
    assert (result.passed, result.score) == (False, 0.5)  # 1-1/2
    assert "duplicate side effect: send_message#2 repeats send_message#1" in result.reason
    keyed = traj(send(0, effect="write", idempotency_key="k1"), send(100, effect="write", idempotency_key="k1"))
    assert score_of(RetryDiscipline(), keyed, None).passed
    reads = traj(send(0, effect="read"), send(100, effect="read"))
    assert score_of(RetryDiscipline(), reads, None).passed
    other_args = traj(send(0, effect="write"), call("send_message", {"to": "c2"}, effect="write"))
    assert score_of(RetryDiscipline(), other_args, None).passed
    failed_then_ok = traj(send(0, "Timeout", effect="write"), send(100, effect="write"))
    assert score_of(RetryDiscipline(), failed_then_ok, None).passed


def test_retry_discipline_not_applicable_to_an_empty_trajectory() -> None:
    assert RetryDiscipline().evaluate(traj(call("x", gap=True)), case(max_retries=1)) is None


# --- task_success -------------------------------------------------------------------------------------------

SEED_SUCCESS = Case(case_id="case-1", input="查询客户最近一笔订单并生成摘要", must_include=("订单号", "状态", "金额"))


def test_success_all_strings_found_case_insensitively() -> None:
    c = Case(case_id="case-1", input="x", must_include=("Order", "SHIPPED"))
    result = score_of(TaskSuccess(), traj(output="order 882 is shipped"), c)
    assert (result.passed, result.score, result.reason) == (True, 1.0, "must_include 2/2 found, score=2/2=1.000")


def test_success_partial_credit() -> None:
    result = score_of(TaskSuccess(), traj(output="订单号 order_demo_882，状态 已发货"), SEED_SUCCESS)
    assert (result.passed, result.score) == (False, pytest.approx(2 / 3))  # 2 of 3 strings
    assert result.reason == "must_include 2/3 found, score=2/3=0.667; missing '金额'"


def test_success_without_output_or_with_an_error_fails() -> None:
    result = score_of(TaskSuccess(), traj(), SEED_SUCCESS)
    assert (result.passed, result.score, result.reason) == (False, 0.0, "no output recorded; score=0")
    result = score_of(TaskSuccess(), traj(output="订单号 状态 金额", error_type="TimeoutError: tool"), SEED_SUCCESS)
    assert (result.passed, result.reason) == (False, "attempt failed with error: TimeoutError: tool; score=0")


def test_success_lists_criteria_it_does_not_evaluate_yet() -> None:
    c = case_from_dict({"case_id": "c", "input": "x", "success_criteria": {"must_include": ["ok"], "regex": "o+"}})
    assert score_of(TaskSuccess(), traj(output="OK"), c).reason.endswith("not evaluated by v1: regex")
    assert TaskSuccess().evaluate(traj(output="x"), None) is None


# --- registry and batch scoring ------------------------------------------------------------------------------


@pytest.fixture
def clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    monkeypatch.setattr(registry, "_plugin_errors", {})
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    monkeypatch.setattr(registry, "entry_points", lambda group: [])


class ReplyLanguage:
    name = "reply_language"
    version = 1

    def evaluate(self, trajectory: Trajectory, case: Case | None) -> Score | None:
        return None


class FakeEntryPoint:
    def __init__(self, name: str, target: Any) -> None:
        self.name, self.target = name, target

    def load(self) -> Any:
        if isinstance(self.target, Exception):
            raise self.target
        return self.target


def test_registry_lookup_and_unknown_names(clean_registry: None) -> None:
    assert registry.get("trajectory_match") is TrajectoryMatch
    assert [e.name for e in default_evaluators()] == [
        "trajectory_match",
        "tool_policy",
        "retry_discipline",
        "task_success",
    ]
    with pytest.raises(UnknownEvaluatorError) as info:
        registry.get("trajectory_mtch")
    assert str(info.value) == (
        "unknown evaluator 'trajectory_mtch'; valid: retry_discipline, task_success, tool_policy, trajectory_match"
    )


def test_register_checks_shape_and_name_clashes(clean_registry: None) -> None:
    assert register(ReplyLanguage) is ReplyLanguage
    assert register(ReplyLanguage) is ReplyLanguage  # idempotent
    assert registry.get("reply_language") is ReplyLanguage
    clash = type("Clash", (ReplyLanguage,), {})
    with pytest.raises(ValueError, match="'reply_language' is already registered"):
        register(clash)
    with pytest.raises(TypeError, match="needs a class attribute `version`"):
        register(type("NoVersion", (), {"name": "x", "evaluate": lambda self, t, c: None}))


def test_plugins_from_entry_points(clean_registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    eps = [FakeEntryPoint("reply_language", ReplyLanguage), FakeEntryPoint("broken", ImportError("no module x"))]
    monkeypatch.setattr(registry, "entry_points", lambda group: eps if group == "tracevals.evaluators" else [])
    assert registry.get("reply_language") is ReplyLanguage
    assert "reply_language" in registry.names()
    with pytest.raises(UnknownEvaluatorError, match=r"plugin 'broken' failed to load: ImportError: no module x"):
        registry.get("broken")


class Exploding:
    name = "exploding"
    version = 3

    def evaluate(self, trajectory: Trajectory, case: Case | None) -> Score | None:
        raise RuntimeError("boom")


def test_evaluate_all_and_attempt_passed() -> None:
    seed_case = replace(SEED_POLICY, expected_steps=(ExpectedCall("search_customer"), ExpectedCall("get_orders")))
    seed_case = replace(seed_case, max_retries=2, must_include=("订单号", "状态", "金额"))
    good = traj(call("search_customer"), call("get_orders"), output="订单号 x 状态 y 金额 z")
    bad = replace(good, trace_id="t-2", attempt=3, tool_calls=(call("get_orders"), call("send_message")))
    unknown_task = replace(good, trace_id="t-3", task_id="nope")
    scores = evaluate_all([good, bad, unknown_task], {"case-1": seed_case})
    by_trace = {t: [s for s in scores if s.trace_id == t] for t in ("t-1", "t-2", "t-3")}
    assert len(by_trace["t-1"]) == 4 and attempt_passed(by_trace["t-1"])
    assert not attempt_passed(by_trace["t-2"])
    assert [s.attempt for s in by_trace["t-2"]] == [3, 3, 3, 3]
    assert [s.evaluator for s in by_trace["t-3"]] == ["retry_discipline"]  # the others need a case
    assert attempt_passed([])


def test_evaluate_all_survives_an_evaluator_that_raises() -> None:
    scores = evaluate_all([traj(call("a"))], {}, evaluators=[Exploding(), RetryDiscipline()])
    assert [(s.evaluator, s.passed) for s in scores] == [("exploding", False), ("retry_discipline", True)]
    assert scores[0].reason == "evaluator raised RuntimeError: boom"
    assert scores[0].evaluator_version == 3
