"""Hand-computed figures of the three properties, consistency, per-step reliability, environments and
variance attribution (`tracevals.stats.consistency|steps|environment|variance`), arithmetic in comments."""

from __future__ import annotations

import math

import pytest

from tracevals.stats.consistency import (
    CONSISTENTLY_WRONG,
    FLAKY,
    STABLE_FAIL,
    STABLE_PASS,
    AttemptRecord,
    flakiness,
    levenshtein,
    output_key,
    pairwise_similarity,
    properties,
    task_consistency,
)
from tracevals.stats.environment import compare_environments, summarize_environments
from tracevals.stats.estimators import wilson
from tracevals.stats.steps import ExpectedStep, StepCall, first_divergence, task_steps, tool_rows
from tracevals.stats.variance import LevelFigures, attribute


def rec(task: str, attempt: int, passed: bool, output: str = "ok", path: tuple[str, ...] = (), error=None, v="v"):
    return AttemptRecord(v, task, attempt, passed, error, output, path)


# --- consistency ----------------------------------------------------------------------------------


def test_levenshtein_and_similarity_by_hand() -> None:
    # a b c -> a c: one deletion; a b -> x y: two substitutions
    assert levenshtein(["a", "b", "c"], ["a", "c"]) == 1
    assert levenshtein(["a", "b"], ["x", "y"]) == 2
    assert levenshtein([], []) == 0
    # pairs of [abc, ac, abc]: (abc, ac) 1 - 1/3, (abc, abc) 1, (ac, abc) 1 - 1/3 -> mean (2/3 + 1 + 2/3) / 3 = 7/9
    assert pairwise_similarity([("a", "b", "c"), ("a", "c"), ("a", "b", "c")]) == pytest.approx(7 / 9)
    assert pairwise_similarity([(), ()]) == 1.0  # two empty paths are the same path
    assert math.isnan(pairwise_similarity([("a",)]))  # no pair


def _edit_distance(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """The textbook dynamic programme, the reference for `levenshtein` (rapidfuzz's)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def test_distances_and_similarity_are_the_textbook_ones_to_the_last_bit() -> None:
    # the mean over every pair of attempts of 1 - d / longest, d by the textbook programme, against
    # pairwise_similarity: the same float, not merely close (calls are whole strings, some one character)
    import random

    def every_pair(paths: list[tuple[str, ...]]) -> float:
        values = []
        for i in range(len(paths)):
            for j in range(i + 1, len(paths)):
                longest = max(len(paths[i]), len(paths[j]))
                values.append(1.0 if longest == 0 else 1.0 - _edit_distance(paths[i], paths[j]) / longest)
        return math.fsum(values) / len(values)

    rng = random.Random(7)
    calls = ["a", "b", "lookup({})", 'refund({"order": 1})', 'refund({"order": 2})', "ß", ""]
    for _ in range(300):
        kinds = [tuple(rng.choice(calls) for _ in range(rng.randint(0, 7))) for _ in range(rng.randint(1, 6))]
        paths = [rng.choice(kinds) for _ in range(rng.randint(2, 30))]
        assert pairwise_similarity(paths) == every_pair(paths), paths
        a, b = rng.choice(kinds), rng.choice(kinds)
        assert levenshtein(a, b) == _edit_distance(a, b), (a, b)
    # attempts that each call with their own arguments: most pairs share no call (similarity 0, not measured)
    for _ in range(100):
        paths = [
            tuple(rng.choice(["search", "get", "refund"]) + f"({rng.randint(0, 40)})" for _ in range(rng.randint(0, 4)))
            for _ in range(rng.randint(2, 60))
        ]
        assert pairwise_similarity(paths) == every_pair(paths), paths
    # calls with their own arguments around calls every attempt shares (a hand-off, a fixed lookup), some paths
    # taken more than once: read by shape (the own calls one mark), measured once per pair of shapes
    for _ in range(100):
        shared = ["handoff({})", "lookup(1)", "get(2)"]
        kinds = [
            tuple(rng.choice(shared) if rng.random() < 0.5 else f"own({rng.randint(0, 10_000)})"
                  for _ in range(rng.randint(0, 5)))
            for _ in range(rng.randint(1, 40))
        ]  # fmt: skip
        paths = [rng.choice(kinds) for _ in range(rng.randint(2, 60))]
        assert pairwise_similarity(paths) == every_pair(paths), paths
    assert pairwise_similarity([(), (), ("a",), ()]) == every_pair([(), (), ("a",), ()]) == 0.5  # 3 of 6 pairs
    # a list and a tuple of the same calls are one path
    assert pairwise_similarity([["a", "b"], ("a", "b"), ("a",)]) == every_pair([("a", "b"), ("a", "b"), ("a",)])


def test_output_key_normalises_text_and_json() -> None:
    assert output_key("  Refund   issued\n") == output_key("refund issued")
    assert output_key('{"b": 1, "a": [1, 2]}') == output_key('{"a":[1,2],"b":1}')
    assert output_key("1.0") == output_key("1.0 ")
    assert output_key("refund issued") != output_key("refund denied")


def test_task_consistency_by_hand() -> None:
    s = ("search", "get")
    t = ("search", "send")
    records = [
        rec("t", 1, True, "Order ord_1 shipped", s),
        rec("t", 2, True, "order  ORD_1 shipped", s),  # the same answer after normalisation
        rec("t", 3, False, "I could not", t),
        rec("t", 4, True, "Order ord_1 shipped", s),
    ]
    c = task_consistency("t", records)
    assert c.n == 4 and c.passes == 3 and c.available == 4
    assert c.trajectories == 2 and c.modal_share == 3 / 4 and c.modal_trajectory == s
    # results: {pass "order ord_1 shipped"} x3, {fail "i could not"} x1 -> agreement C(3,2)/C(4,2) = 3/6
    assert c.output_classes == 2 and c.agreement == pytest.approx(0.5)
    # similarity: s-s pairs (3) are 1; s-t pairs (3) are 1 - 1/2 -> (3 * 1 + 3 * 0.5) / 6 = 0.75
    assert c.similarity == pytest.approx(0.75)
    assert c.verdict == FLAKY and not c.consistent
    # flakiness c (n - c) / C(n, 2) = 3 * 1 / 6
    assert c.flakiness == pytest.approx(0.5)


def test_a_pass_and_a_fail_with_the_same_words_are_two_results() -> None:
    c = task_consistency("t", [rec("t", 1, True, "done"), rec("t", 2, False, "done")])
    assert c.output_classes == 2 and c.verdict == FLAKY


def test_verdict_classes() -> None:
    assert task_consistency("t", [rec("t", i, True) for i in (1, 2, 3)]).verdict == STABLE_PASS
    # every attempt failed with the same answer: consistent, and wrong
    wrong = task_consistency("t", [rec("t", i, False, "ord_9") for i in (1, 2, 3)])
    assert wrong.verdict == CONSISTENTLY_WRONG and wrong.consistent
    mixed = task_consistency("t", [rec("t", 1, False, "ord_9"), rec("t", 2, False, "ord_8")])
    assert mixed.verdict == STABLE_FAIL and not mixed.consistent
    # an exception is a result of its own, by type
    errs = task_consistency("t", [rec("t", i, False, None, error="TimeoutError") for i in (1, 2)])
    assert errs.verdict == CONSISTENTLY_WRONG and errs.available == 0


def test_a_case_equivalence_checker_decides_what_is_the_same_answer() -> None:
    def same_order(a: str, b: str) -> bool:
        return a.split()[-1] == b.split()[-1]

    records = [rec("t", 1, True, "it is ord_1"), rec("t", 2, True, "see ord_1"), rec("t", 3, True, "ord_2")]
    assert task_consistency("t", records).output_classes == 3
    assert task_consistency("t", records, same_order).output_classes == 2


def test_properties_per_variant_by_hand() -> None:
    records = [
        # a: 3/3 pass, one answer -> consistent
        *(rec("a", i, True, "x") for i in (1, 2, 3)),
        # b: 1/3 pass, one raised -> not consistent, 2 available
        rec("b", 1, True, "x"),
        rec("b", 2, False, "y"),
        rec("b", 3, False, None, error="KeyError"),
        # c: a single attempt: no pair, not measured
        rec("c", 1, False, "z"),
    ]
    p = properties(records)["v"]
    assert (p.attempts, p.available, p.passes) == (7, 6, 4)
    assert p.availability_wilson == wilson(6, 7) and p.correctness_wilson == wilson(4, 7)
    assert (p.measured_tasks, p.consistent_tasks, p.consistency) == (2, 1, 0.5)
    assert p.consistency_wilson == wilson(1, 2)
    # agreement: a 1.0, b 0 (three results) -> 0.5; flakiness: a 0, b 1*2/3 -> mean 1/3
    assert p.agreement == pytest.approx(0.5)
    assert p.flakiness == pytest.approx(1 / 3)
    assert p.verdicts == {STABLE_PASS: 1, FLAKY: 1, STABLE_FAIL: 1}  # c: one attempt cannot be consistently wrong
    assert flakiness(1, 2) == 1.0 and math.isnan(flakiness(1, 1))


# --- per-step reliability -------------------------------------------------------------------------


def ok(name: str, **args: object) -> StepCall:
    return StepCall(name, args, True)


def bad(name: str, **args: object) -> StepCall:
    return StepCall(name, args, False)


def test_step_rates_chain_rule_and_first_divergence_by_hand() -> None:
    expected = [ExpectedStep("search"), ExpectedStep("get", {"id": 1}), ExpectedStep("send")]
    attempts = [
        ([ok("search"), ok("get", id=1), ok("send")], True),  # every step right
        ([ok("search"), ok("get", id=1), ok("send")], True),
        ([ok("search"), ok("get", id=2), ok("send")], False),  # step 2 wrong arguments
        ([ok("search"), ok("other"), ok("get", id=1), bad("send")], False),  # extra call skipped; send failed
        ([ok("get", id=1)], False),  # never searched
    ]
    t = task_steps("v", "t", [((calls,), passed) for calls, passed in attempts], expected)
    s1, s2, s3 = t.steps
    # step 1: all 5 reach it; 4 call search, all with any args, all succeed -> 4/5
    assert (s1.reached, s1.called, s1.right_args, s1.succeeded) == (5, 4, 4, 4)
    # step 2: the 4 that did step 1; all call get, 3 with id=1, all succeed -> 3/4
    assert (s2.reached, s2.called, s2.right_args, s2.succeeded) == (4, 4, 3, 3)
    # step 3: 3 reach it; all call send, one failed -> 2/3
    assert (s3.reached, s3.called, s3.right_args, s3.succeeded) == (3, 3, 3, 2)
    # the product 4/5 * 3/4 * 2/3 = 2/5 is exactly the share that did every step right (2 of 5)
    assert t.product == pytest.approx(0.4) and t.all_steps == 2 and t.end_to_end == pytest.approx(2 / 5)
    # first divergence, by the same walk (issue 35: the rows said step 1 right 5/5 while the divergence row
    # said an attempt left the path there): attempt 5 at 1 (never searched), attempt 3 at 2 (get with other
    # args), attempt 4 at 3 (the extra call is skipped, as in_order allows; send failed)
    assert t.divergence == {1: 1, 2: 1, 3: 1}
    assert all(t.divergence.get(s.index, 0) == s.lost for s in t.steps)
    assert t.divergence_examples == {
        1: "expected search, never called",
        2: "get with other arguments",
        3: "send failed, never made good",
    }
    # strict: step i is the i-th call, so attempt 4 left at 2 by calling another tool; the "called" column
    # tells that apart from wrong arguments (attempt 3)
    strict = task_steps("v", "t", [((calls,), passed) for calls, passed in attempts], expected, skip=False)
    assert [(r.reached, r.called, r.right_args, r.succeeded) for r in strict.steps] == [
        (5, 4, 4, 4),
        (4, 3, 2, 2),
        (2, 2, 2, 2),
    ]
    assert strict.divergence == {1: 1, 2: 2} and strict.divergence_examples[2] == "get with other arguments"
    assert first_divergence(attempts[3][0], expected) == (2, "expected get, called other")
    assert all(strict.divergence.get(s.index, 0) == s.lost for s in strict.steps)
    assert first_divergence([ok("search"), ok("get", id=1), ok("send"), ok("x")], expected) == (
        4,
        "called x after the last step",
    )
    assert first_divergence([ok("search")], expected) == (2, "expected get, stopped")
    rows = tool_rows([t])
    assert [(r.tool, r.reached, r.succeeded) for r in rows] == [("send", 3, 2), ("get", 4, 3), ("search", 5, 4)]


def test_ten_steps_at_098_multiply_to_0817() -> None:
    # 1000 attempts lose 2% at each of 10 steps -> 0.98 ** 10 = 0.817 reach the end with every step right
    expected = [ExpectedStep(f"s{i}") for i in range(10)]
    attempts = []
    alive = 1000
    for i in range(10):
        lost = round(alive * 0.02)
        calls = [ok(f"s{j}") for j in range(i)] + [bad(f"s{i}")]
        attempts += [((calls,), False)] * lost
        alive -= lost
    attempts += [(([ok(f"s{j}") for j in range(10)],), True)] * alive
    t = task_steps("v", "t", attempts, expected)
    assert t.product == pytest.approx(t.all_steps / 1000)
    assert t.product == pytest.approx(0.98**10, abs=0.005)


def test_the_reading_that_gets_further_is_used_and_made_good_counts() -> None:
    # a case lists the retry as its own step: as executed [get (failed, made good later), get] matches it
    expected = [ExpectedStep("get"), ExpectedStep("get")]
    executed = [StepCall("get", {}, True), ok("get")]  # the first failed and was made good by the second
    folded = [ok("get")]
    t = task_steps("v", "t", [((executed, folded), True)], expected)
    assert [s.succeeded for s in t.steps] == [1, 1]
    # without expected steps: divergence against the modal path, and no step rated
    m = task_steps("v", "t", [(([ok("a")],), True), (([ok("a")],), True), (([ok("b")],), False)], None)
    assert m.steps == [] and m.reference == "modal" and m.divergence == {1: 1}


# --- environment ----------------------------------------------------------------------------------


def env(model: str = "m1", system: str = "s1", case: str = "c1", seed: str = "1", **more: str) -> dict[str, str]:
    return {"models_requested": model, "system_sha256": system, "case_sha256": case, "request_seeds": seed, **more}


def test_environment_summary_and_comparison() -> None:
    rows = [
        ("base", "t1", env(seed="1")),
        ("base", "t1", env(seed="2")),
        ("base", "t2", env(case="c2", seed="3")),
        ("cand", "t1", env(model="m2", seed="1")),
        ("cand", "t1", env(model="m2", seed="2")),
        ("cand", "t2", env(model="m2", case="c2-edited", seed="3")),
    ]
    s = summarize_environments(rows)
    assert s["base"].values["models_requested"] == {"m1": 3}
    assert s["base"].value("request_seeds") == "3 distinct"  # per attempt by design
    assert s["base"].mixed == {}  # seeds differ per attempt, cases per task: neither is two environments
    cmp = compare_environments(s["base"], s["cand"])
    assert [d.key for d in cmp.differences] == ["models_requested", "case_sha256"]
    assert cmp.differences[1].baseline == ("t2: c2",) and cmp.differences[1].candidate == ("t2: c2-edited",)
    assert len(cmp.problems()) == 2
    declared = compare_environments(s["base"], s["cand"], vary=["model"])
    assert [d.key for d in declared.undeclared] == ["case_sha256"]


def test_a_variant_run_in_two_environments_is_flagged() -> None:
    rows = [("v", "t1", env(system="s1")), ("v", "t1", env(system="s2")), ("w", "t1", env(system="s1"))]
    s = summarize_environments(rows)
    assert s["v"].mixed == {"system_sha256": {"s1": 1, "s2": 1}}
    problems = compare_environments(s["w"], s["v"]).problems()
    assert any("more than one system instructions" in p for p in problems)


# --- variance attribution -------------------------------------------------------------------------


def level(name: str, flak: float, hat: float = 0.5) -> LevelFigures:
    return LevelFigures(name, 20, 4, 2, flak, 0.8, hat, 5, 0.5)


def test_attribution_by_hand() -> None:
    # live 0.5, tools frozen 0.2, all frozen 0.05: world 0.3, model 0.15, agent 0.05 (shares 60 / 30 / 10 %)
    a = attribute({"live": level("live", 0.5), "tools-frozen": level("tools-frozen", 0.2),
                   "frozen": level("frozen", 0.05, 0.9)})  # fmt: skip
    assert a.parts == pytest.approx({"world": 0.3, "model": 0.15, "agent": 0.05})
    assert a.share("world") == pytest.approx(0.6) and a.main_source == "world"
    assert "pass^5 is 0.90; live it is 0.50" in a.statement and "agent's own code" in a.statement
    quiet = attribute({n: level(n, 0.0) for n in ("live", "tools-frozen", "frozen")})
    assert quiet.main_source is None and "no flakiness" in quiet.statement
    with pytest.raises(ValueError, match="missing frozen"):
        attribute({"live": level("live", 0.1), "tools-frozen": level("tools-frozen", 0.1)})


# --- from trajectories (the report's reading) -----------------------------------------------------


def _same_first_word(a: str, b: str) -> bool:
    return a.split()[0] == b.split()[0]


def _broken(a: str, b: str) -> bool:
    raise RuntimeError("checker bug")


def test_reliability_reads_trajectories_and_says_what_a_broken_checker_did() -> None:
    from tracevals.model.case import Case
    from tracevals.model.trajectory import ToolCall, Trajectory
    from tracevals.report.reliability import reliability
    from tracevals.stats import Outcome

    trajectories = [
        Trajectory(f"t{i}", (ToolCall("get", {"id": 1}),), task_id=task, attempt=i, variant="v", output=out)
        for i, (task, out) in enumerate([("a", "yes it is"), ("a", "yes indeed"), ("b", "x"), ("b", "y")])
    ]
    outs = [Outcome("v", t.task_id or "", t.attempt or 0, True, True, trace_id=t.trace_id) for t in trajectories]
    cases = {
        "a": Case("a", "?", raw={"equivalence": f"{__name__}:_same_first_word"}),
        "b": Case("b", "?", raw={"equivalence": f"{__name__}:_broken"}),
    }
    rel = reliability(trajectories, outs, cases)
    tasks = {t.task_id: t for t in rel.properties["v"].tasks}
    assert tasks["a"].output_classes == 1  # "yes ..." twice: the case's checker says the same
    assert tasks["b"].output_classes == 2  # the checker raised: counted as different, and said
    assert any("_broken raised RuntimeError: checker bug" in n for n in rel.notes)
    missing = reliability(trajectories, outs, {"a": Case("a", "?", raw={"equivalence": "no_such_module:f"})})
    assert any("not loaded" in n for n in missing.notes)


def test_a_tie_for_the_modal_path_goes_to_the_path_seen_first() -> None:
    # two paths, two attempts each: the one attempt 1 took is the modal one
    records = [rec("t", 1, True, "a", ("x",)), rec("t", 2, True, "a", ("y",)), rec("t", 3, True, "a", ("y",)),
               rec("t", 4, True, "a", ("x",))]  # fmt: skip
    assert task_consistency("t", records).modal_trajectory == ("x",)
    m = task_steps(
        "v", "t", [(([ok("b")],), True), (([ok("a")],), True), (([ok("a")],), True), (([ok("b")],), True)], None
    )
    assert m.divergence == {1: 2}  # the modal path is [b]: the two [a] attempts leave it at 1


def test_the_divergence_is_placed_on_the_call_where_the_walk_stopped() -> None:
    # with skipping (every mode but strict) the divergence is counted at a step and shown at a call: here
    # step 3 (send), which is the 4th call, after the extra one the mode allows
    from tracevals.stats.steps import divergence_call

    expected = [ExpectedStep("search"), ExpectedStep("get", {"id": 1}), ExpectedStep("send")]
    calls = [ok("search"), ok("other"), ok("get", id=1), bad("send")]
    assert first_divergence(calls, expected, skip=True) == (3, "send failed, never made good")
    assert divergence_call(calls, expected, skip=True) == (4, "send failed, never made good")
    assert divergence_call([ok("search")], expected, skip=True) == (2, "expected get, never called")
    t = task_steps("v", "t", [((calls,), False)], expected)
    assert t.divergence == {3: 1} and t.diverged == ((4, "send failed, never made good"),)
