"""The causes issue 21 found on real recordings of other frameworks, each on a minimal hand-made recording:
the rule, not the recording. Each of these failed before its fix (noted per test)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.recording import TRACE, doc, kv, said, span, turn

from tracevals.cli import main
from tracevals.queries import open_lake

USER = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi?"}]}])
ANSWER = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Hello!"}], "finish_reason": "stop"}])
USAGE = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "m",
         "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5}  # fmt: skip
CHAT = {**USAGE, "gen_ai.input.messages": USER, "gen_ai.output.messages": ANSWER}
AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}


@pytest.mark.parametrize(
    "parents",
    [
        {"2" * 16: "2" * 16},  # the model span its own parent
        {"2" * 16: "3" * 16, "3" * 16: "2" * 16},  # the model span and an HTTP span parented to each other
    ],
    ids=["self-parent", "two-span cycle"],
)
def test_a_parent_cycle_does_not_make_the_model_call_vanish(tmp_path: Path, parents: dict[str, str]) -> None:
    """The nesting walk followed the cycle to its depth limit and the call, its tokens and messages vanished
    (turn: None, None, 0, 0, 0)."""
    spans = [
        span("1" * 16, None, "invoke_agent a", AGENT, 1000),
        span("2" * 16, parents["2" * 16], "chat m", CHAT, 2000),
    ]
    if "3" * 16 in parents:
        spans.append(span("3" * 16, parents["3" * 16], "POST", {"http.request.method": "POST"}, 1500))
    assert said(turn(tmp_path, doc(spans))) == ("Hi?", "Hello!", 10, 5, 1)


def test_the_conversation_on_the_agent_span_gives_the_turns_texts(tmp_path: Path) -> None:
    """Model spans carrying usage only, the conversation on invoke_agent (an A2A server around a harness):
    user_text and final_text were null."""
    agent = {**AGENT, "gen_ai.input.messages": USER, "gen_ai.output.messages": ANSWER}
    spans = [span("1" * 16, None, "invoke_agent a", agent, 1000), span("2" * 16, "1" * 16, "chat m", USAGE, 2000)]
    assert said(turn(tmp_path, doc(spans))) == ("Hi?", "Hello!", 10, 5, 1)


def test_model_span_content_wins_over_the_agent_spans(tmp_path: Path) -> None:
    other = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "the agent's view"}]}])
    agent = {**AGENT, "gen_ai.input.messages": other}
    spans = [span("1" * 16, None, "invoke_agent a", agent, 1000), span("2" * 16, "1" * 16, "chat m", CHAT, 2000)]
    assert turn(tmp_path, doc(spans))["user_text"] == "Hi?"


def test_a_log_record_without_a_span_id_belongs_to_the_only_model_call(tmp_path: Path) -> None:
    """OpenAI-v2 style records with a trace id and no span id were tied to nothing: texts were null."""
    record = {"timeUnixNano": "2500", "traceId": TRACE, "eventName": "gen_ai.client.inference.operation.details",
              "attributes": [kv("gen_ai.input.messages", USER), kv("gen_ai.output.messages", ANSWER)]}  # fmt: skip
    spans = [span("1" * 16, None, "invoke_agent a", AGENT, 1000), span("2" * 16, "1" * 16, "chat m", USAGE, 2000)]
    assert said(turn(tmp_path, doc(spans, [record]))) == ("Hi?", "Hello!", 10, 5, 1)


def test_with_two_model_calls_a_record_without_a_span_id_is_not_guessed(tmp_path: Path) -> None:
    record = {"timeUnixNano": "2500", "traceId": TRACE, "eventName": "gen_ai.client.inference.operation.details",
              "attributes": [kv("gen_ai.input.messages", USER)]}  # fmt: skip
    spans = [span("1" * 16, None, "invoke_agent a", AGENT, 1000), span("2" * 16, "1" * 16, "chat m", USAGE, 2000),
             span("3" * 16, "1" * 16, "chat m", USAGE, 3000)]  # fmt: skip
    assert turn(tmp_path, doc(spans, [record]))["user_text"] is None


def test_an_outer_http_spans_agent_name_does_not_join_the_agents(tmp_path: Path) -> None:
    """An A2A server span's gen_ai.agent.name (`adk-go-test`) used to join the real agent (`adk_go_test`)."""
    spans = [
        span("1" * 16, None, "POST /a2a", {"gen_ai.agent.name": "adk-go-test", "http.request.method": "POST"}, 900),
        span("3" * 16, "1" * 16, "invoke_agent adk_go_test", {**AGENT, "gen_ai.agent.name": "adk_go_test"}, 1000),
        span("2" * 16, "3" * 16, "chat m", CHAT, 2000),
    ]
    assert turn(tmp_path, doc(spans))["agents"] == ["adk_go_test"]


def test_an_agent_span_named_by_its_operation_alone_names_no_agent(tmp_path: Path) -> None:
    """OpenLIT writes the OpenAI Agents SDK's task and turn spans as `invoke_agent` with no agent name, and the model
    calls run under the turn span: every turn's agents read ["invoke_agent"] (tests/corpus/openai_agents_openlit).
    Such a span names no agent; the call's agent is the named one above it. A span whose name is not its operation
    still names its agent by its name."""
    op = {"gen_ai.operation.name": "invoke_agent"}
    spans = [
        span("1" * 16, None, "invoke_agent", op, 900),
        span("3" * 16, "1" * 16, "invoke_agent triage_agent", {**op, "gen_ai.agent.name": "triage_agent"}, 1000),
        span("4" * 16, "3" * 16, "invoke_agent", op, 1100),
        span("2" * 16, "4" * 16, "chat m", CHAT, 2000),
    ]
    assert turn(tmp_path, doc(spans))["agents"] == ["triage_agent"]
    named = [span("5" * 16, None, "WeatherAgent", op, 900), span("2" * 16, "5" * 16, "chat m", CHAT, 2000)]
    assert turn(tmp_path / "named", doc(named))["agents"] == ["WeatherAgent"]


def test_a_name_only_an_outer_span_carries_still_counts(tmp_path: Path) -> None:
    spans = [
        span("1" * 16, None, "POST /a2a", {"gen_ai.agent.name": "svc"}, 900),
        span("2" * 16, "1" * 16, "chat m", CHAT, 2000),
    ]
    assert turn(tmp_path, doc(spans))["agents"] == ["svc"]


def test_an_error_of_no_known_type_is_OTHER_on_every_path(tmp_path: Path) -> None:
    """status ERROR with no error.type and no exception event: the conventions' `_OTHER` (it was `error`)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    from tracevals.collector.testing import running_collector
    from tracevals.spans.exporters import ParquetSpanExporter

    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}
    failing = span("4" * 16, "1" * 16, "execute_tool t", tool, 3000, status={"code": 2})
    row = turn(tmp_path / "ingest", doc([span("1" * 16, None, "invoke_agent a", AGENT, 1000), failing]))
    assert [c["error_type"] for c in row["tool_calls"]] == ["_OTHER"]
    # the embedded exporter, and the collector (column by column) receiving the same span over OTLP/HTTP
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    for where in ("embedded", "collector"):
        lake = tmp_path / where
        provider = TracerProvider()
        if where == "embedded":
            provider.add_span_processor(SimpleSpanProcessor(ParquetSpanExporter(lake)))
            make(provider, Status, StatusCode)
        else:
            with running_collector(lake) as collector:
                exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces")
                provider.add_span_processor(SimpleSpanProcessor(exporter))
                make(provider, Status, StatusCode)
                assert collector.pipeline.flush()
        types = open_lake(lake).sql("SELECT error_type FROM spans WHERE name = 'execute_tool t'").fetchall()
        assert types == [("_OTHER",)], where


def make(provider: Any, status: Any, code: Any) -> None:
    tracer = provider.get_tracer("x")
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}
    with (
        tracer.start_as_current_span("invoke_agent a", attributes=AGENT),
        tracer.start_as_current_span("execute_tool t", attributes=tool) as s,
    ):
        s.set_status(status(code.ERROR))


def test_a_requested_call_gets_its_result_from_the_tool_message_that_answered_it(tmp_path: Path) -> None:
    """A framework with no tool spans: no span ran the call, and its result is in the next model call's input, in
    a tool message that names the call `id` (not `tool_call_id`). The gap's result was null; and since that
    answer says the call ran (untraced), it is no gap (`is_gap` said "never executed" of it)."""
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    ask = json.dumps([{"role": "assistant", "tool_calls": [call]}])
    history = json.dumps([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
                                              "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "id": "call_1", "content": '{"temp_c": 21}'},
    ])  # fmt: skip
    first = {**USAGE, "gen_ai.input.messages": json.dumps([{"role": "user", "content": "Weather in Paris?"}]),
             "gen_ai.output.messages": ask}  # fmt: skip
    second = {**USAGE, "gen_ai.input.messages": history, "gen_ai.output.messages": ANSWER}
    spans = [span("1" * 16, None, "invoke_agent a", AGENT, 1000), span("2" * 16, "1" * 16, "chat m", first, 2000),
             span("3" * 16, "1" * 16, "chat m", second, 4000)]  # fmt: skip
    [call] = turn(tmp_path, doc(spans))["tool_calls"]
    assert (call["name"], json.loads(call["args"]), json.loads(call["result"]), call["is_gap"]) == (
        "get_weather", {"city": "Paris"}, {"temp_c": 21}, False,
    )  # fmt: skip


def _asked_twice(
    call_ids: list[str | None], answer_ids: list[str | None], answered_in_reverse: bool = False, named: bool = False
) -> str:
    """A turn whose model asks for get_weather(Paris) and get_time(London) in one reply (GenAI parts, ids as given:
    None, none), then is handed both answers in one message (ids as given; `named`: each names its tool), then
    answers."""
    calls = [{"type": "tool_call", "name": n, "arguments": {"city": c}}
             for n, c in (("get_weather", "Paris"), ("get_time", "London"))]  # fmt: skip
    answers: list[dict[str, Any]] = [
        {"type": "tool_call_response", "response": {"result": {"temp_c": t}}} for t in (21, 14)
    ]
    if named:
        for part, name in zip(answers, ("get_weather", "get_time"), strict=True):
            part["name"] = name
    for part, given in [*zip(calls, call_ids, strict=True), *zip(answers, answer_ids, strict=True)]:
        if given is not None:
            part["id"] = given
    ask = [{"role": "assistant", "parts": calls}]
    user = [{"role": "user", "parts": [{"type": "text", "content": "Paris and London?"}]}]
    handed = [{"role": "user", "parts": answers[::-1] if answered_in_reverse else answers}]
    first = {**USAGE, "gen_ai.input.messages": json.dumps(user), "gen_ai.output.messages": json.dumps(ask)}
    second = {**USAGE, "gen_ai.input.messages": json.dumps(user + ask + handed), "gen_ai.output.messages": ANSWER}
    spans = [span("1" * 16, None, "invoke_agent a", AGENT, 1000), span("2" * 16, "1" * 16, "chat m", first, 2000),
             span("3" * 16, "1" * 16, "chat m", second, 4000)]  # fmt: skip
    return doc(spans)


@pytest.mark.parametrize(
    ("call_ids", "answer_ids", "reverse", "named"),
    [
        ([None, None], [None, None], False, False),  # the Gemini API names no call ids
        (["", ""], ["", ""], False, False),  # OpenLLMetry's google-genai writes '' for each
        (["w_0", "w_1"], ["w_1", "w_2"], False, False),  # ids made up apart (OpenTelemetry's google-genai)
        ([None, None], [None, None], True, True),  # no ids, answers in another order, each naming its function
        (["call_a", "call_b"], ["call_a", "call_b"], True, False),  # real ids, answered in another order: by id
    ],
)
def test_answers_without_ids_answer_their_calls_in_order(
    tmp_path: Path, call_ids: list[str | None], answer_ids: list[str | None], reverse: bool, named: bool
) -> None:
    """A tool message whose id no call of the conversation carries (none, '', or one made up apart from the call's)
    answers the call the protocol says: the k-th answer after a run of calls, the k-th call (of the function it
    names, where it names one: Gemini's functionResponse does, in whatever order). Each call read its
    answer (Paris 21, London 14) and so ran. Before: no result, both calls gaps (none, ''), or the first call's
    result lost and the second given the first's answer (ids made up apart). Answers by real ids keep their ids in
    whatever order they come."""
    calls = turn(tmp_path, _asked_twice(call_ids, answer_ids, reverse, named))["tool_calls"]
    read = [(json.loads(c["args"])["city"], json.loads(c["result"]), c["is_gap"]) for c in calls]
    assert read == [("Paris", {"result": {"temp_c": 21}}, False), ("London", {"result": {"temp_c": 14}}, False)]


@pytest.mark.parametrize(("recorded", "expected"), [("{}", "Error: boom"), ("null", "Error: boom"), ('"x"', '"x"')])
def test_a_failed_call_that_recorded_an_empty_result_has_the_answer_the_model_was_handed(
    tmp_path: Path, recorded: str, expected: str
) -> None:
    """LangSmith's OpenTelemetry export writes `{}` as the output of a tool that raised; the model was handed the
    error's text (a LangGraph middleware's ToolMessage). Such an empty value is no result: the turn's call has the
    answer of the conversation, as a call whose span recorded none. Before: `{}`. A value that says something stays."""
    ask = json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "X"}}]}])  # fmt: skip
    answer = {"type": "tool_call_response", "id": "call_1", "response": "Error: boom"}
    handed = [{"role": "user", "parts": [{"type": "text", "content": "Weather in X?"}]}, *json.loads(ask),
              {"role": "tool", "parts": [answer]}]  # fmt: skip
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": '{"city": "X"}', "gen_ai.tool.call.result": recorded}  # fmt: skip
    spans = [
        span("1" * 16, None, "invoke_agent a", AGENT, 1000),
        span(
            "2" * 16, "1" * 16, "chat m", {**USAGE, "gen_ai.input.messages": USER, "gen_ai.output.messages": ask}, 2000
        ),
        span("3" * 16, "1" * 16, "execute_tool get_weather", tool, 3000, status={"code": 2, "message": "boom"}),
        span(
            "4" * 16,
            "1" * 16,
            "chat m",
            {**USAGE, "gen_ai.input.messages": json.dumps(handed), "gen_ai.output.messages": ANSWER},
            5000,
        ),
    ]
    [call] = turn(tmp_path, doc(spans))["tool_calls"]
    assert (call["result"], call["is_error"]) == (expected, True)


def test_a_reported_cost_of_zero_for_tokens_used_is_no_cost(tmp_path: Path) -> None:
    """OpenLIT reports `gen_ai.usage.cost` 0 for a model it has no price for (its price list out of reach, or
    without the model): model_calls took that 0 over the lake's own price. A positive report stands, and so does
    a 0 for a call that used no tokens. Before: 0.0 for the first call."""
    from fixtures.otlp_lakes import ingest_doc

    priced = {**USAGE, "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 1_000_000,
              "gen_ai.usage.output_tokens": 100_000}  # fmt: skip
    ingest_doc(tmp_path / "lake", doc([
        span("1" * 16, None, "chat gpt-4o", {**priced, "gen_ai.usage.cost": 0}, 1000),
        span("2" * 16, None, "chat gpt-4o", {**priced, "gen_ai.usage.cost": "0.5"}, 2000),
        span("3" * 16, None, "chat gpt-4o", {**priced, "gen_ai.usage.input_tokens": 0, "gen_ai.usage.output_tokens": 0,
                                             "gen_ai.usage.cost": 0}, 3000),
    ]))  # fmt: skip
    con = open_lake(tmp_path / "lake", prices={"gpt-4o": (2.5, 10.0)})
    assert con.sql("SELECT cost_usd FROM model_calls ORDER BY start_time").fetchall() == [(3.5,), (0.5,), (0.0,)]


def test_two_spans_of_one_response_are_one_model_call(tmp_path: Path) -> None:
    """Two instrumentations of one call that do not nest: OpenLLMetry's Anthropic span does not make itself
    current, so the anthropic SDK's own span is its sibling, both under the caller's span, both naming the
    response. One call: its tokens once, its content from the span that has it. Before: two calls, the tokens
    twice, the answer lost. Spans naming different responses stay two calls."""
    sdk = {**USAGE, "gen_ai.provider.name": "anthropic", "gen_ai.response.id": "msg_1"}
    spans = [
        span("1" * 16, None, "invoke_agent a", AGENT, 1000),
        span("2" * 16, "1" * 16, "anthropic.chat", {**CHAT, "gen_ai.response.id": "msg_1"}, 2000),
        span("3" * 16, "1" * 16, "anthropic.messages.create", sdk, 2100),
    ]
    row = turn(tmp_path / "one", doc(spans))
    assert said(row) == ("Hi?", "Hello!", 10, 5, 1)
    other = [*spans[:2], span("3" * 16, "1" * 16, "anthropic.messages.create", {**sdk, "gen_ai.response.id": "msg_2"},
                              9000)]  # fmt: skip
    assert said(turn(tmp_path / "two", doc(other)))[2:] == (20, 10, 2)


def test_ingest_reads_sure_base64_ids_and_says_so(tmp_path: Path) -> None:
    """Some exporters write base64 ids in OTLP/JSON; ingest refused the file."""
    spans = [span("1" * 16, None, "invoke_agent a", AGENT, 1000), span("2" * 16, "1" * 16, "chat m", CHAT, 2000)]
    for s in spans:
        s["traceId"] = base64.b64encode(bytes.fromhex(s["traceId"])).decode()
        s["spanId"] = base64.b64encode(bytes.fromhex(s["spanId"])).decode()
        if "parentSpanId" in s:
            s["parentSpanId"] = base64.b64encode(bytes.fromhex(s["parentSpanId"])).decode()
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc(spans)))
    result = CliRunner().invoke(main, ["ingest", "--lake", str(tmp_path / "lake"), str(path)])
    assert result.exit_code == 0, result.output
    assert "5 ids are base64" in result.output
    row = open_lake(tmp_path / "lake").sql("SELECT trace_id, user_text FROM turns").fetchall()
    assert row == [(TRACE, "Hi?")]


def jaeger_export() -> dict[str, Any]:
    """A Jaeger export (its UI's "Download JSON") of one agent turn, as Jaeger writes them: ids without their
    leading zeros, microseconds, typed tags, a process per service, a span log for an exception."""

    def tag(key: str, value: Any) -> dict[str, Any]:
        kind = {bool: "bool", int: "int64", float: "float64"}.get(type(value), "string")
        return {"key": key, "type": kind, "value": value}

    trace = "af7651916cd43dd8448eb211c80319c"  # 31 hex digits: Jaeger drops the leading zero
    spans = [
        {"traceID": trace, "spanID": "1111111111111111", "operationName": "invoke_agent a", "references": [],
         "startTime": 1_760_000_000_000_000, "duration": 5000, "processID": "p1",
         "tags": [tag("gen_ai.operation.name", "invoke_agent"), tag("gen_ai.agent.name", "a"),
                  tag("otel.scope.name", "my.agent"), tag("span.kind", "internal")]},
        {"traceID": trace, "spanID": "2222222222222222", "operationName": "chat m", "processID": "p1",
         "references": [{"refType": "CHILD_OF", "traceID": trace, "spanID": "1111111111111111"}],
         "startTime": 1_760_000_000_001_000, "duration": 1000,
         "tags": [tag(k, v) for k, v in CHAT.items()] + [tag("span.kind", "client")]},
        {"traceID": trace, "spanID": "333333333333333", "operationName": "execute_tool t", "processID": "p1",
         "references": [{"refType": "CHILD_OF", "traceID": trace, "spanID": "1111111111111111"}],
         "startTime": 1_760_000_000_003_000, "duration": 500,
         "tags": [tag("gen_ai.operation.name", "execute_tool"), tag("gen_ai.tool.name", "t"), tag("error", True),
                  tag("otel.status_code", "ERROR"), tag("otel.status_description", "boom")],
         "logs": [{"timestamp": 1_760_000_000_003_100,
                   "fields": [tag("event", "exception"), tag("exception.type", "ValueError")]}]},
    ]  # fmt: skip
    processes = {"p1": {"serviceName": "agent-svc", "tags": [tag("service.version", "1.2")]}}
    return {"data": [{"traceID": trace, "spans": spans, "processes": processes, "warnings": None}], "total": 0}


def test_a_jaeger_export_is_ingested_as_the_spans_it_holds(tmp_path: Path) -> None:
    """Jaeger JSON could not be ingested at all ("no resourceSpans")."""
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(jaeger_export()))
    result = CliRunner().invoke(main, ["ingest", "--lake", str(tmp_path / "lake"), "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"file": str(path), "format": "jaeger", "spans": 3, "logs": 0}]
    con = open_lake(tmp_path / "lake")
    relation = con.sql("SELECT * FROM turns")
    [row] = [dict(zip(relation.columns, r, strict=True)) for r in relation.fetchall()]
    assert row["trace_id"] == "0" + "af7651916cd43dd8448eb211c80319c"  # padded back to 32 hex digits
    assert said(row) == ("Hi?", "Hello!", 10, 5, 1) and row["agents"] == ["a"]
    assert [(c["name"], c["is_error"], c["error_type"]) for c in row["tool_calls"]] == [("t", True, "ValueError")]
    spans = con.sql(
        "SELECT span_id, parent_span_id, span_kind, status_message, service_name, scope_name, duration_ms "
        "FROM spans ORDER BY start_time"
    ).fetchall()
    assert spans == [
        ("1111111111111111", None, "internal", None, "agent-svc", "my.agent", 5.0),
        ("2222222222222222", "1111111111111111", "client", None, "agent-svc", None, 1.0),  # no scope tag
        ("0333333333333333", "1111111111111111", "internal", "boom", "agent-svc", None, 0.5),
    ]


def test_a_tempo_v2_trace_document_is_ingested(tmp_path: Path) -> None:
    """Tempo's API v2 wraps the OTLP document: {"trace": {"resourceSpans": [...]}}."""
    spans = [span("1" * 16, None, "invoke_agent a", AGENT, 1000), span("2" * 16, "1" * 16, "chat m", CHAT, 2000)]
    path = tmp_path / "tempo.json"
    path.write_text(json.dumps({"trace": doc(spans)}))
    result = CliRunner().invoke(main, ["ingest", "--lake", str(tmp_path / "lake"), "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)[0]["format"] == "tempo"
    assert said(turn_of(tmp_path / "lake")) == ("Hi?", "Hello!", 10, 5, 1)


def turn_of(lake: Path) -> dict[str, Any]:
    relation = open_lake(lake).sql("SELECT * FROM turns")
    [row] = [dict(zip(relation.columns, r, strict=True)) for r in relation.fetchall()]
    return row


def test_semantic_conventions_genai_v0_1_0_shapes(tmp_path: Path) -> None:
    """semantic-conventions-genai v0.1.0: `invoke_workflow` merged into `invoke_agent` (INTERNAL), so a
    workflow is an outer invoke_agent around the agent that ran; `run_guardrail` spans; `top_k` an int. The
    turn names the agent its calls ran under (the outer workflow's name used to join it), and a guardrail
    is neither a model nor a tool call."""
    workflow = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support_workflow"}
    guard = {"gen_ai.operation.name": "run_guardrail", "gen_ai.guardrail.name": "pii",
             "gen_ai.guardrail.verdict.type": "allow", "gen_ai.guardrail.action.type": "none"}  # fmt: skip
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "gen_ai.tool.call.arguments": '{"a": 1}',
            "gen_ai.tool.call.result": '{"ok": true}'}  # fmt: skip
    spans = [
        span("1" * 16, None, "invoke_agent support_workflow", workflow, 1000),
        span("6" * 16, "1" * 16, "invoke_agent a", AGENT, 1100),
        span("5" * 16, "6" * 16, "run_guardrail pii", guard, 1500),
        span("2" * 16, "6" * 16, "chat m", {**CHAT, "gen_ai.request.top_k": 40}, 2000),
        span("4" * 16, "6" * 16, "execute_tool t", tool, 3000),
    ]
    row = turn(tmp_path, doc(spans))
    assert said(row) == ("Hi?", "Hello!", 10, 5, 1) and row["agents"] == ["a"]
    assert [(c["name"], json.loads(c["args"]), json.loads(c["result"])) for c in row["tool_calls"]] == [
        ("t", {"a": 1}, {"ok": True})
    ]
