"""The causes issue 34 found reading agent stacks nobody on the team had recorded, each on a minimal hand-made
recording in the shape the stack writes (from its source and its real recordings in tests/corpus): the rule, not
the recording. Each of these failed before the dialect declarations and the generic rules (tracevals/spans/):
noted per test, as read before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from fixtures.recording import TRACE, calls, doc, kv, said, span, turn, turns

from tracevals.collector.conversion import columnar
from tracevals.collector.conversion import rows as python_path
from tracevals.collector.otlp_json import parse_json_traces

USER = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris."
WEATHER = {"city": "Paris", "forecast": "sunny", "temp_c": 21}


def vercel_ai() -> dict[str, Any]:
    """AI SDK 6 `generateText` with a tool: a run span, two model-call spans, one tool span (ai/dist/index.js)."""
    meta = {"ai.telemetry.functionId": "weather_agent", "ai.telemetry.metadata.sessionId": "conv-1"}
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": USER}]}]
    ask = [{"toolCallId": "call_1", "toolName": "get_weather", "input": '{"city":"Paris"}'}]
    history = [*prompt, {"role": "assistant", "content": [{"type": "text", "text": "Let me look."},
               {"type": "tool-call", "toolCallId": "call_1", "toolName": "get_weather", "input": {"city": "Paris"}}]},
               {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "call_1", "toolName": "get_weather",
                                             "output": {"type": "json", "value": WEATHER}}]}]  # fmt: skip
    model = {**meta, "gen_ai.system": "openai.chat", "gen_ai.request.model": "m", "ai.model.provider": "openai.chat"}
    return doc([
        span("1" * 16, None, "ai.generateText", {**meta, "ai.operationId": "ai.generateText",
             "ai.prompt": {"messages": prompt}, "ai.response.text": ANSWER, "ai.usage.inputTokens": 30}, 1000),
        span("2" * 16, "1" * 16, "ai.generateText.doGenerate", {**model, "ai.operationId": "ai.generateText.doGenerate",
             "ai.prompt.messages": prompt, "ai.response.text": "Let me look.", "ai.response.toolCalls": ask,
             "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 4}, 2000),
        span("3" * 16, "1" * 16, "ai.toolCall", {**meta, "ai.operationId": "ai.toolCall",
             "ai.toolCall.name": "get_weather", "ai.toolCall.id": "call_1", "ai.toolCall.args": '{"city":"Paris"}',
             "ai.toolCall.result": WEATHER}, 3000),
        span("4" * 16, "1" * 16, "ai.generateText.doGenerate", {**model, "ai.operationId": "ai.generateText.doGenerate",
             "ai.prompt.messages": history, "ai.response.text": ANSWER, "gen_ai.usage.input_tokens": 20,
             "gen_ai.usage.output_tokens": 6}, 4000),
    ])  # fmt: skip


def test_the_vercel_ai_sdk_family_is_read(tmp_path: Path) -> None:
    """Before: the tool span was no tool call, no text was read, no agent and no session (None, None, 30, 10, 2;
    tool_calls: the request rebuilt as a gap without a result)."""
    row = turn(tmp_path, vercel_ai())
    assert said(row) == (USER, ANSWER, 30, 10, 2)
    assert row["intermediate_texts"] == ["Let me look."] and row["agents"] == ["weather_agent"]
    assert calls(row) == [("get_weather", {"city": "Paris"}, WEATHER, False, None)] and row["gap_count"] == 0
    assert row["session_id"] == "conv-1"


def haystack(failing: bool = False) -> dict[str, Any]:
    """Haystack 3 Agent: the kind is in the span's name; messages and usage only in the llm span's content tags."""
    user = {"role": "user", "meta": {}, "name": None, "content": [{"text": USER}]}
    call = {"tool_name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_1", "extra": None}
    reply1 = {"role": "assistant", "name": None, "content": [{"tool_call": call}],
              "meta": {"model": "m", "usage": {"prompt_tokens": 10, "completion_tokens": 4}}}  # fmt: skip
    result = {"tool_call_result": {"result": json.dumps(WEATHER), "origin": call, "error": False}}
    reply2 = {"role": "assistant", "name": None, "content": [{"text": ANSWER}],
              "meta": {"model": "m", "usage": {"prompt_tokens": 20, "completion_tokens": 6}}}  # fmt: skip
    tool: dict[str, Any] = {"haystack.tool.name": "get_weather", "haystack.agent.step.tool.input": {"city": "Paris"}}
    if failing:
        tool |= {"haystack.tool.error": True,
                 "haystack.agent.step.tool.output": {"error": "ValueError: unknown city: Paris"}}  # fmt: skip
    else:
        tool["haystack.agent.step.tool.output"] = json.dumps(WEATHER)
    return doc([
        span("1" * 16, None, "haystack.agent.run", {"haystack.agent.max_steps": 10}, 1000),
        span("2" * 16, "1" * 16, "haystack.agent.step.llm", {"haystack.agent.step.llm.input": {"messages": [user]},
             "haystack.agent.step.llm.output": {"replies": [reply1]}}, 2000),
        span("3" * 16, "1" * 16, "haystack.agent.step.tool", tool, 3000),
        span("4" * 16, "1" * 16, "haystack.agent.step.llm", {"haystack.agent.step.llm.input": {"messages": [
             user, {"role": "assistant", "meta": {}, "name": None, "content": [{"tool_call": call}]},
             {"role": "tool", "meta": {}, "name": None, "content": [result]}]},
             "haystack.agent.step.llm.output": {"replies": [reply2]}}, 4000),
    ])  # fmt: skip


def test_the_haystack_family_is_read(tmp_path: Path) -> None:
    """Before: no span was a model or tool call (None, None, 0, 0, 0; no tool calls)."""
    row = turn(tmp_path, haystack())
    assert said(row) == (USER, ANSWER, 30, 10, 2)
    assert calls(row) == [("get_weather", {"city": "Paris"}, WEATHER, False, None)]
    failed = turn(tmp_path / "failing", haystack(failing=True))
    assert [(c[0], c[3], c[4]) for c in calls(failed)] == [("get_weather", True, "ValueError")]  # the flag, the class


def langfuse() -> dict[str, Any]:
    """Langfuse SDK v3+: a generation with OpenAI messages and usage_details, an @observe tool, a failing one."""
    obs = "langfuse.observation."
    ask = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
           "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}  # fmt: skip
    return doc([
        span("1" * 16, None, "weather_agent", {obs + "type": "agent", "session.id": "conv-2"}, 1000),
        span("2" * 16, "1" * 16, "chat", {obs + "type": "generation", obs + "model.name": "m",
             obs + "input": [{"role": "user", "content": USER}], obs + "output": ask,
             obs + "usage_details": {"input": 10, "output": 4}}, 2000),
        span("3" * 16, "1" * 16, "get_weather", {obs + "type": "tool",
             obs + "input": {"args": [], "kwargs": {"city": "Paris"}}, obs + "output": WEATHER}, 3000),
        span("5" * 16, "1" * 16, "get_time", {obs + "type": "tool",
             obs + "input": {"args": [], "kwargs": {"city": "X"}}, obs + "level": "ERROR",
             obs + "status_message": "KeyError: 'X'"}, 3500),
        span("4" * 16, "1" * 16, "chat", {obs + "type": "generation", obs + "model.name": "m",
             obs + "input": {"messages": [{"role": "user", "content": USER}, ask]},
             obs + "output": {"role": "assistant", "content": ANSWER},
             obs + "usage_details": {"input": 20, "output": 6}}, 4000),
    ])  # fmt: skip


def test_the_langfuse_family_is_read(tmp_path: Path) -> None:
    """Before: no span was a call (None, None, 0, 0, 0), the agent unnamed, nothing failed."""
    row = turn(tmp_path, langfuse())
    assert said(row) == (USER, ANSWER, 30, 10, 2) and row["agents"] == ["weather_agent"]
    assert calls(row) == [
        ("get_weather", {"city": "Paris"}, WEATHER, False, None),
        ("get_time", {"city": "X"}, None, True, "KeyError"),
    ]
    assert row["session_id"] == "conv-2"


def mastra() -> dict[str, Any]:
    """@mastra/otel-exporter 1.4: the user's text only on the agent run, chat spans with output text and usage, a
    tool whose `error.type` is Mastra's placeholder `unknown` (the exception event has the type)."""
    failed = {"name": "exception", "timeUnixNano": "3100",
              "attributes": [kv("exception.type", "Error"), kv("exception.message", "unknown city: X")]}  # fmt: skip
    chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai.chat", "gen_ai.request.model": "m",
            "mastra.span.type": "model_inference"}  # fmt: skip
    return doc([
        span("1" * 16, None, "invoke_agent weather_agent", {"gen_ai.operation.name": "invoke_agent",
             "gen_ai.agent.name": "weather_agent", "mastra.span.type": "agent_run", "mastra.agent_run.input": USER,
             "mastra.agent_run.output": {"text": "Let me look." + ANSWER}, "gen_ai.conversation.id": "thread-1"}, 1000),
        span("2" * 16, "1" * 16, "chat m", {**chat, "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 4,
             "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": "Let me look."}]}]},
             2000),
        span("3" * 16, "1" * 16, "execute_tool get_weather", {"gen_ai.operation.name": "execute_tool",
             "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.arguments": {"city": "X"}, "error.type": "unknown",
             "mastra.span.type": "tool_call"}, 3000, status={"code": 2, "message": "unknown city: X"}, events=[failed]),
        span("4" * 16, "1" * 16, "chat m", {**chat, "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 6,
             "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]}, 4000),
    ])  # fmt: skip


def test_mastra_reads_the_user_text_from_the_agent_run_and_its_placeholder_error_type_is_none(tmp_path: Path) -> None:
    """Before: user_text was None (the chat spans carry no input) and the tool's error type Mastra's `unknown`."""
    row = turn(tmp_path, mastra())
    assert said(row) == (USER, ANSWER, 30, 10, 2)
    # the result: the error's message, which Mastra hands the model (test_a_failed_tool_of_the_ai_sdk_answered_...)
    assert calls(row) == [("get_weather", {"city": "X"}, "unknown city: X", True, "Error")]


def test_a_turn_spans_the_traces_its_span_links_join(tmp_path: Path) -> None:
    """AutoGen's runtime starts a trace per message delivery, each linked to the span that sent it. Before: three
    turns (the runtime's, and one per agent), the second agent's call a turn of its own."""
    a, b, c = TRACE, "1" * 31 + "2", "1" * 31 + "3"
    chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "m"}
    first = [{"role": "user", "content": USER}]
    spans = [
        span("a" * 16, None, "autogen publish group_topic", {"messaging.operation": "publish"}, 1000, trace=a),
        span("b" * 16, None, "autogen process triage", {"messaging.operation": "process"}, 2000, trace=b,
             links=[{"traceId": a, "spanId": "a" * 16}]),
        span("c" * 16, "b" * 16, "invoke_agent triage", {"gen_ai.operation.name": "invoke_agent",
             "gen_ai.agent.name": "triage"}, 2100, trace=b),
        span("d" * 16, "c" * 16, "chat m", {**chat, "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 4,
             "gen_ai.input.messages": first}, 2200, trace=b),
        span("e" * 16, None, "autogen process billing", {"messaging.operation": "process"}, 3000, trace=c,
             links=[{"traceId": b, "spanId": "c" * 16}]),
        span("f" * 16, "e" * 16, "invoke_agent billing", {"gen_ai.operation.name": "invoke_agent",
             "gen_ai.agent.name": "billing"}, 3100, trace=c),
        span("9" * 16, "f" * 16, "chat m", {**chat, "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 6,
             "gen_ai.output.messages": [{"role": "assistant", "content": ANSWER}]}, 3200, trace=c),
    ]  # fmt: skip
    row = turn(tmp_path, doc(spans))
    assert (row["trace_id"], said(row), row["agents"]) == (a, (USER, ANSWER, 30, 10, 2), ["billing", "triage"])


def llama_index() -> dict[str, Any]:
    """OpenInference's LlamaIndex spans: a message-less `_prepare_chat_with_tools` LLM span before each call (an
    outer `astream_chat` around the call itself), content parts in `contents.N.message_content.text`, the agent's
    name only in the workflow events' reprs, tool values wrapped."""
    oi = "openinference.span.kind"
    step = {oi: "CHAIN", "output.value": "AgentOutput(response=..., current_agent_name='weather_agent')"}
    prepare = {oi: "LLM", "input.value": '{"tools": []}', "output.value": '{"messages": []}'}
    call = {oi: "LLM", "llm.model_name": "m", "llm.token_count.prompt": 10, "llm.token_count.completion": 4,
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.contents.0.message_content.type": "text",
            "llm.input_messages.0.message.contents.0.message_content.text": USER,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.contents.0.message_content.text": ANSWER}  # fmt: skip
    tool = {oi: "TOOL", "tool.name": "get_weather", "input.value": {"kwargs": {"city": "Paris", "ctx":
            "<workflows.context.context.Context object at 0x7f6d7ade66d0>"}}, "output.value": {"blocks": [{"text":
            str(WEATHER)}], "tool_name": "get_weather", "raw_input": {"args": [], "kwargs": {"city": "Paris"}},
            "raw_output": WEATHER, "is_error": False}}  # fmt: skip
    return doc([
        span("1" * 16, None, "FunctionAgent.run", {oi: "CHAIN"}, 1000),
        span("2" * 16, "1" * 16, "BaseWorkflowAgent.run_agent_step", step, 1100),
        span("3" * 16, "2" * 16, "OpenAILike._prepare_chat_with_tools", prepare, 1200),
        span("4" * 16, "2" * 16, "OpenAILike.astream_chat", {oi: "LLM", "input.value": "{}"}, 2000),
        span("5" * 16, "4" * 16, "OpenAILike.astream_chat", call, 2100),
        span("6" * 16, "1" * 16, "FunctionTool.acall", tool, 3000),
    ])  # fmt: skip


def test_a_message_less_span_before_a_model_call_is_no_call(tmp_path: Path) -> None:
    """Before: 2 model calls, no user or final text, no agent, the tool's arguments and result in their
    wrappers."""
    row = turn(tmp_path, llama_index())
    assert said(row) == (USER, ANSWER, 10, 4, 1) and row["agents"] == ["weather_agent"]
    assert calls(row) == [("get_weather", {"city": "Paris"}, WEATHER, False, None)]


def test_the_agent_is_not_always_an_agent_span(tmp_path: Path) -> None:
    """OpenInference JS (LangChain.js): the root is a CHAIN span named after the graph, every span carries
    `metadata.lc_agent_name`. Before: agents []."""
    meta = {"metadata": {"lc_agent_name": "weather_agent", "thread_id": "t-1"}, "openinference.span.kind": "CHAIN"}
    llm = {**meta, "openinference.span.kind": "LLM", "llm.token_count.prompt": 10, "llm.token_count.completion": 4,
           "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": USER,
           "llm.output_messages.0.message.role": "assistant",
           "llm.output_messages.0.message.content": ANSWER}  # fmt: skip
    spans = [span("1" * 16, None, "weather_agent", meta, 1000), span("2" * 16, "1" * 16, "model_request", meta, 1100),
             span("3" * 16, "2" * 16, "ChatOpenAI", llm, 1200)]  # fmt: skip
    row = turn(tmp_path, doc(spans))
    assert said(row) == (USER, ANSWER, 10, 4, 1) and row["agents"] == ["weather_agent"]


def test_the_final_answer_in_a_choice_record_wrapped_as_message(tmp_path: Path) -> None:
    """Semantic Kernel logs each message as a record whose body is JSON text (`event.name` as an attribute), the
    answer wrapped as {"message": ..., "finish_reason": ...}. Before: final_text None."""
    chat = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "m",
            "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 4}  # fmt: skip

    def record(event: str, body: dict[str, Any], at: int) -> dict[str, Any]:
        return {"timeUnixNano": str(at), "traceId": TRACE, "spanId": "2" * 16,
                "body": {"stringValue": json.dumps(body)},
                "attributes": [kv("event.name", event), kv("gen_ai.system", "openai")]}  # fmt: skip

    logs = [record("gen_ai.user.message", {"role": "user", "content": USER}, 2100),
            record("gen_ai.choice", {"message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"},
                   2200)]  # fmt: skip
    spans = [span("1" * 16, None, "invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}, 1000),
             span("2" * 16, "1" * 16, "chat.completions m", chat, 2000)]  # fmt: skip
    assert said(turn(tmp_path, doc(spans, logs))) == (USER, ANSWER, 10, 4, 1)


WRAPPED = [
    # (framework, arguments as recorded, result as recorded)
    ("LlamaIndex", {"kwargs": {"city": "Paris"}}, {"tool_name": "get_weather", "raw_output": WEATHER, "blocks": []}),
    ("Traceloop JS", {"args": [], "kwargs": {"city": "Paris"}}, WEATHER),
    ("LangChain.js", {"city": "Paris"}, {"output": {"lc": 1, "type": "constructor",
     "id": ["langchain_core", "messages", "ToolMessage"], "kwargs": {"content": json.dumps(WEATHER)}}}),
    ("LangChain (OpenLLMetry)", {"input_str": "{'city': 'Paris'}", "inputs": {"city": "Paris"}, "tags": []},
     {"output": {"type": "tool", "data": {"content": json.dumps(WEATHER)}}, "kwargs": {"name": "get_weather"}}),
    # Langfuse's LangChain handler: the ToolMessage as its fields; a tool returning LangGraph's Command (a hand-off)
    ("LangChain (Langfuse)", {"city": "Paris"}, {"content": json.dumps(WEATHER), "additional_kwargs": {},
     "type": "tool", "name": "get_weather", "id": None, "tool_call_id": "call_1", "status": "success"}),
    ("LangGraph Command (Langfuse)", {"city": "Paris"}, {"graph": "__parent__", "resume": None, "goto": "next_agent",
     "update": {"messages": [{"content": "Hi.", "type": "human"},
                             {"content": json.dumps(WEATHER), "type": "tool", "tool_call_id": "call_1"}]}}),
    # OpenInference's ADK instrumentor: the Gemini FunctionResponse ADK sends back
    ("Google ADK (OpenInference)", {"city": "Paris"}, {"id": "call_1", "name": "get_weather", "response": WEATHER}),
]  # fmt: skip


@pytest.mark.parametrize(("framework", "args", "result"), WRAPPED, ids=[w[0] for w in WRAPPED])
def test_a_tool_value_in_a_wrapper_object_is_unwrapped(tmp_path: Path, framework: str, args: Any, result: Any) -> None:
    """Before: the arguments and results read as their wrappers."""
    keys = {
        "LlamaIndex": ({"openinference.span.kind": "TOOL", "tool.name": "get_weather"}, "input.value", "output.value"),
        "Traceloop JS": ({"traceloop.span.kind": "tool", "traceloop.entity.name": "get_weather"},
                         "traceloop.entity.input", "traceloop.entity.output"),
        "LangChain.js": ({"openinference.span.kind": "TOOL", "tool.name": "get_weather"},
                         "input.value", "output.value"),
        "LangChain (OpenLLMetry)": ({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"},
                                    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"),
        "LangChain (Langfuse)": ({"langfuse.observation.type": "tool"}, "langfuse.observation.input",
                                 "langfuse.observation.output"),
    }  # fmt: skip
    keys["LangGraph Command (Langfuse)"] = keys["LangChain (Langfuse)"]
    keys["Google ADK (OpenInference)"] = keys["LlamaIndex"]  # OpenInference's TOOL span
    base, args_key, result_key = keys[framework]
    row = turn(tmp_path, doc([span("1" * 16, None, "get_weather", {**base, args_key: args, result_key: result}, 1000)]))
    assert calls(row) == [("get_weather", {"city": "Paris"}, WEATHER, False, None)]


def test_an_error_without_a_type_keeps_the_class_its_message_names(tmp_path: Path) -> None:
    """Before: `_OTHER` for all three, and Semantic Kernel's `<class 'ValueError'>` as it was written."""
    tool = {"gen_ai.operation.name": "execute_tool"}
    event = {"name": "exception", "timeUnixNano": "1100", "attributes": [kv("exception.message", "ValueError: no")]}
    spans = [
        span("1" * 16, None, "execute_tool a", {**tool, "gen_ai.tool.name": "a"}, 1000, status={"code": 2},
             events=[event]),
        span("2" * 16, None, "execute_tool b", {**tool, "gen_ai.tool.name": "b"}, 2000,
             status={"code": 2, "message": "KeyError: 'city'"}),
        span("3" * 16, None, "execute_tool c", {**tool, "gen_ai.tool.name": "c", "error.type": "<class 'ValueError'>"},
             3000, status={"code": 2, "message": "ValueError('no')"}),
        span("4" * 16, None, "execute_tool d", {**tool, "gen_ai.tool.name": "d"}, 4000,
             status={"code": 2, "message": "the city is unknown"}),
    ]  # fmt: skip
    assert [(c[0], c[4]) for c in calls(turn(tmp_path, doc(spans)))] == [
        ("a", "ValueError"), ("b", "KeyError"), ("c", "ValueError"), ("d", "_OTHER"),
    ]  # fmt: skip


def test_placeholders_are_never_ids_or_content(tmp_path: Path) -> None:
    """Logfire's default scrubbing writes `[Scrubbed due to 'session']` as every conversation's session.id; other
    instrumentations write `__REDACTED__`, `<redacted>`, `<elided>`, `<not specified>`. Before: the two
    conversations were one session, and the placeholders were the call's id, arguments, result and the user's
    text."""
    scrubbed = "[Scrubbed due to 'session']"
    chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "session.id": scrubbed,
            "gen_ai.input.messages": [{"role": "user", "content": "<redacted>"}]}  # fmt: skip
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "t",
        "gen_ai.tool.call.id": "<not specified>",
        "gen_ai.tool.call.arguments": "__REDACTED__",
        "gen_ai.tool.call.result": "<elided>",
        "session.id": scrubbed,
    }
    other = "1" * 31 + "2"
    rows = turns(tmp_path, doc([
        span("1" * 16, None, "chat m", chat, 1000), span("2" * 16, None, "execute_tool t", tool, 2000),
        span("3" * 16, None, "chat m", chat, 5000, trace=other),
    ]))  # fmt: skip
    assert [(r["session_id"], r["user_text"]) for r in rows] == [(None, None), (None, None)]
    assert [(c["tool_call_id"], c["args"], c["result"]) for c in rows[0]["tool_calls"]] == [(None, None, None)]


@pytest.mark.parametrize(
    "document",
    [vercel_ai(), haystack(), haystack(failing=True), langfuse(), mastra(), llama_index()],
    ids=["vercel_ai", "haystack", "haystack-failing", "langfuse", "mastra", "llama_index"],
)
def test_the_collector_reads_each_cause_as_the_reference_conversion_does(document: dict[str, Any]) -> None:
    """The collector's columnar path reads the declarations as the Python path does, row for row."""
    request = parse_json_traces(document)
    expected = python_path.spans_table(request)
    got = columnar.spans_table(request)
    assert got.equals(expected), pa.Table.from_pylist(
        [{"column": n} for n in expected.column_names if not got[n].equals(expected[n])]
    ).to_pylist()


def test_a_bare_argument_value_is_the_request_whose_arguments_hold_it(tmp_path: Path) -> None:
    """LangGraph's OpenInference TOOL spans record a one-argument tool's value bare (`Paris`) and no call id; the
    model's request has the arguments. Parallel calls can start in another order than asked: each is the request
    whose arguments hold its value, its result the answer to that request, and the calls one response asked for
    are in the order asked. Before: the bare values, in the order the spans started."""
    oi = "openinference.span.kind"
    llm = {oi: "LLM", "llm.token_count.prompt": 10, "llm.token_count.completion": 4}
    tool = {oi: "TOOL", "tool.name": "get_weather"}
    spans = [
        span("1" * 16, None, "agent", {oi: "AGENT"}, 1000),
        span("2" * 16, "1" * 16, "ChatOpenAI", {**llm, "llm.output_messages.0.message.role": "assistant",
             "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_Paris",
             "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
             "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Paris"}',
             "llm.output_messages.0.message.tool_calls.1.tool_call.id": "call_London",
             "llm.output_messages.0.message.tool_calls.1.tool_call.function.name": "get_weather",
             "llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments": '{"city": "London"}'}, 2000),
        span("3" * 16, "1" * 16, "get_weather", {**tool, "input.value": "London"}, 3000),
        span("4" * 16, "1" * 16, "get_weather", {**tool, "input.value": "Paris"}, 3001),
        span("5" * 16, "1" * 16, "ChatOpenAI", {**llm, "input.value": "x", "llm.input_messages.0.message.role": "tool",
             "llm.input_messages.0.message.tool_call_id": "call_Paris",
             "llm.input_messages.0.message.content": json.dumps({"city": "Paris"}),
             "llm.input_messages.1.message.role": "tool", "llm.input_messages.1.message.tool_call_id": "call_London",
             "llm.input_messages.1.message.content": json.dumps({"city": "London"})}, 4000),
    ]  # fmt: skip
    row = turn(tmp_path, doc(spans))
    london, paris = {"city": "London"}, {"city": "Paris"}
    assert [(c[1], c[2]) for c in calls(row)] == [(paris, paris), (london, london)]  # in the order asked


def test_a_result_recorded_as_its_python_repr_is_its_value(tmp_path: Path) -> None:
    """Agno's TOOL spans and AutoGen's tool messages hand the model `str(value)`: a dict's Python repr. Before:
    the repr, as text, for both."""
    oi = "openinference.span.kind"
    chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": 1}
    ask = [{"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_time", "arguments": '{"city": "Paris"}'}}]}]  # fmt: skip
    answer = [{"role": "tool", "tool_call_id": "call_1", "content": "{'city': 'Paris', 'time': '14:00', 'dst': True}"}]
    spans = [
        span("1" * 16, None, "get_weather", {oi: "TOOL", "tool.name": "get_weather", "input.value": '{"city": "Paris"}',
             "output.value": str(WEATHER)}, 1000),
        span("2" * 16, None, "chat m", {**chat, "gen_ai.output.messages": ask}, 2000),
        span("3" * 16, None, "chat m", {**chat, "gen_ai.input.messages": answer}, 4000),
    ]  # fmt: skip
    assert [(c[0], c[2]) for c in calls(turn(tmp_path, doc(spans)))] == [
        ("get_weather", WEATHER), ("get_time", {"city": "Paris", "time": "14:00", "dst": True}),
    ]  # fmt: skip


def test_a_text_whose_finish_reason_asked_for_tools_is_intermediate(tmp_path: Path) -> None:
    """OpenLLMetry JS over the AI SDK writes an answer of a text and tool calls as the text alone, its finish reason
    `tool_call` (tests/corpus/vercel_ai_v6_openllmetry). Before: no intermediate text, as for an answer of text."""
    chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": 1}
    user = [{"role": "user", "parts": [{"type": "text", "content": USER}]}]
    look = [{"type": "text", "content": "Let me look."}]
    first = [{"role": "assistant", "finish_reason": "tool_call", "parts": look}]
    last = [{"role": "assistant", "finish_reason": "stop", "parts": [{"type": "text", "content": ANSWER}]}]
    spans = [
        span("1" * 16, None, "chat m", {**chat, "gen_ai.input.messages": user, "gen_ai.output.messages": first}, 1000),
        span("2" * 16, None, "chat m", {**chat, "gen_ai.input.messages": user, "gen_ai.output.messages": last}, 2000),
    ]  # fmt: skip
    row = turn(tmp_path, doc(spans))
    assert row["intermediate_texts"] == ["Let me look."] and row["final_text"] == ANSWER


def test_a_failed_tool_of_the_ai_sdk_answered_its_error_message(tmp_path: Path) -> None:
    """The AI SDK (up to 6, and through OpenLLMetry JS, whose tool spans keep `ai.toolCall.*` only) and Mastra hand
    the model a failing tool's error message as its result: with content off only the span's status says it. A
    framework that declares no such thing keeps no result. Before: no result for either."""
    failed = {"status": {"code": 2, "message": "unknown city: Atlantis"}}
    chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": 1}
    tools = {
        "ai.toolCall": {"ai.operationId": "ai.toolCall", "ai.toolCall.name": "get_weather", "ai.toolCall.id": "c1"},
        "execute_tool get_weather": {"ai.toolCall.name": "get_weather", "gen_ai.tool.name": "get_weather",
                                     "gen_ai.tool.call.id": "c1"},  # OpenLLMetry JS
        "execute_tool": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"},  # conventions
    }  # fmt: skip
    read = []
    for name, attrs in tools.items():
        spans = [span("1" * 16, None, "chat m", chat, 1000), span("2" * 16, None, name, attrs, 2000, **failed)]
        read.append(calls(turn(tmp_path / name, doc(spans)))[0][2:])
    assert read == [("unknown city: Atlantis", True, "_OTHER"), ("unknown city: Atlantis", True, "_OTHER"),
                    (None, True, "_OTHER")]  # fmt: skip


def test_a_text_the_history_shows_beside_tool_calls_is_intermediate(tmp_path: Path) -> None:
    """The OpenAI Agents SDK's OTel v2 bridge records an answer of a text and a tool call as the text alone; the
    next call's history has both in one assistant message. Before: no intermediate text."""
    chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": 1}
    user = [{"role": "user", "parts": [{"type": "text", "content": USER}]}]
    look = {"role": "assistant", "parts": [{"type": "text", "content": "Let me look."}]}
    asked = {"role": "assistant", "parts": [*look["parts"], {"type": "tool_call", "id": "c1", "name": "get_weather",
             "arguments": '{"city": "Paris"}'}]}  # fmt: skip
    last = [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]
    spans = [
        span("1" * 16, None, "chat m", {**chat, "gen_ai.input.messages": user, "gen_ai.output.messages": [look]}, 1000),
        span("2" * 16, None, "chat m", {**chat, "gen_ai.input.messages": [*user, asked],
             "gen_ai.output.messages": last}, 2000),
    ]  # fmt: skip
    row = turn(tmp_path, doc(spans))
    assert row["intermediate_texts"] == ["Let me look."] and row["final_text"] == ANSWER


def test_a_choice_event_whose_message_is_text_is_the_answer(tmp_path: Path) -> None:
    """Strands' legacy conventions: the model span's `gen_ai.choice` event holds `message` (its Bedrock blocks as
    JSON text) and `finish_reason`, no role and no content. Before: no answer, no tool call's arguments."""
    chat = {"gen_ai.operation.name": "chat", "gen_ai.system": "strands-agents", "gen_ai.usage.input_tokens": 1}

    def event(name: str, **attrs: Any) -> dict[str, Any]:
        return {"name": name, "timeUnixNano": "1", "attributes": [kv(k, v) for k, v in attrs.items()]}

    use = {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Paris"}}
    ask = [{"text": "Let me look."}, {"toolUse": use}]
    user = event("gen_ai.user.message", content=json.dumps([{"text": USER}]))
    spans = [
        span("1" * 16, None, "chat", chat, 1000,
             events=[user, event("gen_ai.choice", message=json.dumps(ask), finish_reason="tool_use")]),
        span("2" * 16, None, "execute_tool get_weather", {"gen_ai.operation.name": "execute_tool",
             "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "t1"}, 2000),
        span("3" * 16, None, "chat", chat, 3000,
             events=[user, event("gen_ai.choice", message=json.dumps([{"text": ANSWER}]), finish_reason="end_turn")]),
    ]  # fmt: skip
    row = turn(tmp_path, doc(spans))
    assert (row["user_text"], row["final_text"], row["intermediate_texts"]) == (USER, ANSWER, ["Let me look."])
    assert calls(row) == [("get_weather", {"city": "Paris"}, None, False, None)]
