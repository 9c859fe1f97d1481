"""A loop that traces only its model calls: the most common production agent (the plain `openai` client, a
hand-written tool loop, an instrumentation of the client alone: tracevals' own without `@tracevals.tool`, the
official openai-v2, OpenInference, OpenLLMetry, OpenLIT). No span records a tool's execution; the conversation
does: each later request carries the tool's answer (its id always, its text when content is captured).

Such a call ran. It used to be a gap ("requested, never executed"): every session of a correct agent that
called a tool failed `session_completeness`, and its failing tools were never failures. A request nothing
answered is still a gap. And a trace without a session id is a session of its own: the earlier turns its model
input repeats are no turns missing from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner
from fixtures.corpus_check import ROOT as CORPUS
from fixtures.scripted_agent import PROFILE, registry

import tracevals
from tracevals.cli import main
from tracevals.queries import open_lake
from tracevals.simulator.server import SimulatedModelServer

TOOLS = [
    {"type": "function", "function": {"name": name, "description": name, "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}
    for name in ("get_weather", "get_time")
]  # fmt: skip


def _get_weather(city: str) -> dict[str, Any]:
    if city == "Atlantis":
        raise ValueError("unknown city: Atlantis")
    return {"city": city, "temp_c": 21}


def _get_time(city: str) -> dict[str, Any]:
    return {"city": city, "time": "14:00"}


FUNCTIONS = {"get_weather": _get_weather, "get_time": _get_time}
PLANS = {
    "ok": {"calls": [{"tool": "get_weather", "args": {"city": "Paris"}},
                     {"tool": "get_time", "args": {"city": "Paris"}}], "answer": "Sunny and 21 C; it is 14:00."},
    "failed": {"calls": [{"tool": "get_weather", "args": {"city": "Atlantis"}}],
               "answer": "Sorry, I could not find the weather for Atlantis."},
    "dropped": {"calls": [{"tool": "get_weather", "args": {"city": "Rome"}}], "answer": "Cloudy."},
}  # fmt: skip


def _loop(
    client: openai.OpenAI, plan: dict[str, Any], run_tools: bool = True, tools: list[Any] | None = None,
    functions: dict[str, Any] | None = None,
) -> None:  # fmt: skip
    """Call the model, run the tools it asks for and hand it their results (a failure as `Error: Type: message`,
    as loops do), until it answers; `run_tools` False: stop at the first request for a tool (a call dropped)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": json.dumps(plan)}]
    functions = FUNCTIONS if functions is None else functions
    for _ in range(6):
        reply = client.chat.completions.create(model=PROFILE, messages=messages, tools=tools or TOOLS)  # type: ignore[arg-type]
        message = reply.choices[0].message
        if not message.tool_calls or not run_tools:
            return
        messages.append({"role": "assistant", "content": message.content,
                         "tool_calls": [c.model_dump() for c in message.tool_calls]})  # fmt: skip
        for call in message.tool_calls:
            try:
                content = json.dumps(functions[call.function.name](**json.loads(call.function.arguments)))
            except Exception as error:
                content = f"Error: {type(error).__name__}: {error}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


def _record(lake: Path, capture: bool, plans: dict[str, dict[str, Any]], **loop: Any) -> None:
    """Each plan as a session of `_loop` (its `loop` options; `run_tools` False for the session named "dropped"),
    traced by tracevals' own instrumentation into `lake`, against the simulated model."""
    with SimulatedModelServer(registry=registry()) as server:
        telemetry = tracevals.instrument(lake=str(lake), capture_content=capture)
        try:
            client = openai.OpenAI(base_url=server.base_url, api_key="sim", max_retries=0)
            for name, plan in plans.items():
                with tracevals.session(name), tracevals.agent("weather"):
                    _loop(client, plan, run_tools=name != "dropped", **loop)
        finally:
            telemetry.shutdown()


def _score(lake: Path) -> dict[tuple[str, str], dict[str, Any]]:
    result = CliRunner().invoke(main, ["score", "--lake", str(lake), "--since", "30d", "--format", "json"])
    assert result.exit_code == 0, result.output
    return {(row["session_id"] or row["trace_id"], row["evaluator"]): row for row in json.loads(result.stdout)}


@pytest.mark.parametrize("capture", [False, True], ids=["content-off", "content-on"])
def test_a_loop_that_traces_only_its_model_calls_is_scored_as_it_ran(tmp_path: Path, capture: bool) -> None:
    """tracevals' own instrumentation, no `@tracevals.tool`: the tool calls the conversation answered are tool
    steps (with content, their results and the failure the answer reports), not gaps; the session passes
    `session_completeness`. With content off the request's `tracevals.tool_results.ids` say which calls it
    answers. The call the loop dropped is a gap, and its session fails."""
    lake = tmp_path / "lake"
    _record(lake, capture, PLANS)
    con = open_lake(lake)
    steps = con.execute(
        "SELECT session_id, name, status, is_gap, error_type, result FROM steps WHERE step_kind = 'tool' "
        "ORDER BY session_id, step_index"
    ).fetchall()
    content = {
        "ok": [json.dumps({"city": "Paris", "temp_c": 21}), json.dumps({"city": "Paris", "time": "14:00"})],
        "failed": ["Error: ValueError: unknown city: Atlantis"],
    }
    assert steps == [
        ("dropped", "get_weather", "gap", True, None, None),
        ("failed", "get_weather", *(("error", False, "_OTHER") if capture else ("ok", False, None)),
         content["failed"][0] if capture else None),
        ("ok", "get_weather", "ok", False, None, content["ok"][0] if capture else None),
        ("ok", "get_time", "ok", False, None, content["ok"][1] if capture else None),
    ]  # fmt: skip
    scores = _score(lake)
    assert scores[("ok", "session_completeness")]["passed"] is True
    assert scores[("failed", "session_completeness")]["passed"] is True
    dropped = scores[("dropped", "session_completeness")]
    assert dropped["passed"] is False and "1 requested tool calls never executed" in dropped["reason"]
    if capture:  # the failure is known only from the answer's text
        assert "get_weather#1 failed" in scores[("failed", "failure_handling")]["reason"]


PYTHON_STACKS = ["openai_v2/span_only", "openinference_openai/default", "openllmetry_openai/default", "openlit/default",
                 # OpenInference's LiteLLM instrumentor drops a tool message's call id: the protocol's order gives it
                 "openinference_litellm/default",
                 # LiteLLM's own: a reply's calls only in gen_ai.completion.N.function_call.*, without ids
                 "litellm_otel/request_span", "litellm_otel/latest"]  # fmt: skip
NODE_STACKS = ["opentelemetry_openai_js/content", "openinference_openai_js/default", "openllmetry_openai_js/default"]
# the same loop on the Responses API: a call's parts name its item `id` (fc_...) and the call `call_id` (call_...),
# the id its output answers; OpenLLMetry's name the item's id alone (the history repeats the call with its call_id)
RESPONSES_STACKS = ["opentelemetry_openai_js/responses_content", "openinference_openai_js/responses",
                    "openinference_openai/responses", "openllmetry_openai/responses"]  # fmt: skip


@pytest.mark.parametrize("stack", PYTHON_STACKS + NODE_STACKS + RESPONSES_STACKS)
def test_other_instrumentations_of_such_a_loop_are_scored_as_it_ran(tmp_path: Path, stack: str) -> None:
    """Real recordings of the same loop under other instrumentations, Python's and Node's (tests/corpus): every
    session complete, though no span records a tool, none with a turn missing though the second turn's input
    repeats the first (no session id: each trace is a session of its own), and the failing tool a failure."""
    lake = tmp_path / "lake"
    for scenario in ("tool_loop", "parallel", "multi_turn", "tool_error"):
        result = CliRunner().invoke(main, ["ingest", "--lake", str(lake), str(CORPUS / stack / f"{scenario}.json")])
        assert result.exit_code == 0, result.output
    scores = _score(lake)
    completeness = {key: row for key, row in scores.items() if key[1] == "session_completeness"}
    assert len(completeness) == 5 and all(row["passed"] for row in completeness.values()), [
        row["reason"] for row in completeness.values()
    ]
    failed = [row for key, row in scores.items() if key[1] == "failure_handling"]
    assert len(failed) == 1 and "get_weather#1 failed" in failed[0]["reason"]


@pytest.mark.parametrize(
    "stack",
    [
        "openai_v2/legacy_no_content",
        "opentelemetry_openai_js/no_content",
        "opentelemetry_openai_js/responses_no_content",
    ],
)
def test_a_tool_message_that_kept_only_its_call_id_answers_the_call(tmp_path: Path, stack: str) -> None:
    """Content off, OpenTelemetry's OpenAI instrumentations (Python's legacy events, Node's) still write one log
    record per tool message, holding only the id of the call it answers: the call ran (no session is incomplete),
    its answer is unknown (no text, no failure read from it). Every session of a correct agent used to fail
    `session_completeness` ("requested tool calls never executed"). On the Responses API the output keeps its
    `call_id`, which the call's part holds beside its item `id`: the call is read by its `call_id`."""
    lake = tmp_path / "lake"
    for scenario in ("tool_loop", "parallel", "multi_turn", "tool_error"):
        result = CliRunner().invoke(main, ["ingest", "--lake", str(lake), str(CORPUS / stack / f"{scenario}.json")])
        assert result.exit_code == 0, result.output
    requests = (
        open_lake(lake)
        .execute("SELECT tool_name, answered, answer, is_gap FROM requested_tool_calls ORDER BY tool_name")
        .fetchall()
    )
    assert len(requests) == 6 and all(answered and answer is None for _, answered, answer, _ in requests), requests
    scores = _score(lake)
    completeness = {key: row for key, row in scores.items() if key[1] == "session_completeness"}
    assert len(completeness) == 5 and all(row["passed"] for row in completeness.values()), [
        row["reason"] for row in completeness.values()
    ]
    assert not [row for key, row in scores.items() if key[1] == "failure_handling" and not row["passed"]]


def test_turns_are_missing_only_from_a_session_with_an_id(tmp_path: Path) -> None:
    """A model input that repeats two user turns: in a session with an id whose lake holds one trace, a turn is
    missing (it failed somewhere); in a trace without a session id, nothing says where the other turn is (each
    trace is a session of its own): no turn is missing from it."""
    lake = tmp_path / "lake"
    plan = json.dumps({"calls": [], "answer": "Hello again."})
    history = [{"role": "user", "content": plan}, {"role": "assistant", "content": "Hello."},
               {"role": "user", "content": plan}]  # fmt: skip
    with SimulatedModelServer(registry=registry()) as server:
        telemetry = tracevals.instrument(lake=str(lake), capture_content=True)
        try:
            client = openai.OpenAI(base_url=server.base_url, api_key="sim", max_retries=0)
            with tracevals.session("second-turn"), tracevals.agent("weather"):
                client.chat.completions.create(model=PROFILE, messages=history)
            with tracevals.agent("weather"):
                client.chat.completions.create(model=PROFILE, messages=history)
        finally:
            telemetry.shutdown()
    completeness = {key[0]: row for key, row in _score(lake).items() if key[1] == "session_completeness"}
    assert len(completeness) == 2
    identified = completeness.pop("second-turn")
    assert identified["passed"] is False and "turns missing: 2 expected, 1 in the lake" in identified["reason"]
    [(_, alone)] = completeness.items()
    assert alone["passed"] is True, alone["reason"]


def test_the_ids_a_request_answers_are_read_from_every_provider_shape() -> None:
    """Chat completions' `tool` messages, the Responses API's `*_call_output` items, anthropic's `tool_result`
    blocks; dicts or the SDKs' objects; nothing else (a user message, an assistant's own calls)."""
    from types import SimpleNamespace

    from tracevals.instrumentation.model_span import answered_tool_call_ids

    chat = {"messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{}"},
        SimpleNamespace(role="tool", tool_call_id="call_2", content="{}"),
    ]}  # fmt: skip
    responses = {"input": [
        {"role": "user", "content": "weather?"},
        {"type": "function_call", "call_id": "fc_1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "fc_1", "output": "{}"},
        {"type": "custom_tool_call_output", "call_id": "ct_1", "output": "x"},
    ]}  # fmt: skip
    anthropic = {"messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "{}"},
                                     SimpleNamespace(type="tool_result", tool_use_id="toolu_2", content="{}"),
                                     {"type": "text", "text": "and?"}]},
    ]}  # fmt: skip
    assert answered_tool_call_ids(chat) == ["call_1", "call_2"]
    assert answered_tool_call_ids(responses) == ["fc_1", "ct_1"]
    assert answered_tool_call_ids(anthropic) == ["toolu_1", "toolu_2"]
    assert answered_tool_call_ids({"input": "just text", "messages": None}) == []


@tracevals.tool(effect="write", name="book")
def _book(city: str) -> dict[str, Any]:
    raise RuntimeError("booking service unavailable")


def test_a_production_trace_answers_with_its_last_model_text(tmp_path: Path) -> None:
    """No harness recorded an answer, but with content captured the trace's last model call said one (the `turns`
    view's `final_text`): `failure_handling` reads whether it admits the failure: an untraced lookup's failure
    admitted, a traced booking's claimed as done (a hazard). Before, every failure of production traffic was
    `unknown` ("the answer was not captured") however much content the lake held."""
    plans = {
        "admitted": {"calls": [{"tool": "get_weather", "args": {"city": "Atlantis"}}],
                     "answer": "Sorry, I could not find the weather for Atlantis."},
        "claimed": {"calls": [{"tool": "book", "args": {"city": "Paris"}}], "answer": "Done: Paris is booked."},
    }  # fmt: skip
    tools = [*TOOLS, {"type": "function", "function": {"name": "book", "description": "book", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]  # fmt: skip
    outcomes = {}
    for capture in (True, False):
        lake = tmp_path / f"lake-{capture}"
        _record(lake, capture, plans, tools=tools, functions={**FUNCTIONS, "book": _book})
        scores = _score(lake)
        outcomes[capture] = {
            key[0]: row["reason"].split(" -> ")[1].split(" ")[0]
            for key, row in scores.items()
            if key[1] == "failure_handling"
        }
    assert outcomes[True] == {"admitted": "failed_reported", "claimed": "failed_claiming_success"}
    # content off: the untraced call's failure is unknown (its answer was not captured), and so is the answer
    assert outcomes[False] == {"claimed": "unknown"}


def test_a_request_whose_arguments_are_no_json_is_read_as_written(tmp_path: Path) -> None:
    """OpenInference's JavaScript OpenAI instrumentation, streaming, merges two parallel calls into one whose
    arguments are `{"city": "Paris"}{"city": "London"}` (a real recording). Every view that reads requests read it:
    comparing arguments as JSON once made them all fail with a conversion error."""
    lake = tmp_path / "lake"
    recording = CORPUS / "openinference_openai_js" / "stream" / "parallel.json"
    assert CliRunner().invoke(main, ["ingest", "--lake", str(lake), str(recording)]).exit_code == 0
    con = open_lake(lake)
    args = con.execute("SELECT tool_args FROM requested_tool_calls").fetchall()
    assert args == [('{"city": "Paris"}{"city": "London"}',)]
    for view in ("tool_call_gaps", "steps", "turns", "trajectories"):
        assert con.execute(f"SELECT count(*) FROM {view}").fetchone() is not None
