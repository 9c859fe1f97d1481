"""`trajectory_match` on hand-built trajectories; hand calculations beside the expected numbers.

Direction, as the docs state it: superset and subset describe the ACTUAL trajectory (or the actual
arguments) relative to the expected one: superset = actual ⊇ expected, subset = actual ⊆ expected.
"""

from __future__ import annotations

import itertools
import json
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracevals.evaluators import (
    ARGS_MODES,
    MATCH_MODES,
    ArgsRule,
    Score,
    Trajectory,
    TrajectoryMatch,
    lcs_alignment,
    maximum_matching,
)
from tracevals.evaluators.testing import call, case, case_json, trajectory
from tracevals.model.calls import CAPTURE_HINT
from tracevals.model.tasks import case_from_dict


def score_of(t: Trajectory, c: Any, evaluator: TrajectoryMatch | None = None) -> Score:
    result = (evaluator or TrajectoryMatch()).evaluate(t, c)
    assert result is not None
    json.dumps(result.details)  # details must always be JSON-serialisable
    return result


A_C_B = trajectory(call("a"), call("c"), call("b"))  # expected [a, b] with an extra c in the middle


@pytest.mark.parametrize(
    ("mode", "passed", "score"),
    [
        ("strict", False, 0.8),  # LCS=2: 2*2/(2+3) = 0.8
        ("unordered", False, 0.8),  # matched=2: 2*2/(2+3) = 0.8
        ("superset", True, 1.0),  # actual ⊇ expected: matched=2 of 2 expected = 2/2
        ("subset", False, 2 / 3),  # actual ⊆ expected fails: c is not expected; matched 2 of 3 actual = 2/3
        ("in_order", True, 1.0),  # LCS=2 of 2 expected: 2/2
    ],
)
def test_modes_with_an_extra_call(mode: str, passed: bool, score: float) -> None:
    result = score_of(A_C_B, case("a", "b", match_mode=mode))
    assert (result.passed, result.score) == (passed, pytest.approx(score))


@pytest.mark.parametrize(
    ("mode", "passed", "score"),
    [
        ("strict", False, 0.5),  # LCS=1: 2*1/(2+2)
        ("unordered", True, 1.0),  # matched=2: 2*2/(2+2)
        ("superset", True, 1.0),  # 2/2
        ("subset", True, 1.0),  # 2/2
        ("in_order", False, 0.5),  # LCS=1 of 2 expected
    ],
)
def test_modes_with_swapped_calls(mode: str, passed: bool, score: float) -> None:
    result = score_of(trajectory(call("b"), call("a")), case("a", "b", match_mode=mode))
    assert (result.passed, result.score) == (passed, pytest.approx(score))


@pytest.mark.parametrize(
    ("mode", "passed", "score"),
    [
        ("strict", False, 2 / 3),  # LCS=1: 2*1/(2+1)
        ("unordered", False, 2 / 3),  # matched=1: 2*1/(2+1)
        ("superset", False, 0.5),  # actual ⊇ expected fails: b missing; 1 of 2 expected
        ("subset", True, 1.0),  # actual ⊆ expected holds: the one call made is expected; 1/1
        ("in_order", False, 0.5),  # LCS=1 of 2 expected
    ],
)
def test_modes_with_a_missing_call(mode: str, passed: bool, score: float) -> None:
    result = score_of(trajectory(call("a")), case("a", "b", match_mode=mode))
    assert (result.passed, result.score) == (passed, pytest.approx(score))


@pytest.mark.parametrize(
    ("mode", "passed", "score", "arithmetic"),
    [
        ("strict", False, 0.0, "score=2*0/(2+0)=0.000"),
        ("unordered", False, 0.0, "score=2*0/(2+0)=0.000"),
        ("superset", False, 0.0, "score=0/2=0.000"),
        ("subset", True, 1.0, "score=1.000 (no calls executed)"),  # nothing done is inside anything
        ("in_order", False, 0.0, "score=0/2=0.000"),
    ],
)
def test_empty_trajectory_in_every_mode(mode: str, passed: bool, score: float, arithmetic: str) -> None:
    result = score_of(trajectory(), case("a", "b", match_mode=mode))
    assert (result.passed, result.score) == (passed, score)
    assert arithmetic in result.reason


def test_reason_shows_the_arithmetic_and_ids_are_copied() -> None:
    result = score_of(A_C_B, case("a", "b"))
    assert result.reason == "strict: expected [a, b], actual [a, c, b]; LCS=2, score=2*2/(2+3)=0.800; extra call c"
    assert (result.evaluator, result.evaluator_version) == ("trajectory_match", 3)  # 3: typed findings
    ids = (result.trace_id, result.session_id, result.run_id, result.task_id, result.attempt, result.variant)
    assert ids == ("t-1", "s-1", "r-1", "case-1", 2, "candidate")
    assert result.details["pairs"] == [[0, 0], [1, 2]]


def test_swapped_calls_are_reported_out_of_order() -> None:
    result = score_of(trajectory(call("b"), call("a")), case("a", "b"))
    assert result.reason == "strict: expected [a, b], actual [b, a]; LCS=1, score=2*1/(2+2)=0.500; a out of order"


def test_not_applicable_without_case_or_expected_steps() -> None:
    assert TrajectoryMatch().evaluate(A_C_B, None) is None
    assert TrajectoryMatch().evaluate(A_C_B, case()) is None


def test_gap_calls_count_as_not_executed() -> None:
    result = score_of(trajectory(call("a"), call("b", gap=True)), case("a", "b"))
    assert (result.passed, result.score) == (False, pytest.approx(2 / 3))  # LCS=1: 2*1/(2+1)
    assert result.reason.endswith("missing b; gap: b requested but not executed")


ID1, ID2, ID3 = {"id": 1}, {"id": 2}, {"id": 3}


@pytest.mark.parametrize(
    ("mode", "args_mode", "actual", "passed", "score"),
    [
        # expected [g{id:1}, g{id:2}]: one tool twice, different arguments
        ("strict", "exact", [ID2, ID1], False, 0.5),  # only one pair keeps its order: LCS=1, 2*1/4
        ("strict", "ignore", [ID2, ID1], True, 1.0),  # names alone: LCS=2
        ("strict", "superset", [ID2, ID1], False, 0.5),  # {id:2} ⊇ {id:1}? no: as exact here, LCS=1
        ("strict", "subset", [ID2, ID1], False, 0.5),
        ("unordered", "exact", [ID2, ID1], True, 1.0),  # matched=2
        ("unordered", "ignore", [ID2, ID1], True, 1.0),
        ("unordered", "superset", [ID2, ID1], True, 1.0),
        ("unordered", "subset", [ID2, ID1], True, 1.0),
        ("unordered", "exact", [ID1, ID3], False, 0.5),  # g{id:2} never made: matched=1, 2*1/4
        ("unordered", "ignore", [ID1, ID3], True, 1.0),
        ("unordered", "superset", [ID1, ID3], False, 0.5),
        ("unordered", "subset", [ID1, ID3], False, 0.5),
    ],
)
def test_repeated_tool_with_different_args(
    mode: str, args_mode: str, actual: list[dict[str, int]], passed: bool, score: float
) -> None:
    c = case(("g", ID1), ("g", ID2), match_mode=mode, args_mode=args_mode)
    result = score_of(trajectory(*(call("g", a) for a in actual)), c)
    assert (result.passed, result.score) == (passed, pytest.approx(score))


@pytest.mark.parametrize("args_mode", ARGS_MODES)
def test_repeated_tool_direction_of_argument_modes(args_mode: str) -> None:
    """Expected g{a:1} then g{a:1,b:2}; the agent sends g{a:1,b:2,c:3} then g{a:1}.

    Pairings that work, per mode (E1={a:1}, E2={a:1,b:2}; A1={a:1,b:2,c:3}, A2={a:1}):
    exact: E1-A2 only (matched 1); ignore: any (2); superset (actual ⊇ expected): E1-A1, E1-A2, E2-A1, so
    E1-A2 + E2-A1 (2); subset (actual ⊆ expected): E1-A2, E2-A2 only, so 1.
    """
    c = case(("g", {"a": 1}), ("g", {"a": 1, "b": 2}), match_mode="unordered", args_mode=args_mode)
    t = trajectory(call("g", {"a": 1, "b": 2, "c": 3}), call("g", {"a": 1}))
    matched = {"exact": 1, "ignore": 2, "superset": 2, "subset": 1}[args_mode]
    result = score_of(t, c)
    assert result.details["matched"] == matched
    assert result.score == pytest.approx(2 * matched / 4)  # 2*matched/(2+2)


def test_args_difference_is_shown() -> None:
    c = case(("g", ID1), ("g", ID2), match_mode="unordered", args_mode="exact")
    result = score_of(trajectory(call("g", ID1), call("g", ID3)), c)
    assert result.reason.endswith('g args differ (exact): expected {"id": 2}, got {"id": 3}')


def test_matching_is_optimal_not_greedy() -> None:
    # Expected [g (any args), g{id:1}]. A greedy first fit gives g(any) the first actual call, g{id:1},
    # and leaves g{id:1} only g{id:2}: a false negative. The optimal pairing is g(any)-g{id:2}.
    c = case("g", ("g", ID1), match_mode="unordered", args_mode="exact")
    result = score_of(trajectory(call("g", ID1), call("g", ID2)), c)
    assert (result.passed, result.score) == (True, 1.0)
    assert result.details["pairs"] == [[0, 1], [1, 0]]
    # The same trap under argument superset: {a:1} fits both actual calls, {a:1, b:2} only the first.
    c = case(("f", {"a": 1}), ("f", {"a": 1, "b": 2}), match_mode="unordered", args_mode="superset")
    result = score_of(trajectory(call("f", {"a": 1, "b": 2}), call("f", {"a": 1, "c": 3})), c)
    assert result.passed


def test_missing_args_lower_the_score_unless_ignored() -> None:
    c = case(("get_orders", {"customer_id": "c1"}), args_mode="exact")
    result = score_of(trajectory(call("get_orders", None)), c)
    assert (result.passed, result.score) == (False, 0.0)  # 2*0/(1+1)
    assert "get_orders: args not captured, cannot compare" in result.reason
    assert CAPTURE_HINT in result.reason  # a reason for missing data names the switch that records it
    result = score_of(trajectory(call("get_orders", None)), replace(c, args_mode="ignore"))
    assert (result.passed, result.score) == (True, 1.0)


def test_expected_step_without_args_accepts_any_args() -> None:
    assert score_of(trajectory(call("a", {"x": 1})), case("a", args_mode="exact")).passed


SEARCH = [{"tool": "search", "args": {"q": "Shoes", "filter": {"status": "open"}}}]
ACTUAL_SEARCH = trajectory(call("search", {"q": "shoes", "filter": {"status": "open", "limit": 5}}))


def test_override_by_key_paths() -> None:
    keys = case_json(
        expected_steps=SEARCH, match={"args": "exact", "overrides": {"search": {"keys": ["filter.status"]}}}
    )
    assert score_of(ACTUAL_SEARCH, keys).passed  # only filter.status compared
    assert not score_of(ACTUAL_SEARCH, case_json(expected_steps=SEARCH, match={"args": "exact"})).passed


def test_override_by_mode() -> None:
    # exact for the case, superset for search: actual {q, filter{status, limit}} ⊇ expected? q differs ("shoes")
    superset = case_json(
        expected_steps=[{"tool": "search", "args": {"filter": {"status": "open"}}}],
        match={"args": "exact", "overrides": {"search": {"args": "superset"}}},
    )
    assert score_of(ACTUAL_SEARCH, superset).passed


def test_override_by_callable_in_code_and_in_the_task_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exact = case_json(expected_steps=SEARCH, match={"args": "exact"})
    same_query = TrajectoryMatch(comparators={"search": lambda want, got: want["q"].lower() == got["q"].lower()})
    assert score_of(ACTUAL_SEARCH, exact, same_query).passed
    (tmp_path / "my_compare.py").write_text(
        textwrap.dedent(
            """
            def same_query(expected, actual):
                return expected["q"].lower() == actual["q"].lower()
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from_file = case_json(
        expected_steps=SEARCH, match={"args": "exact", "overrides": {"search": {"compare": "my_compare:same_query"}}}
    )
    assert score_of(ACTUAL_SEARCH, from_file).passed
    broken = case_json(expected_steps=SEARCH, match={"overrides": {"search": {"compare": "my_compare:nope"}}})
    result = score_of(ACTUAL_SEARCH, broken)
    assert (result.passed, result.score) == (False, 0.0)
    assert (
        result.reason == "comparison for search not loaded: 'my_compare' has no 'nope'; check the name after the colon"
    )


def test_unknown_mode_on_a_hand_built_case_fails_with_the_valid_ones() -> None:
    result = score_of(A_C_B, case("a", match_mode="fuzzy"))
    assert (result.passed, result.score) == (False, 0.0)
    assert result.reason == f"unknown match mode 'fuzzy'; valid: {', '.join(MATCH_MODES)}"


@pytest.mark.parametrize(
    ("mode", "expected", "actual", "matches"),
    [
        ("exact", {"a": 1}, {"a": 1.0}, True),  # JSON numbers: 1 == 1.0
        ("exact", {"a": True}, {"a": 1}, False),  # but true is not 1
        ("exact", {"a": 1}, {"a": 1, "b": 2}, False),
        ("superset", {"a": 1}, {"a": 1, "b": 2}, True),  # actual ⊇ expected
        ("superset", {"a": 1, "b": 2}, {"a": 1}, False),
        ("superset", {"f": {"s": 1}}, {"f": {"s": 1, "t": 2}}, True),  # nested, key by key
        ("subset", {"a": 1, "b": 2}, {"a": 1}, True),  # actual ⊆ expected
        ("subset", {"a": 1}, {"a": 1, "b": 2}, False),
        ("subset", {"a": 1}, {}, True),  # nothing sent is inside anything
        ("superset", {}, {"a": 1}, True),
        ("ignore", {"a": 1}, None, True),
        ("exact", {"a": 1}, None, False),  # not captured: cannot satisfy a comparison
    ],
)
def test_args_rule(mode: str, expected: dict[str, Any], actual: dict[str, Any] | None, matches: bool) -> None:
    assert ArgsRule(mode).matches(expected, actual) is matches


def test_task_file_modes_round_trip() -> None:
    c = case_from_dict(
        {"case_id": "c", "input": "x", "expected_steps": ["a"], "match": {"mode": "subset", "args": "subset"}}
    )
    assert (c.match_mode, c.args_mode) == ("subset", "subset")


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
