"""Tests for tracevals.stats: hand-computed acceptance figures, properties, summaries, comparison."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracevals.stats import (
    Outcome,
    TaskResult,
    compare,
    pass_at_k,
    pass_hat_k,
    pass_k_series,
    percentile,
    sign_test,
    summarize,
    wilson,
)


def outcomes_for(variant: str, counts: dict[str, tuple[int, int]]) -> list[Outcome]:
    """n attempts per task, the first c of which pass (first try)."""
    out = []
    for task_id, (n, c) in counts.items():
        for i in range(n):
            out.append(Outcome(variant, task_id, i, passed=i < c, first_pass=i < c))
    return out


# --- hand-computed acceptance figures ------------------------------------------------------------

THREE_TASKS = {"a": (4, 3), "b": (4, 1), "c": (4, 0)}


def test_pass_hat_k_three_tasks_by_hand() -> None:
    # hand calculation, n = 4, c = 3 / 1 / 0; C(4,k) = 4, 6, 4, 1:
    #   k=1: (3/4 + 1/4 + 0) / 3 = 1/3            = 0.3333
    #   k=2: (C(3,2)/C(4,2) = 3/6, 0, 0) / 3 = 1/6 = 0.1667
    #   k=3: (C(3,3)/C(4,3) = 1/4, 0, 0) / 3 = 1/12 = 0.0833
    #   k=4: (C(3,4) = 0) -> 0
    s = summarize(outcomes_for("v", THREE_TASKS))["v"]
    expected = {1: 0.3333, 2: 0.1667, 3: 0.0833, 4: 0.0}
    assert s.pass_hat_k.keys() == expected.keys()
    for k, v in expected.items():
        assert s.pass_hat_k[k] == pytest.approx(v, abs=5e-5)
    assert s.pass_hat_k[3] == pytest.approx(1 / 12)


def test_pass_at_k_three_tasks_by_hand() -> None:
    # hand calculation, 1 - C(n-c,k)/C(n,k) per task:
    #   k=1: (3/4 + 1/4 + 0) / 3                     = 1/3   = 0.3333
    #   k=2: (1 - 0/6, 1 - C(3,2)/6 = 1/2, 0) / 3    = 1/2   = 0.5
    #   k=3: (1, 1 - C(3,3)/4 = 3/4, 0) / 3          = 7/12  = 0.5833
    #   k=4: (1, 1, 0) / 3                           = 2/3   = 0.6667
    s = summarize(outcomes_for("v", THREE_TASKS))["v"]
    expected = {1: 0.3333, 2: 0.5, 3: 0.5833, 4: 0.6667}
    for k, v in expected.items():
        assert s.pass_at_k[k] == pytest.approx(v, abs=5e-5)
    assert s.pass_at_k[3] == pytest.approx(7 / 12)


def test_wilson_by_hand() -> None:
    # hand calculation, 4/12: p = 1/3, z^2 = 3.8416, denom = 1 + 3.8416/12 = 1.32013,
    #   centre = (0.33333 + 0.16007) / 1.32013 = 0.37375,
    #   half = 1.96 * sqrt(0.22222/12 + 3.8416/576) / 1.32013 = 0.23564 -> [0.1381, 0.6094]
    lo, hi = wilson(4, 12)
    assert lo == pytest.approx(0.1381, abs=5e-5)
    assert hi == pytest.approx(0.6094, abs=5e-5)
    # hand calculation, 0/5: centre = half = (3.8416/10) / (1 + 3.8416/5) = 0.21725 -> [0, 0.4345]
    lo, hi = wilson(0, 5)
    assert lo == 0.0
    assert hi == pytest.approx(0.4345, abs=5e-5)


def test_wilson_edges() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    lo, hi = wilson(5, 5)
    assert hi == 1.0 and lo == pytest.approx(1 - 0.4345, abs=5e-5)
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_summary_wilson_is_pooled() -> None:
    s = summarize(outcomes_for("v", THREE_TASKS))["v"]
    assert (s.passes, s.runs) == (4, 12)
    assert s.wilson == wilson(4, 12)


def test_single_task_estimators() -> None:
    assert pass_hat_k(3, 4, 2) == 0.5
    assert pass_at_k(1, 4, 2) == 0.5
    assert math.isnan(pass_hat_k(2, 3, 4))
    assert math.isnan(pass_at_k(2, 3, 4))
    with pytest.raises(ValueError):
        pass_hat_k(1, 2, 0)


# --- properties ----------------------------------------------------------------------------------


@st.composite
def task_counts(draw: st.DrawFn) -> tuple[int, int]:
    n = draw(st.integers(min_value=1, max_value=60))
    return n, draw(st.integers(min_value=0, max_value=n))


@given(task_counts())
def test_ordering_per_task(nc: tuple[int, int]) -> None:
    n, c = nc
    prev = math.inf
    for k in range(1, n + 1):
        hat, at = pass_hat_k(c, n, k), pass_at_k(c, n, k)
        assert hat <= c / n <= at
        assert hat <= prev  # pass^k never rises with k
        prev = hat
    assert pass_hat_k(c, n, 1) == pass_at_k(c, n, 1) == c / n


@given(task_counts(), st.integers(min_value=1, max_value=70))
def test_the_series_is_the_estimators_float_for_float(nc: tuple[int, int], k_max: int) -> None:
    # pass_k_series (the summary's pass^j and pass@j for j = 1..k, binomials updated step by step) against
    # pass_hat_k / pass_at_k (math.comb for each j): the same float for every j, NaN where n < j
    n, c = nc
    hat, at = pass_k_series(c, n, k_max)
    assert len(hat) == len(at) == k_max
    for j in range(1, k_max + 1):
        for got, want in ((hat[j - 1], pass_hat_k(c, n, j)), (at[j - 1], pass_at_k(c, n, j))):
            assert got == want or (math.isnan(got) and math.isnan(want)), (c, n, j)


def test_the_series_of_a_task_of_many_attempts() -> None:
    # binomials of thousands of digits; every 97th j and the settled tail checked against math.comb's
    hat, at = pass_k_series(2_990, 3_000, 3_000)
    for j in [*range(1, 3_001, 97), 10, 11, 2_999, 3_000]:
        assert hat[j - 1] == pass_hat_k(2_990, 3_000, j) and at[j - 1] == pass_at_k(2_990, 3_000, j), j
    assert hat[-1] == 0.0 and at[-1] == 1.0 and at[10] == 1.0  # 10 failures: 11 draws hold a pass


@given(st.lists(task_counts(), min_size=1, max_size=8))
def test_ordering_in_summary(tasks: list[tuple[int, int]]) -> None:
    counts = {f"t{i}": nc for i, nc in enumerate(tasks)}
    s = summarize(outcomes_for("v", counts))["v"]
    assert s.k_cap == min(n for n, _ in tasks)
    assert list(s.pass_hat_k) == list(range(1, s.k_cap + 1))
    prev = math.inf
    for k in range(1, s.k_cap + 1):
        assert s.pass_hat_k[k] <= s.pass_at_1 <= s.pass_at_k[k]
        assert s.pass_hat_k[k] <= prev
        prev = s.pass_hat_k[k]
    assert 0.0 <= s.wilson[0] <= s.pooled_rate <= s.wilson[1] <= 1.0


@given(st.integers(0, 30), st.integers(0, 30))
def test_sign_test_is_symmetric_probability(a: int, b: int) -> None:
    p = sign_test(a, b)
    assert 0.0 < p <= 1.0
    assert p == sign_test(b, a)


# --- summaries -----------------------------------------------------------------------------------


def test_k_capped_with_unequal_n() -> None:
    # Task "short" has only 2 attempts, so pass^3 cannot be estimated for every task.
    s = summarize(outcomes_for("v", {"long": (5, 5), "short": (2, 1)}), k=3)["v"]
    assert (s.k_requested, s.k_cap, s.k) == (3, 2, 2)
    assert s.k_capped
    assert list(s.pass_hat_k) == [1, 2]
    # hand calculation: pass^2 = (C(5,2)/C(5,2) + C(1,2)/C(2,2)) / 2 = (1 + 0) / 2
    assert s.pass_hat_k_headline == 0.5
    # per-task mean (1 + 1/2) / 2 = 0.75 differs from pooled 6/7 when n is unequal
    assert s.pass_at_1 == 0.75
    assert s.pooled_rate == pytest.approx(6 / 7)


def test_k_not_capped_when_enough_attempts() -> None:
    s = summarize(outcomes_for("v", {"a": (5, 4)}), k=3)["v"]
    assert (s.k_requested, s.k_cap, s.k, s.k_capped) == (3, 5, 3, False)
    assert s.pass_hat_k_headline == pytest.approx(4 / 10)  # C(4,3)/C(5,3)


def test_summary_run_level_figures() -> None:
    outs = [
        Outcome("v", "a", 0, True, True, latency_ms=100.0, cost=0.01, tokens=10),
        Outcome("v", "a", 1, True, False, retries=2, latency_ms=300.0, cost=0.03, tokens=30),
        Outcome("v", "b", 0, False, False, retries=1, handoff=True, latency_ms=200.0, error="Timeout"),
        Outcome("v", "b", 1, False, False, cost=0.02, tokens=5),  # no latency recorded
    ]
    s = summarize(outs)["v"]
    assert (s.runs, s.passes, s.first_passes) == (4, 2, 1)
    assert s.first_success_rate == 0.25 and s.final_success_rate == 0.5
    assert s.avg_retries == 0.75
    assert (s.handoffs, s.errors, s.tokens) == (1, 1, 45)
    assert s.avg_cost == pytest.approx(0.015)
    assert s.latency_n == 3
    assert s.p50_latency_ms == 200.0
    assert s.p95_latency_ms == pytest.approx(290.0)  # 200 + 0.9 * 100, linear interpolation
    assert s.worst_task == TaskResult("b", 2, 0)


def test_worst_task_ties_by_id() -> None:
    s = summarize(outcomes_for("v", {"z": (3, 1), "m": (6, 2), "q": (4, 4)}))["v"]
    assert s.worst_task.task_id == "m"  # 1/3 == 2/6, "m" < "z"


def test_worst_task_ties_show_the_dangerous_task_first() -> None:
    from dataclasses import replace

    from tracevals.stats.categories import DUPLICATE_SIDE_EFFECT, Hazard

    # "a" (a harmless canary, 3/4) and "z" (3/4, one attempt sent a message twice) tie on rate: the id
    # would pick "a"; the headline must show "z", which is do_not_ship, and name "a" as tied
    outs = outcomes_for("v", {"a": (4, 3), "z": (4, 3), "q": (4, 4)})
    dup = Hazard(DUPLICATE_SIDE_EFFECT, "duplicate side effect: send_message#2 repeats send_message#1")
    outs = [replace(o, hazards=(dup,)) if (o.task_id, o.attempt) == ("z", 0) else o for o in outs]
    s = summarize(outs)["v"]
    assert s.category("z") is not None and s.category("z").category == "do_not_ship"
    assert s.category("a") is not None and s.category("a").category == "canary"
    assert s.worst_task.task_id == "z" and s.worst_tied == ("a",)


def test_summarize_groups_and_sorts_variants() -> None:
    res = summarize(outcomes_for("cand", {"a": (2, 1)}) + outcomes_for("base", {"a": (2, 2)}))
    assert list(res) == ["base", "cand"]
    assert summarize([]) == {}


def test_duplicate_attempt_rejected() -> None:
    o = Outcome("v", "a", 0, True, True)
    with pytest.raises(ValueError, match="duplicate"):
        summarize([o, o])


def test_outcome_validation() -> None:
    with pytest.raises(ValueError):
        Outcome("v", "a", 0, passed=False, first_pass=True)


def test_percentile_empty_and_single() -> None:
    assert math.isnan(percentile([], 0.5))
    assert percentile([7.0], 0.95) == 7.0


# --- comparison ----------------------------------------------------------------------------------


def test_compare_regressions_first_and_sign_test() -> None:
    base_counts = {f"t{i:02d}": (4, 4) for i in range(20)}
    cand_counts = dict(base_counts)
    cand_counts["t03"] = (4, 1)  # -0.75
    cand_counts["t07"] = (4, 3)  # -0.25
    cand_counts["t01"] = (4, 3)  # -0.25, ties with t07 -> by id
    base_counts["t10"] = (4, 2)
    cand_counts["t10"] = (4, 4)  # +0.5
    base = summarize(outcomes_for("base", base_counts))["base"]
    cand = summarize(outcomes_for("cand", cand_counts))["cand"]
    cmp = compare(base, cand)
    assert [d.task_id for d in cmp.deltas[:3]] == ["t03", "t01", "t07"]
    assert cmp.deltas[0].delta == -0.75 and cmp.deltas[0].regression
    assert (cmp.deltas[0].baseline_n, cmp.deltas[0].baseline_c) == (4, 4)
    assert (cmp.deltas[0].candidate_n, cmp.deltas[0].candidate_c) == (4, 1)
    assert cmp.deltas[-1].task_id == "t10" and not cmp.deltas[-1].regression
    assert [d.task_id for d in cmp.regressions] == ["t03", "t01", "t07"]
    assert (cmp.regressed, cmp.improved, cmp.unchanged) == (3, 1, 16)
    # hand calculation: 4 changed tasks, min side 1: p = 2 * (C(4,0) + C(4,1)) / 2^4 = 10/16 = 0.625
    assert cmp.p_value == pytest.approx(0.625)
    assert not cmp.significant
    assert cmp.statement.startswith(
        "3 tasks regressed, 1 improved, 16 unchanged; sign test p = 0.625: not significant at 0.05"
    )
    assert "no result could reach 0.05" in cmp.statement


def test_compare_significant_and_unequal_n() -> None:
    base = summarize(outcomes_for("b", {f"t{i}": (5, 5) for i in range(8)}))["b"]
    cand = summarize(outcomes_for("c", {f"t{i}": (10, 9) for i in range(8)}))["c"]
    cmp = compare(base, cand)
    # hand calculation: 8 of 8 regressed: p = 2 * 1/256 = 0.0078125
    assert cmp.p_value == pytest.approx(2 / 256)
    assert cmp.significant
    assert "significant at 0.05" in cmp.statement and "not significant" not in cmp.statement
    assert cmp.deltas[0].delta == pytest.approx(-0.1)
    assert cmp.k == 5  # the smaller headline k of the two


def test_compare_lists_tasks_in_only_one_variant() -> None:
    base = summarize(outcomes_for("b", {"a": (3, 3), "gone": (3, 1)}))["b"]
    cand = summarize(outcomes_for("c", {"a": (3, 3), "new": (3, 0)}))["c"]
    cmp = compare(base, cand)
    assert [t.task_id for t in cmp.only_in_baseline] == ["gone"]
    assert [t.task_id for t in cmp.only_in_candidate] == ["new"]
    assert [d.task_id for d in cmp.deltas] == ["a"]
    assert (cmp.improved, cmp.regressed, cmp.unchanged, cmp.p_value) == (0, 0, 1, 1.0)
    assert "no task changed" in cmp.statement


def test_equal_rates_with_different_n_are_unchanged() -> None:
    base = summarize(outcomes_for("b", {"a": (3, 1)}))["b"]
    cand = summarize(outcomes_for("c", {"a": (6, 2)}))["c"]
    d = compare(base, cand).deltas[0]
    assert d.delta == 0.0 and not d.regression


def test_overall_deltas_are_paired_over_common_tasks() -> None:
    # A new, always-passing task in the candidate must not look like an improvement.
    base = summarize(outcomes_for("b", {"a": (4, 4), "b": (4, 1)}))["b"]
    cand = summarize(outcomes_for("c", {"a": (4, 3), "b": (4, 1), "new": (4, 4)}))["c"]
    cmp = compare(base, cand)
    assert cmp.common_tasks == 2
    # hand calculation: deltas -1/4 and 0 -> mean -1/8
    assert cmp.pass_at_1_delta == pytest.approx(-0.125)
    # hand calculation, k = 4: a 1 -> C(3,4)/1 = 0, b 0 -> 0: mean (-1 + 0) / 2
    assert cmp.k == 4 and cmp.pass_hat_k_delta == pytest.approx(-0.5)
    # unpaired task means (0.75 + 0.25 + 1) / 3 > (1 + 0.25) / 2 would have said "better"
    assert cand.pass_at_1 > base.pass_at_1
