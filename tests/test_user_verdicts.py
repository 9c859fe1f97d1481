"""Right verdicts on a user's own agent, tasks and traffic (issue 19): each rule a user meets off the demo's
path, on hand-built trajectories where a rule is the evaluators' and through the real instrumentation,
collector and views where it is theirs."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import openai
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import tracevals
from tracevals.collector.conversion.rows import rows_from_request
from tracevals.collector.otlp_json import parse_json_traces
from tracevals.collector.testing import running_collector
from tracevals.evaluators import evaluate_all
from tracevals.evaluators.testing import call, case_json, trajectory
from tracevals.lake.writer import LakeWriter
from tracevals.model.calls import operation_key
from tracevals.model.trajectory import Handoff, ToolCall
from tracevals.queries import open_lake
from tracevals.queries.trajectories import load_trajectories
from tracevals.scoring import score_lake
from tracevals.simulator import Conversation, Decisions, ModelTurn, PlannedCall, ProfileRegistry, SimulatedModelServer
from tracevals.stats import DUPLICATE_SIDE_EFFECT
from tracevals.stats.outcomes import attempt_hazards, outcomes


def _traced(lake: Path, act: Callable[[], object], agent: str | None = "support") -> Any:
    """The one trajectory `act()` leaves in `lake`, instrumented (inside the span of `agent`, if any)."""
    telemetry = tracevals.instrument(lake=lake)
    try:
        with tracevals.agent(agent) if agent else contextlib.nullcontext():
            act()
    finally:
        telemetry.shutdown()
    [t] = load_trajectories(open_lake(lake))
    return t


def scores_by_name(t: Any, c: Any) -> dict[str, Any]:
    """Every score of `t`, by evaluator, judged against case `c` (or none)."""
    cases = {c.case_id: c} if c is not None else {}
    return {s.evaluator: s for s in evaluate_all([replace(t, task_id=c.case_id) if c else t], cases)}


# --- operation identity: canonical JSON, one definition -------------------------------------------------


def test_a_repeated_refund_is_a_duplicate_whatever_the_key_order_or_number_spelling() -> None:
    first = call("refund", {"order_id": "o1", "amount": 1}, effect="write", idempotency_key="k1")
    again = call("refund", {"amount": 1.0, "order_id": "o1"}, effect="write", idempotency_key="k2")
    assert operation_key(first) == operation_key(again)
    scores = scores_by_name(trajectory(first, again), None)
    assert "duplicate side effect: refund#2 repeats refund#1" in scores["retry_discipline"].details["problems"]
    hazards = attempt_hazards(list(scores.values()))
    assert [h.kind for h in hazards] == [DUPLICATE_SIDE_EFFECT]


def _otlp_doc(calls: list[tuple[str, str]]) -> dict[str, Any]:
    """One trace of tool spans as another producer writes them: arguments as JSON text, no digest."""
    root = {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}
    spans = [{"traceId": "a" * 32, "spanId": "b" * 16, "name": "invoke_agent", "startTimeUnixNano": "1",
              "endTimeUnixNano": "99", "attributes": [root]}]  # fmt: skip
    for i, (name, args) in enumerate(calls, start=1):
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                      "gen_ai.tool.call.arguments": args, "tracevals.tool.effect": "write"}  # fmt: skip
        spans.append(
            {"traceId": "a" * 32, "spanId": f"{i:016x}", "parentSpanId": "b" * 16, "name": f"execute_tool {name}",
             "startTimeUnixNano": str(10 * i), "endTimeUnixNano": str(10 * i + 5),
             "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]}
        )  # fmt: skip
    return {
        "resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]
    }


def test_another_producers_key_order_is_the_same_operation_through_the_lake(tmp_path: Path) -> None:
    request: ExportTraceServiceRequest = parse_json_traces(
        _otlp_doc([("send_message", '{"b": 2, "a": 1}'), ("send_message", '{"a":1,"b":2,"idempotencyKey":"x"}')])
    )
    LakeWriter(tmp_path).write_rows(rows_from_request(request))
    con = open_lake(tmp_path)
    [t] = load_trajectories(con)
    first, second = t.tool_calls
    assert operation_key(first) == operation_key(second)  # the writer recorded the same digest for both
    assert second.idempotency_key == "x"  # a camelCase key in the arguments is the call's key
    # and the SQL view agrees with the evaluators: the second send is no retry (the first succeeded)
    assert con.execute("SELECT count(*) FROM retries").fetchall() == [(0,)]
    problems = scores_by_name(t, None)["retry_discipline"].details["problems"]
    assert "duplicate side effect: send_message#2 repeats send_message#1" in problems


def test_an_idempotency_key_in_any_spelling_is_recorded_as_the_key(tmp_path: Path) -> None:
    @tracevals.tool(effect="write")
    def send(to: str, idempotencyKey: str) -> str:
        return "sent"

    t = _traced(tmp_path, lambda: send("c1", idempotencyKey="key-1"), agent=None)
    assert t.tool_calls[0].idempotency_key == "key-1"


# --- effects: an undeclared effect is unknown, and a case's word wins -------------------------------------


def test_an_undeclared_delete_is_risky_when_the_case_says_so(tmp_path: Path) -> None:
    @tracevals.tool  # bare, and no effect declared
    def delete_order(order_id: str) -> str:
        return "deleted"

    t = _traced(tmp_path, lambda: delete_order("o1"))
    assert t.tool_calls[0].effect is None  # nothing recorded, never a guessed "read"
    c = case_json(requires_confirmation=True, tool_effects={"delete_order": "irreversible"})
    policy = scores_by_name(t, c)["tool_policy"]
    assert not policy.passed and "unconfirmed irreversible: delete_order#1" in policy.reason
    declared_read = ToolCall("delete_order", {"order_id": "o1"}, effect="read")
    assert not scores_by_name(trajectory(declared_read), c)["tool_policy"].passed  # the case's word wins


def test_a_tool_that_calls_another_tool_makes_two_calls(tmp_path: Path) -> None:
    @tracevals.tool(effect="irreversible")
    def delete_order(order_id: str) -> str:
        return "deleted"

    @tracevals.tool(effect="write")
    def close_account(customer_id: str) -> str:
        return delete_order("o1")  # the irreversible call happens inside another tool

    t = _traced(tmp_path, lambda: close_account("c1"))
    assert t.tool_names == ["close_account", "delete_order"]
    policy = scores_by_name(t, case_json(requires_confirmation=True))["tool_policy"]
    assert "unconfirmed irreversible: delete_order#2" in policy.reason


# --- trajectory_match ---------------------------------------------------------------------------------


def test_a_recovered_fault_matches_strict_with_or_without_the_retry_listed() -> None:
    failed = call("get_orders", {"customer_id": "c1"}, error_type="rate_limit", status_code=429)
    recovered = trajectory(call("search_customer", {"name": "x"}), failed, call("get_orders", {"customer_id": "c1"}))
    logical = case_json(expected_steps=["search_customer", "get_orders"])
    listed = case_json(expected_steps=["search_customer", "get_orders", "get_orders"])
    for c in (logical, listed):
        assert scores_by_name(recovered, c)["trajectory_match"].passed
    result = scores_by_name(recovered, logical)["trajectory_match"]
    assert result.details["retries_folded"] == 1 and "1 retries counted as the call they repeat" in result.reason
    # a second, different get_orders is no retry: still an extra call
    extra = trajectory(call("search_customer", {"name": "x"}), call("get_orders", {"customer_id": "c1"}),
                       call("get_orders", {"customer_id": "c2"}))  # fmt: skip
    assert not scores_by_name(extra, logical)["trajectory_match"].passed


def test_expected_steps_empty_means_no_tool_call() -> None:
    none = case_json(expected_steps=[])
    assert scores_by_name(trajectory(), none)["trajectory_match"].passed
    made_one = scores_by_name(trajectory(call("get_orders", {"customer_id": "c1"})), none)["trajectory_match"]
    assert not made_one.passed and "extra call get_orders" in made_one.reason
    assert "trajectory_match" not in scores_by_name(trajectory(call("x")), case_json())  # absent: not applicable


def test_a_structured_handoff_is_the_handoff_to_human_step() -> None:
    t = trajectory(call("search_customer", {"name": "x"}, start_ms=1, end_ms=2),
                   handoffs=(Handoff(at_ms=5, reason="two accounts", candidates=("c1", "c2")),))  # fmt: skip
    c = case_json(expected_steps=["search_customer", "handoff_to_human"])
    assert scores_by_name(t, c)["trajectory_match"].passed


def test_match_overrides_take_a_mode_or_a_list_of_keys() -> None:
    t = trajectory(call("get_orders", {"customer_id": "c1", "limit": 5}))
    steps = [{"tool": "get_orders", "args": {"customer_id": "c1", "limit": 1}}]
    by_keys = case_json(expected_steps=steps, match={"args": "exact", "overrides": {"get_orders": ["customer_id"]}})
    by_mode = case_json(expected_steps=steps, match={"args": "exact", "overrides": {"get_orders": "ignore"}})
    strict = case_json(expected_steps=steps, match={"args": "exact"})
    assert scores_by_name(t, by_keys)["trajectory_match"].passed
    assert scores_by_name(t, by_mode)["trajectory_match"].passed
    assert not scores_by_name(t, strict)["trajectory_match"].passed


# --- task_success and injection ------------------------------------------------------------------------


def test_a_broken_final_json_block_fails_even_after_a_valid_draft() -> None:
    schema = {"type": "object", "required": ["refund_id"]}
    c = case_json(success_criteria={"json_schema": schema})
    draft = '```json\n{"refund_id": "r1"}\n```'
    broken = trajectory(output=f'Draft:\n{draft}\nFinal:\n```json\n{{"refund_id": \n```')
    good = trajectory(output=f"Draft:\n```json\n{{}}\n```\nFinal:\n{draft}")
    assert not scores_by_name(broken, c)["task_success"].passed
    assert "the last ```json block of the output is not valid JSON" in scores_by_name(broken, c)["task_success"].reason
    assert scores_by_name(good, c)["task_success"].passed


def test_a_rate_limited_copy_of_a_sent_message_is_recovered_for_every_evaluator() -> None:
    sent = call("send_message", {"to": "c1"}, effect="write", idempotency_key="a", start_ms=1, end_ms=2)
    throttled = call("send_message", {"to": "c1"}, effect="write", idempotency_key="b", error_type="rate_limit",
                     status_code=429, injection_kind="fault", injection_type="429", start_ms=3, end_ms=4)  # fmt: skip
    item = scores_by_name(trajectory(sent, throttled, output="Message sent."), None)["injection"]
    assert item.details["injections"][0]["outcome"] == "recovered"


# --- the README's production pattern, through the collector -------------------------------------------


def answer_after_lookup(conversation: Conversation, decisions: Decisions) -> ModelTurn:
    if not [m for m in conversation.messages if m.role == "tool"]:
        return ModelTurn(content="", tool_calls=(PlannedCall("get_orders", {"customer_id": "c1"}),))
    return ModelTurn.say("Your last order shipped on Monday.")


def _readme_session(lake: Path, monkeypatch: pytest.MonkeyPatch, end_inside: bool, status: str = "finished") -> Any:
    """The README's pattern (a session, an agent, the model asked until it stops asking for tools, the session's end
    marked inside its block or after it, with `status`) into `lake`, and the lake scored."""
    registry = ProfileRegistry()
    registry.register("support-model", answer_after_lookup)

    @tracevals.tool(effect="read")
    def get_orders(customer_id: str) -> list[dict[str, Any]]:
        return [{"order_id": "o1", "status": "shipped"}]

    with running_collector(lake) as collector, SimulatedModelServer(registry=registry) as server:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{collector.http_port}")
        telemetry = tracevals.instrument()  # the endpoint in the environment: OTLP to the collector
        client = openai.OpenAI(base_url=server.base_url, api_key="sim", max_retries=0)
        tools = [{"type": "function", "function": {"name": "get_orders", "parameters": {"type": "object"}}}]
        with tracevals.session("conversation-42"), tracevals.agent("support"):
            messages: list[Any] = [{"role": "user", "content": "Where is my order?"}]
            while True:
                reply = client.chat.completions.create(model="support-model", messages=messages, tools=tools)
                message = reply.choices[0].message
                if not message.tool_calls:
                    break
                messages.append(message.model_dump(exclude_none=True))
                for tool_call in message.tool_calls:
                    result = get_orders(**json.loads(tool_call.function.arguments))
                    messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": json.dumps(result)})
            if end_inside:
                tracevals.end_session("conversation-42", status=status)
        if not end_inside:
            tracevals.end_session("conversation-42", status=status)  # as the README writes it: after the block
        telemetry.shutdown()
        client.close()
    return score_lake(lake, write=False)


def _session_row(lake: Path) -> list[tuple[Any, ...]]:
    query = "SELECT turn_count, finished_by, terminal_state FROM sessions WHERE session_id = 'conversation-42'"
    return open_lake(lake).execute(query).fetchall()


@pytest.mark.parametrize("end_inside", [False, True])
def test_the_readme_pattern_is_complete_without_a_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, end_inside: bool
) -> None:
    lake = tmp_path / "lake"
    run = _readme_session(lake, monkeypatch, end_inside)
    completeness = run.scores.filter(run.scores["evaluator"] == "session_completeness")
    assert completeness.height == 1  # the end marker's own trace is no turn, and is not scored
    assert completeness.get_column("passed").to_list() == [True], completeness.get_column("reason").to_list()
    assert _session_row(lake) == [(1, "end_marker", "completed")]


@pytest.mark.parametrize("status", ["error", "abandoned"])
@pytest.mark.parametrize("end_inside", [False, True])
def test_a_session_its_end_marker_calls_failed_ended_in_error_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, end_inside: bool, status: str
) -> None:
    """`end_session(status=...)` after an agent that answered, with a status that is not "finished": the marker is an
    ERROR span, "so that a failed session is visible as one" (its docstring). `session_completeness` read the
    session's end as an error only for "error", and the `sessions` view said `completed` (reading only the turns'
    roots, then only "error"). Both read whether the marker says the session failed from one place now
    (`attempts.end_error`: its span's status, or its status "error")."""
    lake = tmp_path / "lake"
    run = _readme_session(lake, monkeypatch, end_inside, status=status)
    completeness = run.scores.filter(run.scores["evaluator"] == "session_completeness")
    assert [json.loads(d)["terminal"] for d in completeness.get_column("details").to_list()] == ["error"]
    assert _session_row(lake) == [(1, "end_marker", "error")]


def test_an_attempt_that_raised_is_never_a_pass() -> None:
    # every check that still applied passed, but the agent raised: a failure of availability
    raised = trajectory(call("get_orders", {"customer_id": "c1"}), error_type="AssertionError", variant="v")
    scores = evaluate_all([raised], {})
    assert scores and all(s.passed for s in scores)
    [outcome] = outcomes([raised], scores)
    assert not outcome.passed and outcome.error == "AssertionError"


def test_the_gate_hint_reports_every_run_and_the_cases() -> None:
    import shlex

    from tracevals.cli.gate import _hint

    hint = _hint("lake", ["r1", "r2", "r3", "r4"], "base", "cand", "my cases.jsonl")
    assert "--run r1 --run r2 --run r3 --run r4" in hint
    words = shlex.split(hint)  # as a shell reads it: the task file one word
    assert words[words.index("--tasks") + 1] == "my cases.jsonl"
