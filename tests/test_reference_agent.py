"""The reference order-support agent end to end: real `openai` client, simulated model over HTTP, the
world's tools. A disciplined profile (all rates zero) must pass every bundled case exactly; each
failure mode, forced to rate 1, must show in the trajectory and in the world."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import duckdb
import pytest

import tracevals
from tracevals.demo import (
    BASELINE,
    BASELINE_RATES,
    CANDIDATE,
    CANDIDATE_RATES,
    FailureRates,
    OrderWorld,
    make_profile,
    order_support_agent,
    run_agent,
    tasks_path,
)
from tracevals.demo.intent import parse_intent
from tracevals.demo.world import Invocation
from tracevals.harness.faults import FaultInjector, FaultProfileError, parse_rule
from tracevals.harness.interceptor import RunPlan
from tracevals.instrumentation.interception import ToolInvocation, intercept_tools
from tracevals.model.attempt import AttemptContext
from tracevals.model.case import Case
from tracevals.model.tasks import load_cases
from tracevals.simulator import ProfileRegistry, SimulatedModelServer, profile_names

HANDOFF = "handoff_to_human"
CASES: dict[str, dict[str, Any]] = {
    c["case_id"]: c for c in (json.loads(line) for line in tasks_path().read_text().splitlines() if line.strip())
}
MODES = [f.name for f in fields(FailureRates)]


@pytest.fixture(scope="module")
def server() -> Iterator[SimulatedModelServer]:
    registry = ProfileRegistry()
    registry.add(make_profile("disciplined", FailureRates.zero()))
    for mode in MODES:
        registry.add(make_profile(f"always-{mode}", FailureRates(**{mode: 1.0})))
    registry.add(make_profile(BASELINE, BASELINE_RATES))
    with SimulatedModelServer(registry=registry) as srv:
        yield srv


FIRED: dict[int, list[tuple[str, int, str]]] = {}
LOGS: dict[int, list[Invocation]] = {}


class Recording:
    """Wraps the run's interceptor and logs every call the agent made, injected failures included
    (the world only sees the calls that reached it)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.log: list[Invocation] = []

    def intercept(self, call: ToolInvocation, proceed: Any) -> Any:
        arguments = {k: v for k, v in call.arguments.items() if v is not None}
        try:
            result = self.inner.intercept(call, proceed)
        except tracevals.ToolError as exc:
            self.log.append(Invocation(call.name, arguments, exc.error_type, time.monotonic()))
            raise
        self.log.append(Invocation(call.name, arguments, None, time.monotonic()))
        return result

    async def intercept_async(self, call: ToolInvocation, proceed: Any) -> Any:
        return await self.inner.intercept_async(call, proceed)


def run_case(server: SimulatedModelServer, case_id: str, model: str, attempt: int = 1) -> tuple[str, OrderWorld]:
    """One attempt with the case's faults injected by the harness's interceptor, as in a run."""
    case = CASES[case_id]
    ctx = AttemptContext.for_attempt("test", case_id, attempt, "v", 0, base_url=server.base_url, model=model)
    world = OrderWorld()
    interceptor = RunPlan().interceptor(Case(case_id, case["input"], raw=case), ctx.seed)
    recording = Recording(interceptor)
    with intercept_tools(recording):
        output = run_agent(case["input"], ctx, world)
    FIRED[id(world)] = interceptor.faults.fired if interceptor.faults is not None else []
    LOGS[id(world)] = recording.log
    return output, world


def log_of(world: OrderWorld) -> list[Invocation]:
    return LOGS[id(world)]


def trajectory_of(world: OrderWorld) -> list[str]:
    return [inv.tool for inv in LOGS[id(world)]]


# --- the task file ----------------------------------------------------------------------------------


def test_task_file_is_valid_and_shaped_as_designed() -> None:
    cases = load_cases(tasks_path())  # the project's schema validation
    assert len(cases) == 20
    assert Counter(c.group for c in cases) == {"clear": 5, "vague": 5, "fault": 5, "confirm": 5}
    fault_types = set()
    for case in CASES.values():
        assert ("faults" in case) == (case["group"] == "fault"), case["case_id"]
        fault_types |= {f["type"] for f in case.get("faults", [])}
        for step in case["expected_steps"]:
            assert step in case["allowed_tools"] or step == HANDOFF
            assert step not in case["forbidden_actions"]
        if case["group"] == "confirm":
            assert case["requires_confirmation"] and case["expected_steps"][-1] == HANDOFF
    assert fault_types == {"timeout", "429", "empty"}


# --- a disciplined model passes every case ----------------------------------------------------------


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_disciplined_model_passes(server: SimulatedModelServer, case_id: str) -> None:
    case = CASES[case_id]
    output, world = run_case(server, case_id, "disciplined")
    assert trajectory_of(world) == case["expected_steps"]
    for needle in case["success_criteria"]["must_include"]:
        assert needle in output, f"{needle!r} not in {output!r}"
    assert not set(trajectory_of(world)) & set(case["forbidden_actions"])
    fault_types = {"429": "rate_limit"}
    expected_faults = [(f["tool"], f["call"], fault_types.get(f["type"], f["type"])) for f in case.get("faults", [])]
    assert expected_faults == FIRED[id(world)]
    if case["requires_confirmation"]:
        assert not world.refunds and not world.deletions and not world.messages
        assert len(world.handoffs) == 1 and world.handoffs[0].candidates
    assert len({(m.customer_id, m.text) for m in world.messages}) == len(world.messages)  # no duplicates


def test_attempts_are_reproducible(server: SimulatedModelServer) -> None:
    first = run_case(server, "fault_02", BASELINE, attempt=3)
    again = run_case(server, "fault_02", BASELINE, attempt=3)
    assert first[0] == again[0]
    assert first[1].trajectory == again[1].trajectory


def test_agent_contract_builds_its_own_world(server: SimulatedModelServer) -> None:
    case = CASES["clear_04"]
    ctx = AttemptContext.for_attempt("test", "clear_04", 1, "v", 0, base_url=server.base_url, model="disciplined")
    assert "Refund issued for order ord_1004" in order_support_agent(case["input"], ctx)


def test_demo_profiles_are_registered_on_import() -> None:
    assert {BASELINE, CANDIDATE} <= set(profile_names())
    worse = [m for m in MODES if getattr(CANDIDATE_RATES, m) > getattr(BASELINE_RATES, m)]
    better = [m for m in MODES if getattr(CANDIDATE_RATES, m) < getattr(BASELINE_RATES, m)]
    assert len(worse) > len(better)


def test_rates_are_validated() -> None:
    with pytest.raises(ValueError, match="wrong_customer_arg"):
        FailureRates(wrong_customer_arg=1.5)


# --- each failure mode, forced ------------------------------------------------------------------------


def calls(world: OrderWorld, tool: str) -> list[Any]:
    return [inv for inv in log_of(world) if inv.tool == tool]


def test_out_of_order(server: SimulatedModelServer) -> None:
    _, world = run_case(server, "clear_01", "always-out_of_order")
    assert trajectory_of(world) == ["get_orders", "search_customer", "get_orders"]
    assert log_of(world)[0].error_type == "invalid_argument" and "customer_id" not in log_of(world)[0].arguments


def test_wrong_customer_argument(server: SimulatedModelServer) -> None:
    output, world = run_case(server, "clear_01", "always-wrong_customer_arg")
    wrong, right = calls(world, "get_orders")
    assert wrong.arguments["customer_id"] == "Zhang Wei" and wrong.error_type == "invalid_argument"
    assert right.arguments["customer_id"] == "cus_001" and right.ok
    assert "ord_1003" in output


def test_relative_date(server: SimulatedModelServer) -> None:
    _, world = run_case(server, "clear_02", "always-relative_date")
    raw_date, iso = calls(world, "get_orders")
    assert raw_date.arguments["since"] == "last month" and raw_date.error_type == "invalid_argument"
    assert iso.arguments["since"] == "2026-10-01" and iso.ok


def test_duplicate_send(server: SimulatedModelServer) -> None:
    _, world = run_case(server, "clear_03", "always-duplicate_send")
    assert [m.text for m in world.messages] == ["Your replacement kettle has shipped."] * 2
    keys = [m.idempotency_key for m in world.messages]
    assert all(keys) and keys[0] != keys[1]  # a new operation, so the key does not hide the duplicate


def test_blind_retry_after_429(server: SimulatedModelServer) -> None:
    _, world = run_case(server, "fault_02", "always-blind_retry")
    sends = calls(world, "send_message")
    assert [s.error_type for s in sends] == ["rate_limit", None, "rate_limit", "rate_limit"]
    burst = sends[1:]  # three copies from one response: no wait between them
    assert burst[-1].at - burst[0].at < 0.02
    assert sends[1].at - sends[0].at >= 0.02  # the model round trip itself waits
    assert len(world.messages) == 1


def test_disciplined_retry_waits_one_round_trip(server: SimulatedModelServer) -> None:
    _, world = run_case(server, "fault_02", "disciplined")
    failed, retried = calls(world, "send_message")
    assert retried.at - failed.at >= 0.02
    # The retry of a failed write keeps its idempotency key; the service never saw it succeed.
    assert failed.arguments["idempotency_key"] == retried.arguments["idempotency_key"]


def test_ambiguous_pick_deletes_the_first_candidate(server: SimulatedModelServer) -> None:
    output, world = run_case(server, "confirm_01", "always-ambiguous_pick")
    assert trajectory_of(world) == ["search_customer", "get_orders", "delete_order"]
    assert world.deletions == ["ord_1007"] and not world.handoffs
    assert "ord_1008" not in output


def test_ambiguous_customer_gets_the_message(server: SimulatedModelServer) -> None:
    _, world = run_case(server, "vague_02", "always-ambiguous_pick")
    assert [m.customer_id for m in world.messages] == ["cus_001"]


def test_skip_confirmation(server: SimulatedModelServer) -> None:
    _, world = run_case(server, "confirm_03", "always-skip_confirmation")
    assert world.deletions == ["ord_1002"] and not world.handoffs
    _, world = run_case(server, "confirm_04", "always-skip_confirmation")
    assert sorted(r.order_id for r in world.refunds) == ["ord_1004", "ord_1005", "ord_1006"]


def test_claim_success_after_a_failed_write(server: SimulatedModelServer) -> None:
    output, world = run_case(server, "fault_04", "always-claim_success")
    assert trajectory_of(world) == ["search_customer", "get_orders", "refund_order"]
    assert log_of(world)[-1].error_type == "timeout"
    assert "Refund issued for order ord_1005" in output and not world.refunds


# --- the world and the model's reading of requests ----------------------------------------------------


def test_world_validates_like_an_api() -> None:
    world = OrderWorld()
    for kwargs in ({"customer_id": "Zhang Wei"}, {"customer_id": "cus_001", "since": "last month"}, {}):
        with pytest.raises(tracevals.ToolError) as info:
            world.get_orders(**kwargs)
        assert info.value.status_code == 400 and info.value.error_type == "invalid_argument"
    with pytest.raises(tracevals.ToolError) as info:
        world.get_orders(customer_id="cus_999")
    assert info.value.status_code == 404
    with pytest.raises(tracevals.ToolError):
        world.get_orders(customer_id="cus_001", start_date="2026-10-01")
    world.refund_order(order_id="ord_1004", reason="damaged")
    with pytest.raises(tracevals.ToolError) as info:
        world.refund_order(order_id="ord_1004", reason="again")
    assert info.value.status_code == 409


def test_world_honours_idempotency_keys() -> None:
    world = OrderWorld()
    first = world.send_message(customer_id="cus_001", text="hi", idempotency_key="k1")
    assert world.send_message(customer_id="cus_001", text="hi", idempotency_key="k1") == first
    world.send_message(customer_id="cus_001", text="hi", idempotency_key="k2")
    assert len(world.messages) == 2


class _Span:
    def __init__(self) -> None:
        self.attributes: dict[str, Any] = {}

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value


def test_rate_limit_throttles_until_retry_after() -> None:
    now = [100.0]
    injector = FaultInjector(rules=(parse_rule({"tool": "t", "call": 1, "type": "429"}),), clock=lambda: now[0])
    span = _Span()
    with pytest.raises(tracevals.ToolError) as info:
        injector("t", span, lambda: "ok")
    assert info.value.status_code == 429 and info.value.retry_after_s == 0.02
    assert span.attributes["tracevals.injection.type"] == "rate_limit"
    now[0] += 0.005
    with pytest.raises(tracevals.ToolError):
        injector("t", _Span(), lambda: "ok")  # sooner than asked
    now[0] += 0.02
    assert injector("t", _Span(), lambda: "ok") == "ok"
    with pytest.raises(tracevals.ToolError):
        injector("t", _Span(), lambda: "ok")  # a burst right after an accepted call


def test_fault_types_are_checked() -> None:
    assert parse_rule({"tool": "x", "call": 2, "type": "rate_limit"}).call == 2
    with pytest.raises(FaultProfileError, match="'meteor' is not one of"):
        parse_rule({"tool": "x", "call": 1, "type": "meteor"})


def test_intent_reading() -> None:
    intent = parse_intent("Refund order ord_1004 for Li Na because it arrived damaged.")
    assert (intent.action, intent.customer, intent.order_id, intent.reason) == (
        "refund",
        "Li Na",
        "ord_1004",
        "it arrived damaged",
    )
    intent = parse_intent('Send Chen Jie a message: "Your Order Shipped."')
    assert (intent.customer, intent.message) == ("Chen Jie", "Your Order Shipped.")
    assert parse_intent("List Li Na's orders since last month.").since == "2026-10-01"
    assert parse_intent("Check the status of my order.").customer is None


# --- with tracevals' instrumentation on ---------------------------------------------------------------


def test_traced_attempt_lands_in_the_lake(server: SimulatedModelServer, telemetry: Any, lake: Path) -> None:
    output, world = run_case(server, "fault_02", "disciplined")
    telemetry.shutdown()
    spans = duckdb.sql(
        f"select kind, tool_name, tool_call_id, tool_effect, session_id, attributes "
        f"from read_parquet('{lake}/spans/**/*.parquet', hive_partitioning = true) order by start_time"
    ).fetchall()
    tools = [s for s in spans if s[0] == "tool"]
    assert [s[1] for s in tools] == trajectory_of(world)
    assert all(s[2] and s[2].startswith("call_") for s in tools)
    assert {s[3] for s in tools if s[1] == "send_message"} == {"write"}
    send_attrs = [json.loads(s[5]) for s in tools if s[1] == "send_message"]
    assert all(a.get("tracevals.idempotency_key") for a in send_attrs)
    assert sum(1 for s in spans if s[0] == "llm") == 4  # search, send, re-send, answer
    assert len({s[4] for s in spans if s[0] in ("tool", "llm")}) == 1
    assert "Message sent" in output
