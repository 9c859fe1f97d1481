"""Tests for release categories, fault outcomes, hand-off counts, configurable z and the gate rules."""

from __future__ import annotations

import pytest

from tracevals.stats import (
    AUTOMATIC,
    CANARY,
    DO_NOT_SHIP,
    DUPLICATE_SIDE_EFFECT,
    ESCALATED,
    FAILED,
    FAILED_SILENTLY,
    NEEDS_CONFIRMATION,
    RECOVERED,
    UNKNOWN,
    CategoryRules,
    Caution,
    GateResult,
    GateThresholds,
    Hazard,
    Outcome,
    categorize,
    compare,
    fault_outcomes,
    run_gate,
    summarize,
    wilson,
    worst_fault_outcome,
)

DUP = Hazard(DUPLICATE_SIDE_EFFECT, "duplicate side effect: send_message#3 repeats send_message#2")


def outs(variant: str, counts: dict[str, tuple[int, int]], hazards: tuple[Hazard, ...] = ()) -> list[Outcome]:
    return [
        Outcome(variant, task, i, passed=i < c, first_pass=i < c, hazards=hazards)
        for task, (n, c) in counts.items()
        for i in range(n)
    ]


# --- the category rule, one branch each ----------------------------------------------------------


def test_hazard_means_do_not_ship_whatever_the_rate() -> None:
    cat = categorize("t", 5, 5, [(3, (DUP,)), (4, (DUP, DUP))], risk="its case requires confirmation")
    assert cat.category == DO_NOT_SHIP and cat.label == "do not ship"
    assert cat.hazard_attempts == {DUPLICATE_SIDE_EFFECT: 2}  # two hazards in attempt 4 count once
    assert cat.reasons == ("duplicate side effect in 2/5 attempts (attempt 3: " + DUP.detail + ")",)


def test_low_rate_means_do_not_ship() -> None:
    cat = categorize("t", 5, 2, [], risk=None)
    assert cat.category == DO_NOT_SHIP
    assert cat.reasons == ("passed only 2/5 attempts; a canary needs 50%",)


def test_risky_task_needs_confirmation_even_when_perfect() -> None:
    cat = categorize("t", 5, 5, [], risk="it expects refund_order (write)")
    assert (cat.category, cat.reasons) == (NEEDS_CONFIRMATION, ("it expects refund_order (write); passed 5/5",))


def test_automatic_and_canary() -> None:
    assert categorize("t", 5, 5, [], None).category == AUTOMATIC
    assert categorize("t", 5, 4, [], None).category == CANARY
    assert categorize("t", 5, 3, [], None).category == CANARY  # 3/5 = 0.6 >= 0.5
    loose = CategoryRules(automatic_min_rate=0.8, canary_min_rate=0.2)
    assert categorize("t", 5, 4, [], None, loose).category == AUTOMATIC
    assert categorize("t", 5, 1, [], None, loose).category == CANARY
    with pytest.raises(ValueError):
        CategoryRules(automatic_min_rate=0.4, canary_min_rate=0.5)
    with pytest.raises(ValueError, match="a snake_case name"):
        Hazard("not a name!", "x")
    # a plugin's finding kind may raise a hazard of its own: it is named in words and blocks like any other
    own = categorize("t", 5, 5, [(2, (Hazard("pii_leaked", "an email sent"),))], None)
    assert (own.category, own.reasons) == (DO_NOT_SHIP, ("pii leaked in 1/5 attempts (attempt 2: an email sent)",))


def test_warnings_cap_the_category() -> None:
    key = Caution("missing_idempotency_key", NEEDS_CONFIRMATION, "no idempotency key: send#2 (write)")
    capped = categorize("t", 5, 5, [], None, cautions=[(3, (key,))])
    assert capped.category == NEEDS_CONFIRMATION
    assert capped.reasons == (
        "warning missing idempotency key in 1/5 attempts (attempt 3: no idempotency key: send#2 (write)); passed 5/5",
    )
    slow = Caution("slow_answer", CANARY, "12 s")
    assert categorize("t", 5, 5, [], None, cautions=[(1, (slow,)), (2, (slow,))]).category == CANARY
    # a warning never lifts a task: hazards and a low pass rate still say do not ship
    assert categorize("t", 5, 2, [], None, cautions=[(1, (slow,))]).category == DO_NOT_SHIP


def test_summary_carries_categories_handoffs_and_hazards() -> None:
    data = outs("v", {"a": (4, 4), "b": (4, 3)})
    data += [
        Outcome("v", "c", 0, True, True, handoff=True, handoff_expected=True, risk="its case requires confirmation"),
        Outcome("v", "c", 1, True, True, handoff=False, handoff_expected=True, risk="its case requires confirmation"),
        Outcome("v", "d", 0, True, True, handoff=True, handoff_expected=False, hazards=(DUP,)),
        Outcome("v", "d", 1, True, True, handoff=True),  # no case: counted, not judged
    ]
    s = summarize(data)["v"]
    assert {c.task_id: c.category for c in s.categories} == {
        "a": AUTOMATIC,
        "b": CANARY,
        "c": NEEDS_CONFIRMATION,
        "d": DO_NOT_SHIP,
    }
    assert s.category_counts() == {AUTOMATIC: 1, CANARY: 1, NEEDS_CONFIRMATION: 1, DO_NOT_SHIP: 1}
    assert (s.handoffs, s.handoffs_correct, s.handoffs_wrong, s.handoffs_missed) == (3, 1, 1, 1)
    assert s.hazard_attempts == {DUPLICATE_SIDE_EFFECT: 1}


def test_z_is_configurable_on_every_interval() -> None:
    s = summarize(outs("v", {"a": (6, 4), "b": (6, 2)}), z=2.576)["v"]
    assert s.wilson == wilson(6, 12, 2.576)
    assert s.first_success_wilson == wilson(6, 12, 2.576)
    assert s.tasks[0].wilson == wilson(4, 6, 2.576)
    # a wider z gives a wider interval than the 95% default
    assert s.wilson[0] < wilson(6, 12)[0] and s.wilson[1] > wilson(6, 12)[1]
    with pytest.raises(ValueError):
        summarize(outs("v", {"a": (1, 1)}), z=0)


def test_fault_outcomes() -> None:
    data = [
        Outcome("v", "f", 0, True, True, faults=(("429", RECOVERED),)),
        Outcome("v", "f", 1, False, False, handoff=True, faults=(("429", ESCALATED), ("429", RECOVERED))),  # once
        Outcome("v", "f", 2, False, False, faults=(("429", RECOVERED), ("429", FAILED_SILENTLY))),  # the worse
        Outcome("v", "f", 3, False, False, faults=(("timeout", FAILED), ("429", UNKNOWN))),
        Outcome("v", "g", 0, False, False),  # met no fault
    ]
    tallies = {(t.fault, t.variant): t for t in fault_outcomes(data)}
    t = tallies[("429", "v")]
    assert (t.n, t.recovered, t.escalated, t.failed, t.silent, t.unknown) == (4, 1, 1, 1, 1, 1)
    assert t.recovered_wilson == wilson(1, 4)
    timeout = tallies[("timeout", "v")]
    assert (timeout.n, timeout.failed, timeout.silent, len(tallies)) == (1, 1, 0, 2)
    assert worst_fault_outcome([RECOVERED, "no-such-outcome"]) == UNKNOWN


# --- the gate rules --------------------------------------------------------------------------------


def gate_for(
    base: dict[str, tuple[int, int]],
    cand: dict[str, tuple[int, int]],
    t: GateThresholds,
    hazards: tuple[Hazard, ...] = (),
) -> GateResult:
    s = summarize(outs("b", base) + outs("c", cand, hazards))
    return run_gate(s["b"], s["c"], compare(s["b"], s["c"]), t)


def test_gate_task_regression_names_the_task_and_counts() -> None:
    t = GateThresholds(max_task_regression=0.5, forbid=())
    result = gate_for({"x": (3, 3), "y": (3, 3)}, {"x": (3, 1), "y": (3, 2)}, t)
    assert not result.passed
    [check] = result.failures
    assert check.name == "max_task_regression" and check.tasks == ["x"]
    assert "x fell from 3/3 to 1/3 (-0.667)" in check.message
    # the limit itself passes: a drop of exactly 1/3 is allowed by 1/3
    assert gate_for({"x": (3, 3)}, {"x": (3, 2)}, GateThresholds(max_task_regression=1 / 3, forbid=())).passed


def test_gate_pass_hat_k_and_cap() -> None:
    ok = gate_for({"x": (3, 3)}, {"x": (3, 3), "y": (3, 2)}, GateThresholds(min_pass_hat_k=0.5, at_k=2, forbid=()))
    # hand calculation: pass^2 = (1 + C(2,2)/C(3,2)) / 2 = (1 + 1/3) / 2 = 0.667
    assert ok.passed and ok.checks[0].value == pytest.approx(2 / 3)
    capped = gate_for({"x": (3, 3)}, {"x": (3, 3)}, GateThresholds(min_pass_hat_k=0.5, at_k=5, forbid=()))
    assert not capped.passed and "run at least 5 attempts per task" in capped.failures[0].message


def test_gate_forbidden_category_and_hazard() -> None:
    t = GateThresholds(forbid=("do_not_ship", "duplicate_side_effect"))
    result = gate_for({"x": (2, 2)}, {"x": (2, 2)}, t, hazards=(DUP,))
    assert [c.name for c in result.failures] == ["forbid:do_not_ship", "forbid:duplicate_side_effect"]
    assert "x (duplicate side effect in 2/2 attempts" in result.failures[0].message


def test_gate_overall_and_significant_regression() -> None:
    base = {f"t{i}": (4, 4) for i in range(8)}
    cand = {f"t{i}": (4, 3) for i in range(8)}
    result = gate_for(base, cand, GateThresholds(max_regression=0.2, forbid=()))
    # hand calculation: every task -1/4, paired mean -0.25 > 0.2 allowed; 8 of 8 regressed: p = 2/256 < 0.05
    assert [c.name for c in result.failures] == ["max_regression", "significant_regression"]
    assert "-0.250" in result.failures[0].message


def test_gate_thresholds_from_mapping() -> None:
    t = GateThresholds.from_mapping({"max-task-regression": 0.3, "forbid": "do_not_ship", "at_k": 3})
    assert (t.max_task_regression, t.forbid, t.at_k) == (0.3, ("do_not_ship",), 3)
    with pytest.raises(ValueError, match="unknown key 'max_regresion'"):
        GateThresholds.from_mapping({"max_regresion": 0.1}, source="gate.yaml")
    with pytest.raises(ValueError, match="between 0 and 1"):
        GateThresholds(max_regression=5)
    with pytest.raises(ValueError, match="at_k must be a whole number >= 1, got '3'"):
        GateThresholds.from_mapping({"at_k": "3"})
    with pytest.raises(ValueError, match="forbid: unknown"):
        GateThresholds(forbid=("dont_ship",))
