"""Issue 35: a case's own fault comes before a profile's rule on the same call, and a rule that did not
fire is reported attempt by attempt (a rule that fired in attempt 1 and not in attempt 2 left attempt 2
without the fault it was meant to meet)."""

from __future__ import annotations

from typing import Any

from tracevals.harness.faults import parse_rule
from tracevals.harness.interceptor import RunPlan
from tracevals.model.tasks import case_from_dict


class Span:
    def __init__(self) -> None:
        self.attributes: dict[str, Any] = {}

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value


CASE = case_from_dict(
    {"case_id": "t", "input": "x", "faults": [{"tool": "lookup", "call": 1, "type": "timeout", "id": "case-timeout"}]}
)


def test_the_case_fault_wins_over_the_profile_rule_on_the_same_call() -> None:
    plan = RunPlan(faults=(parse_rule({"tool": "lookup", "call": 1, "type": "rate_limit", "id": "profile-429"}),))
    injector = plan.interceptor(CASE, seed=0, attempt=1).faults
    assert injector is not None
    span = Span()
    chosen = injector.plan("lookup", span)
    assert chosen is not None and (chosen.id, chosen.type) == ("case-timeout", "timeout")
    assert span.attributes["tracevals.injection.id"] == "case-timeout"
    # the profile's rule did not fire: said, not silently replaced
    [(rule, why)] = plan.unfired_rules()
    assert rule.id == "profile-429" and why == "no attempt reached call 1 of 'lookup' (at most 1)"


def test_a_rule_that_fired_in_some_attempts_only_is_reported_for_the_others() -> None:
    second_call = parse_rule({"tool": "lookup", "call": 2, "type": "server_error", "id": "second"})
    plan = RunPlan(faults=(second_call,))
    plain = case_from_dict({"case_id": "t", "input": "x"})
    for attempt, calls in ((1, 2), (2, 1), (3, 2), (4, 1)):  # attempts 2 and 4 call lookup once only
        injector = plan.interceptor(plain, seed=0, attempt=attempt).faults
        assert injector is not None
        for _ in range(calls):
            injector.plan("lookup", Span())
    [(rule, why)] = plan.unfired_rules()
    assert rule.id == "second"
    assert why == "in 2 of 4 attempts (t #2, t #4): no attempt reached call 2 of 'lookup' (at most 1)"
