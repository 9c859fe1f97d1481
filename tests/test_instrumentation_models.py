"""Model-call spans from the real `openai` and `anthropic` clients against the simulated server:
sync, async and streaming, read back from the embedded lake they were written to."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pyarrow.parquet as pq
import pytest
from fixtures.simulated import chat_message, lookup_twice, openai_client, serving

import tracevals
from tracevals.simulator import SimulatedModelServer

TOOL_SCHEMA = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
CHAT_TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": TOOL_SCHEMA}}]
RESPONSES_TOOLS = [{"type": "function", "name": "lookup", "parameters": TOOL_SCHEMA}]
ANTHROPIC_TOOLS = [{"name": "lookup", "input_schema": TOOL_SCHEMA}]


@pytest.fixture(scope="module")
def server() -> Iterator[SimulatedModelServer]:
    with serving({"lookup": lookup_twice}) as srv:
        yield srv


@pytest.fixture
def oai(server: SimulatedModelServer) -> Iterator[openai.OpenAI]:
    with openai_client(server) as c:
        yield c


@pytest.fixture
def claude(server: SimulatedModelServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=server.root_url, api_key="sim", max_retries=0) as c:
        yield c


def _table(path: Path) -> Any:
    table = pq.read_table(path)
    for column in ("start_time", "end_time"):  # nanoseconds as integers: Python datetimes stop at µs
        table = table.set_column(table.schema.get_field_index(column), column, table[column].cast("int64"))
    return table


def read_spans(lake: Path) -> list[dict[str, Any]]:
    rows = [row for f in (lake / "spans").rglob("*.parquet") for row in _table(f).to_pylist()]
    for row in rows:
        row["attrs"] = json.loads(row["attributes"])
    return sorted(rows, key=lambda r: (r["start_time"], r["span_id"]))


def llm_spans(lake: Path) -> list[dict[str, Any]]:
    return [s for s in read_spans(lake) if s["kind"] == "llm"]


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def assert_model_span(span: dict[str, Any], provider: str, response_id: str, finish: str) -> None:
    a = span["attrs"]
    assert (span["name"], span["span_kind"], span["status_code"]) == ("chat lookup", "client", "unset")
    assert (a["gen_ai.operation.name"], a["gen_ai.provider.name"], a["gen_ai.request.model"]) == (
        "chat",
        provider,
        "lookup",
    )
    assert a["gen_ai.response.model"] == "lookup" and a["gen_ai.response.id"] == response_id
    assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
    assert a["gen_ai.response.finish_reasons"] == [finish]
    assert a["tracevals.tool_calls.names"] == ["lookup", "lookup"] and len(set(a["tracevals.tool_calls.ids"])) == 2
    assert "gen_ai.input.messages" not in a and "gen_ai.output.messages" not in a  # capture is off


# --- openai chat completions --------------------------------------------------------------------------


def test_openai_chat_span_in_session_under_its_agent(oai: openai.OpenAI, lake: Path, telemetry: Any) -> None:
    with tracevals.session("s-chat"), tracevals.agent("support"):
        r = oai.chat.completions.create(
            model="lookup", messages=user("apple"), tools=CHAT_TOOLS, temperature=0.5, seed=3
        )
    spans = read_spans(lake)
    agent_span = next(s for s in spans if s["kind"] == "agent")
    (span,) = [s for s in spans if s["kind"] == "llm"]
    assert_model_span(span, "openai", r.id, "tool_calls")
    assert span["attrs"]["tracevals.tool_calls.ids"] == [c.id for c in r.choices[0].message.tool_calls or []]
    assert span["attrs"]["gen_ai.request.temperature"] == 0.5 and span["attrs"]["gen_ai.request.seed"] == 3
    assert span["session_id"] == "s-chat" and span["parent_span_id"] == agent_span["span_id"]
    assert r.usage is not None and span["input_tokens"] == r.usage.prompt_tokens  # the lake's canonical column


def test_openai_chat_stream_span_ends_when_the_stream_is_consumed(
    oai: openai.OpenAI, lake: Path, telemetry: Any
) -> None:
    stream = oai.chat.completions.create(
        model="lookup", messages=user("apple"), tools=CHAT_TOOLS, stream=True, stream_options={"include_usage": True}
    )
    assert llm_spans(lake) == []  # open while the response is still being read
    chunks = list(stream)
    (span,) = llm_spans(lake)
    assert_model_span(span, "openai", chunks[0].id, "tool_calls")
    assert span["attrs"]["gen_ai.request.stream"] is True
    assert span["attrs"]["gen_ai.usage.output_tokens"] == chunks[-1].usage.completion_tokens  # type: ignore[union-attr]


def test_a_stream_closed_early_still_gets_its_span(oai: openai.OpenAI, lake: Path, telemetry: Any) -> None:
    with oai.chat.completions.create(model="lookup", messages=user("apple"), stream=True) as stream:
        first = next(iter(stream))
    (span,) = llm_spans(lake)
    assert span["attrs"]["gen_ai.response.id"] == first.id and "gen_ai.response.finish_reasons" not in span["attrs"]
    oai.chat.completions.create(model="lookup", messages=user("apple"), stream=True).close()
    assert len(llm_spans(lake)) == 2


def test_openai_async_chat_plain_and_streamed(server: SimulatedModelServer, lake: Path, telemetry: Any) -> None:
    async def run() -> list[str]:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="sim", max_retries=0) as client:
            plain = await client.chat.completions.create(model="lookup", messages=user("apple"), tools=CHAT_TOOLS)
            stream = await client.chat.completions.create(
                model="lookup",
                messages=user("apple"),
                tools=CHAT_TOOLS,
                stream=True,
                stream_options={"include_usage": True},
            )
            ids = [chunk.id async for chunk in stream]
            return [plain.id, ids[0]]

    ids = asyncio.run(run())
    spans = llm_spans(lake)
    assert len(spans) == 2
    for span, response_id in zip(spans, ids, strict=True):
        assert_model_span(span, "openai", response_id, "tool_calls")


# --- openai Responses API -------------------------------------------------------------------------------


def test_responses_sync_async_and_streamed(
    oai: openai.OpenAI, server: SimulatedModelServer, lake: Path, telemetry: Any
) -> None:
    plain = oai.responses.create(model="lookup", input="apple", tools=RESPONSES_TOOLS, instructions="Be brief.")
    with oai.responses.stream(model="lookup", input="apple", tools=RESPONSES_TOOLS) as stream:
        streamed = stream.get_final_response()

    async def run() -> str:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="sim", max_retries=0) as client:
            events = [e async for e in await client.responses.create(model="lookup", input="apple", stream=True)]
            return str(events[-1].response.id)  # type: ignore[union-attr]

    async_id = asyncio.run(run())
    spans = llm_spans(lake)
    assert [s["attrs"]["gen_ai.response.id"] for s in spans] == [plain.id, streamed.id, async_id]
    for span, response in zip(spans[:2], (plain, streamed), strict=True):
        assert_model_span(span, "openai", response.id, "tool_calls")
        calls = [item.call_id for item in response.output if item.type == "function_call"]
        assert span["attrs"]["tracevals.tool_calls.ids"] == calls


# --- anthropic messages ---------------------------------------------------------------------------------


def test_anthropic_sync_async_streamed_and_stream_helper(
    claude: anthropic.Anthropic, server: SimulatedModelServer, lake: Path, telemetry: Any
) -> None:
    kwargs: dict[str, Any] = {"model": "lookup", "max_tokens": 128, "messages": user("apple"), "tools": ANTHROPIC_TOOLS}
    plain = claude.messages.create(**kwargs)
    raw_events = list(claude.messages.create(**kwargs, stream=True))
    with claude.messages.stream(**kwargs, system="Be brief.") as stream:
        helper = stream.get_final_message()

    async def run() -> list[str]:
        async with anthropic.AsyncAnthropic(base_url=server.root_url, api_key="sim", max_retries=0) as client:
            a = await client.messages.create(**kwargs)
            async with client.messages.stream(**kwargs) as s:
                b = await s.get_final_message()
            return [a.id, b.id]

    async_ids = asyncio.run(run())
    spans = read_spans(lake)
    # one span per call: the SDK's own `anthropic.messages.create` span is turned off while ours is on
    assert [s["scope_name"] for s in spans] == ["tracevals.instrumentation.models"] * 5
    start = raw_events[0].message.id  # type: ignore[union-attr]
    assert [s["attrs"]["gen_ai.response.id"] for s in spans] == [plain.id, start, helper.id, *async_ids]
    for span in spans:
        assert_model_span(span, "anthropic", span["attrs"]["gen_ai.response.id"], "tool_use")
        assert span["attrs"]["tracevals.tool_calls.ids"][0].startswith("toolu_")
    assert spans[0]["attrs"]["tracevals.tool_calls.ids"] == [b.id for b in plain.content if b.type == "tool_use"]
    assert spans[0]["attrs"]["gen_ai.request.max_tokens"] == 128 and spans[1]["attrs"]["gen_ai.request.stream"] is True


def test_a_raw_response_is_read_as_the_response_it_stands_for(
    oai: openai.OpenAI, claude: anthropic.Anthropic, server: SimulatedModelServer, lake: Path, telemetry: Any
) -> None:
    """`with_raw_response` (how LangChain calls OpenAI when it keeps the response headers) hands back the HTTP
    response around the completion: the span read nothing of it (no tokens, no finish reason, none of the tool
    calls the model asked for, so the tool calls that followed were asked for by nobody). It is read as the
    completion now, and the caller's own `parse()` gets the very object the span read. A raw stream and a
    streaming response, whose bodies are the caller's to read, are left alone and still get their span."""
    raw = oai.chat.completions.with_raw_response.create(model="lookup", messages=user("apple"), tools=CHAT_TOOLS)
    chat = raw.parse()
    kwargs: dict[str, Any] = {"model": "lookup", "max_tokens": 128, "messages": user("apple"), "tools": ANTHROPIC_TOOLS}
    raw_message = claude.messages.with_raw_response.create(**kwargs)
    message = raw_message.parse()
    assert raw.parse() is chat and raw_message.parse() is message  # read once, by the span and the caller alike

    async def run() -> str:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="sim", max_retries=0) as client:
            got = await client.chat.completions.with_raw_response.create(model="lookup", messages=user("apple"))
            return got.parse().id

    async_id = asyncio.run(run())
    streamed = oai.chat.completions.with_raw_response.create(model="lookup", messages=user("apple"), stream=True)
    chunks = list(streamed.parse())
    with oai.chat.completions.with_streaming_response.create(model="lookup", messages=user("apple")) as lazy:
        assert json.loads(lazy.read())["object"] == "chat.completion"
    spans = llm_spans(lake)
    assert len(spans) == 5 and all(s["status_code"] == "unset" for s in spans)
    assert_model_span(spans[0], "openai", chat.id, "tool_calls")
    assert spans[0]["attrs"]["tracevals.tool_calls.ids"] == [c.id for c in chat.choices[0].message.tool_calls or []]
    assert_model_span(spans[1], "anthropic", message.id, "tool_use")
    assert spans[2]["attrs"]["gen_ai.response.id"] == async_id
    assert chunks and "gen_ai.response.id" not in spans[3]["attrs"]  # a raw stream: its chunks are the caller's


def test_anthropic_parse_and_the_beta_api_get_their_spans(
    claude: anthropic.Anthropic, server: SimulatedModelServer, lake: Path, telemetry: Any
) -> None:
    """`messages.parse` (structured outputs) posts its request itself, and `client.beta.messages` (betas, MCP
    servers, context management) is a resource of its own: these calls had only the anthropic SDK's own span
    (its stop reason outside `gen_ai.response.finish_reasons`, no requested tool-use ids with capture off, its
    own content switch, no redaction). Each gets the span `messages.create` gets, and only that one."""
    import pydantic

    from tracevals.simulator import ModelTurn

    class Answer(pydantic.BaseModel):
        answer: str

    kwargs: dict[str, Any] = {"model": "lookup", "max_tokens": 128, "messages": user("apple"), "tools": ANTHROPIC_TOOLS}
    beta = claude.beta.messages.create(**kwargs, betas=["context-management-2025-06-27"])
    with claude.beta.messages.stream(**kwargs) as stream:
        streamed = stream.get_final_message()
    json_answer = {"json": lambda conversation, decisions: ModelTurn.say('{"answer": "42"}')}
    with serving(json_answer) as json_server, anthropic.Anthropic(base_url=json_server.root_url, api_key="sim") as c:
        parsed = c.messages.parse(model="json", max_tokens=64, messages=user("what is it?"), output_format=Answer)

        async def run() -> str:
            async with anthropic.AsyncAnthropic(base_url=json_server.root_url, api_key="sim", max_retries=0) as client:
                got = await client.beta.messages.parse(
                    model="json", max_tokens=64, messages=user("and now?"), output_format=Answer
                )
                return got.id

        async_id = asyncio.run(run())
    assert parsed.parsed_output == Answer(answer="42")
    spans = llm_spans(lake)
    assert [s["attrs"]["gen_ai.response.id"] for s in spans] == [beta.id, streamed.id, parsed.id, async_id]
    assert [s["scope_name"] for s in spans] == ["tracevals.instrumentation.models"] * 4  # one span a call
    for span in spans[:2]:
        assert_model_span(span, "anthropic", span["attrs"]["gen_ai.response.id"], "tool_use")
    assert spans[2]["attrs"]["gen_ai.request.model"] == "json" and spans[2]["output_tokens"] > 0


# --- failures -------------------------------------------------------------------------------------------


def test_a_failed_call_has_error_type_status_and_no_message(
    oai: openai.OpenAI, claude: anthropic.Anthropic, lake: Path, telemetry: Any
) -> None:
    with pytest.raises(openai.NotFoundError):
        oai.chat.completions.create(model="gpt-nope", messages=user("apple"))
    with pytest.raises(anthropic.NotFoundError):
        claude.messages.create(model="claude-nope", max_tokens=8, messages=user("apple"))
    for span, exc_type in zip(llm_spans(lake), ("NotFoundError", "NotFoundError"), strict=True):
        assert (span["error_type"], span["status_code"], span["status_message"]) == ("404", "error", "404")
        (event,) = json.loads(span["events"])
        assert event["name"] == "exception" and event["attributes"]["exception.type"] == exc_type
        assert "exception.message" not in event["attributes"]  # content capture is off: no error text


# --- a tool span carries the id of the model request that asked for it ------------------------------------


def _chat_agent(client: openai.OpenAI, tools: tracevals.ToolSet, stream: bool) -> None:
    messages: list[Any] = user("apple")
    for _ in range(3):
        message = chat_message(client, "lookup", messages, CHAT_TOOLS, stream)
        if not message.tool_calls:
            return
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [c.model_dump() for c in message.tool_calls],
            }
        )
        for call in message.tool_calls:
            result = tools.call(call.function.name, call.function.arguments, call_id=call.id)  # type: ignore[union-attr]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def _responses_agent(client: openai.OpenAI, tools: tracevals.ToolSet, stream: bool) -> None:
    items: list[Any] = user("apple")
    for _ in range(3):
        response = client.responses.create(model="lookup", input=items, tools=RESPONSES_TOOLS)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return
        for call in calls:
            items.append(
                {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments}
            )
            output = tools.call(call.name, call.arguments, call_id=call.call_id)
            items.append({"type": "function_call_output", "call_id": call.call_id, "output": output})


def _anthropic_agent(client: anthropic.Anthropic, tools: tracevals.ToolSet, stream: bool) -> None:
    messages: list[Any] = user("apple")
    for _ in range(3):
        if stream:
            with client.messages.stream(model="lookup", max_tokens=64, messages=messages, tools=ANTHROPIC_TOOLS) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(model="lookup", max_tokens=64, messages=messages, tools=ANTHROPIC_TOOLS)
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            return
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        results = [
            {"type": "tool_result", "tool_use_id": b.id, "content": tools.call(b.name, b.input, call_id=b.id)}
            for b in uses
        ]  # type: ignore[arg-type]
        messages.append({"role": "user", "content": results})


@pytest.mark.parametrize(
    ("agent", "stream"),
    [
        (_chat_agent, False),
        (_chat_agent, True),
        (_responses_agent, False),
        (_anthropic_agent, False),
        (_anthropic_agent, True),
    ],
    ids=["chat", "chat-stream", "responses", "anthropic", "anthropic-stream"],
)
def test_tool_span_carries_the_id_the_model_request_asked_for(
    agent: Any, stream: bool, oai: openai.OpenAI, claude: anthropic.Anthropic, lake: Path, telemetry: Any
) -> None:
    tools = tracevals.wrap_tools({"lookup": lambda word: f"{word} is a fruit"})
    with tracevals.session("s-link"), tracevals.agent("support"):
        agent(claude if agent is _anthropic_agent else oai, tools, stream)
    spans = read_spans(lake)
    models = [s for s in spans if s["kind"] == "llm"]
    tool_spans = [s for s in spans if s["kind"] == "tool"]
    assert len(models) == 2 and len(tool_spans) == 2
    requested = models[0]["attrs"]["tracevals.tool_calls.ids"]
    assert [t["tool_call_id"] for t in tool_spans] == requested  # each tool span names the call it executes
    assert all(models[0]["end_time"] <= t["start_time"] <= models[1]["start_time"] for t in tool_spans)
    assert {s["session_id"] for s in spans} == {"s-link"} and len({s["trace_id"] for s in spans}) == 1
