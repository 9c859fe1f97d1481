"""Tool spans (`@tool`, `ToolSet`, MCP `ClientSession.call_tool`), the interception seam, sessions,
agents and hand-overs, and the rule that instrumentation never breaks the program it observes."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp
import pyarrow.parquet as pq
import pytest
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

import tracevals
from tracevals.instrumentation import ToolInvocation, intercept_tools
from tracevals.instrumentation.content import set_capture
from tracevals.instrumentation.context import current_session_id


def read_spans(lake: Path) -> list[dict[str, Any]]:
    rows = []
    for f in (lake / "spans").rglob("*.parquet"):
        table = pq.read_table(f)
        for column in ("start_time", "end_time"):  # nanoseconds as integers: Python datetimes stop at µs
            table = table.set_column(table.schema.get_field_index(column), column, table[column].cast("int64"))
        rows.extend(table.to_pylist())
    for row in rows:
        row["attrs"] = json.loads(row["attributes"])
    return sorted(rows, key=lambda r: (r["start_time"], r["span_id"]))


def tool_spans(lake: Path) -> list[dict[str, Any]]:
    return [s for s in read_spans(lake) if s["kind"] == "tool"]


@tracevals.tool(effect="write")
def send_message(customer_id: str, text: str, idempotency_key: str | None = None) -> dict[str, bool]:
    return {"sent": True}


@tracevals.tool(effect="irreversible")
async def refund(order_id: str, amount: float) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"refunded": order_id}


# --- decorated tools and ToolSet --------------------------------------------------------------------------


def test_sync_and_async_tools_through_a_toolset(lake: Path, telemetry: Any) -> None:
    tools = tracevals.wrap_tools({"send_message": send_message, "refund": refund, "lookup": lambda word: word.upper()})

    async def agent() -> list[Any]:
        return [
            await tools.acall("refund", '{"order_id": "ord_1", "amount": 5}', call_id="call_r"),
            await tools.acall("lookup", {"word": "x"}, call_id="call_l"),
        ]

    with tracevals.session("s-tools"):
        assert tools.call(
            "send_message", {"customer_id": "c1", "text": "hi", "idempotency_key": "k1"}, call_id="call_s"
        ) == {"sent": True}
        assert send_message("c1", text="hi") == {"sent": True}  # positional arguments bind by name
        assert asyncio.run(agent()) == [{"refunded": "ord_1"}, "X"]
    spans = tool_spans(lake)
    assert [(s["name"], s["tool_effect"], s["tool_call_id"]) for s in spans] == [
        ("execute_tool send_message", "write", "call_s"),
        ("execute_tool send_message", "write", None),
        ("execute_tool refund", "irreversible", "call_r"),
        ("execute_tool lookup", None, "call_l"),  # undeclared: no effect recorded, never a guessed "read"
    ]
    assert spans[0]["attrs"]["tracevals.idempotency_key"] == "k1" and spans[0]["span_kind"] == "internal"
    # the same operation with and without an idempotency key: one operation, one hash (a duplicate
    # send stays visible without content capture)
    assert spans[0]["tool_args_hash"] == spans[1]["tool_args_hash"]
    assert spans[0]["tool_args_hash"] != spans[2]["tool_args_hash"]
    assert all(s["session_id"] == "s-tools" and s["status_code"] == "unset" for s in spans)
    assert all(s["attrs"]["gen_ai.tool.type"] == "function" and s["tool_args"] is None for s in spans)


def test_tool_failures_keep_the_facts_a_retry_policy_needs(lake: Path, telemetry: Any) -> None:
    @tracevals.tool()
    def flaky(order_id: str) -> None:
        raise tracevals.ToolError(
            "slow down", error_type="rate_limit", status_code=429, retryable=True, retry_after_s=0.25
        )

    tools = tracevals.wrap_tools({"flaky": flaky, "crash": lambda: 1 / 0})
    for name, arguments in (("flaky", {"order_id": "o"}), ("crash", None), ("nope", "{}"), ("flaky", "{not json")):
        with pytest.raises((tracevals.ToolError, ZeroDivisionError)):
            tools.call(name, arguments)
    spans = tool_spans(lake)
    assert [(s["tool_name"], s["error_type"], s["status_code"]) for s in spans] == [
        ("flaky", "rate_limit", "error"),
        ("crash", "ZeroDivisionError", "error"),
        ("nope", "unknown_tool", "error"),
        ("flaky", "invalid_arguments", "error"),
    ]
    attrs = spans[0]["attrs"]
    assert (attrs["tracevals.retryable"], attrs["http.response.status_code"], attrs["tracevals.retry_after_ms"]) == (
        True,
        429,
        250.0,
    )


# --- the interception seam ----------------------------------------------------------------------------------


class Recorder:
    """Replays recorded results, injects a fault into `refund`, lets everything else through."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, Any], str | None]] = []

    def intercept(self, call: ToolInvocation, proceed: Callable[[], Any]) -> Any:
        self.seen.append((call.name, call.effect, dict(call.arguments), call.call_id))
        if call.name == "send_message":
            call.span.set_attribute("tracevals.replay", "replay")
            return {"sent": "recorded"}
        return proceed()

    async def intercept_async(self, call: ToolInvocation, proceed: Callable[[], Awaitable[Any]]) -> Any:
        self.seen.append((call.name, call.effect, dict(call.arguments), call.call_id))
        call.span.set_attribute("tracevals.injection.kind", "fault")
        raise tracevals.ToolError("injected timeout", error_type="timeout", retryable=True)


def test_an_interceptor_returns_raises_or_proceeds(lake: Path, telemetry: Any) -> None:
    recorder = Recorder()
    lookup = tracevals.tool()(lambda word: word * 2)
    with intercept_tools(recorder):
        with tracevals.tool_call_id("call_1"):
            assert send_message("c1", "hi") == {"sent": "recorded"}  # the real tool never ran
        assert lookup("ab") == "abab"  # called through
        with pytest.raises(tracevals.ToolError, match="injected"):
            asyncio.run(refund("ord_1", 5))
    assert send_message("c1", "hi") == {"sent": True}  # outside the block: only tracing
    assert recorder.seen == [
        ("send_message", "write", {"customer_id": "c1", "text": "hi"}, "call_1"),
        ("<lambda>", None, {"word": "ab"}, None),  # tool() without an effect: unknown, not "read"
        ("refund", "irreversible", {"order_id": "ord_1", "amount": 5}, None),
    ]
    spans = tool_spans(lake)
    assert spans[0]["attrs"]["tracevals.replay"] == "replay" and spans[0]["tool_call_id"] == "call_1"
    assert spans[2]["attrs"]["tracevals.injection.kind"] == "fault" and spans[2]["error_type"] == "timeout"
    assert "tracevals.replay" not in spans[3]["attrs"] and len(spans) == 4


# --- MCP ------------------------------------------------------------------------------------------------------


def _mcp_server() -> MCPServer:
    server = MCPServer("orders")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def get_order(order_id: str) -> str:
        return f"order {order_id}: shipped"

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    def cancel_order(order_id: str) -> str:
        raise ValueError("already shipped")

    @server.tool()
    def note(text: str) -> str:
        return "noted"

    return server


def test_mcp_call_tool_through_a_real_client_and_server(
    lake: Path, telemetry: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="mcp")  # the server logs the failing tool's traceback

    async def agent() -> list[Any]:
        async with mcp.Client(_mcp_server()) as client:
            await client.list_tools()  # the annotations give each tool its effect
            with tracevals.tool_call_id("call_mcp_1"):
                ok = await client.call_tool("get_order", {"order_id": "o1"})
            failed = await client.call_tool("cancel_order", {"order_id": "o1"})
            noted = await client.call_tool("note", {"text": "hello"})
            with intercept_tools(Recorder()), pytest.raises(tracevals.ToolError):
                await client.call_tool("note", {"text": "again"})
            return [ok.is_error, failed.is_error, noted.is_error]

    with tracevals.session("s-mcp"), tracevals.agent("support"):
        assert anyio.run(agent) == [False, True, False]
    ours = [s for s in tool_spans(lake) if s["scope_name"] == "tracevals.instrumentation.tools"]
    assert [(s["tool_name"], s["tool_effect"], s["error_type"], s["tool_call_id"]) for s in ours] == [
        ("get_order", "read", None, "call_mcp_1"),
        ("cancel_order", "irreversible", "tool_error", None),
        ("note", "write", None, None),  # no annotations: MCP tools are presumed to change something
        ("note", "write", "timeout", None),
    ]
    assert all(s["span_kind"] == "client" and s["attrs"]["mcp.method.name"] == "tools/call" for s in ours)
    assert all(s["session_id"] == "s-mcp" and s["tool_args"] is None for s in ours)


def test_mcp_effects_given_explicitly_win(lake: Path, telemetry: Any) -> None:
    from tracevals.instrumentation.mcp_tools import MCPInstrumentor

    MCPInstrumentor().uninstrument()
    MCPInstrumentor().instrument(tool_effects={"get_order": "write"}, default_effect="read")
    try:

        async def agent() -> None:
            async with mcp.Client(_mcp_server()) as client:
                await client.list_tools()
                await client.call_tool("get_order", {"order_id": "o1"})
                await client.call_tool("note", {"text": "x"})

        anyio.run(agent)
    finally:
        MCPInstrumentor().uninstrument()
        MCPInstrumentor().instrument()
    ours = [s for s in tool_spans(lake) if s["scope_name"] == "tracevals.instrumentation.tools"]
    assert [(s["tool_name"], s["tool_effect"]) for s in ours] == [("get_order", "write"), ("note", "read")]


# --- sessions, agents, hand-overs --------------------------------------------------------------------------------


@tracevals.session("s-deco")
@tracevals.agent("triage")
def triage(order_id: str) -> str:
    tracevals.handoff("two matching orders", completed=["looked up"], pending=["refund"], candidates=["o1", "o2"])
    return order_id


@tracevals.session("s-async")
@tracevals.agent("async-agent")
async def async_agent(customer: str | None) -> None:
    await asyncio.sleep(0)  # the span and session must still be current after a suspension
    send_message("c1", "hi")
    if customer:
        raise RuntimeError(f"gave up on customer {customer}")


def test_session_and_agent_decorate_sync_and_async_functions(lake: Path, telemetry: Any) -> None:
    assert triage("o1") == "o1"
    asyncio.run(async_agent(None))
    with pytest.raises(RuntimeError):
        asyncio.run(async_agent("cus_7731"))
    tracevals.end_session("s-async", status="error")
    with tracevals.session("s-outer"):
        tracevals.end_session()
    spans = read_spans(lake)
    rows = [(s["name"], s["kind"], s["session_id"], s["status_code"]) for s in spans]
    assert rows == [
        ("invoke_agent triage", "agent", "s-deco", "unset"),
        ("handoff", "handoff", "s-deco", "unset"),
        ("invoke_agent async-agent", "agent", "s-async", "unset"),
        ("execute_tool send_message", "tool", "s-async", "unset"),
        ("invoke_agent async-agent", "agent", "s-async", "error"),
        ("execute_tool send_message", "tool", "s-async", "unset"),
        ("session.end", "session_end", "s-async", "error"),
        ("session.end", "session_end", "s-outer", "unset"),
    ]
    assert spans[1]["parent_span_id"] == spans[0]["span_id"] and spans[3]["parent_span_id"] == spans[2]["span_id"]
    assert spans[1]["attrs"]["tracevals.handoff.candidates"] == ["o1", "o2"]
    failed = spans[4]
    # content capture is off: the failure's type and frames, not its message (which names the customer)
    assert failed["error_type"] == "RuntimeError" and "cus_7731" not in failed["events"] + failed["status_message"]
    assert (
        spans[6]["attrs"]["tracevals.session.status"] == "error" and spans[7]["attrs"]["tracevals.session.end"] is True
    )


@tracevals.session("s-stream")
@tracevals.agent("streamer")
async def stream_answer(words: str) -> Any:
    """A streaming agent: an async generator, as a web framework's streaming response iterates it."""
    for word in words.split():
        if word == "boom":
            raise RuntimeError("the stream broke")
        yield send_message("c1", word)
        await asyncio.sleep(0)


@tracevals.agent("sync-streamer")
def stream_sync(words: str) -> Any:
    reply = None
    for word in words.split():
        try:
            reply = yield (word, reply)
        except KeyError:  # thrown in by the reader: the generator goes on
            reply = "recovered"
    return "done"


def test_session_and_agent_decorate_generators_for_as_long_as_they_run(lake: Path, telemetry: Any) -> None:
    """A streaming agent is a generator: the decorators entered and left the session and the agent span when
    the call returned the generator, before any of it ran, so its agent span lasted no time and every span of
    its work was outside the agent and outside the session. Now each step runs inside them, and the reader's
    code between steps outside them; a stream that fails fails its agent span; a reader that stops early is
    no failure; values sent and exceptions thrown in reach the generator."""
    seen_between: list[Any] = []

    async def read(words: str, stop_after: int | None = None) -> list[Any]:
        out = []
        stream = stream_answer(words)
        async for item in stream:
            seen_between.append(current_session_id())
            out.append(item)
            if stop_after is not None and len(out) == stop_after:
                await stream.aclose()
                break
        return out

    assert asyncio.run(read("a b c")) == [{"sent": True}] * 3
    assert asyncio.run(read("a b c", stop_after=1)) == [{"sent": True}]
    with pytest.raises(RuntimeError, match="the stream broke"):
        asyncio.run(read("a boom"))
    assert seen_between == [None] * 5  # the reader's code runs outside the session

    with tracevals.session("s-sync"):
        stream = stream_sync("x y z")
        assert next(stream) == ("x", None)
        assert stream.send("hello") == ("y", "hello")
        assert stream.throw(KeyError("k")) == ("z", "recovered")
        with pytest.raises(StopIteration) as ended:
            stream.send(None)
        assert ended.value.value == "done"

    spans = read_spans(lake)
    agents = [s for s in spans if s["kind"] == "agent"]
    assert [(a["name"], a["session_id"], a["status_code"]) for a in agents] == [
        ("invoke_agent streamer", "s-stream", "unset"),
        ("invoke_agent streamer", "s-stream", "unset"),  # the reader stopped early: no failure
        ("invoke_agent streamer", "s-stream", "error"),
        ("invoke_agent sync-streamer", "s-sync", "unset"),
    ]
    assert agents[2]["error_type"] == "RuntimeError"
    tools = [s for s in spans if s["kind"] == "tool"]
    assert len(tools) == 5
    by_id = {a["span_id"]: a for a in agents}
    for tool in tools:  # every call of the stream beneath its agent span, in its session, within its time
        parent = by_id[tool["parent_span_id"]]
        assert tool["session_id"] == "s-stream" and parent["start_time"] <= tool["start_time"]
        assert tool["end_time"] <= parent["end_time"]


# --- never break the host ------------------------------------------------------------------------------------------


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    __repr__ = __str__


def test_annotation_failures_are_logged_never_raised(
    lake: Path, telemetry: Any, caplog: pytest.LogCaptureFixture
) -> None:
    @tracevals.tool()
    def take(thing: Any) -> Any:
        return thing

    thing = Unprintable()
    set_capture(True)  # the worst case: the argument and the result must be serialised too
    try:
        assert take(thing) is thing
        assert asyncio.run(tracevals.tool()(_async_identity)(thing)) is thing
    finally:
        set_capture(False)
    assert "could not annotate tool span take" in caplog.text
    assert "could not record the result of tool take" in caplog.text
    spans = tool_spans(lake)
    assert [s["tool_name"] for s in spans] == ["take", "_async_identity"]  # the spans still end, unannotated
    assert all(s["status_code"] == "unset" and "tracevals.tool.args_hash" not in s["attrs"] for s in spans)


async def _async_identity(thing: Any) -> Any:
    return thing


def test_text_utf8_cannot_hold_is_recorded_as_a_replacement_character(
    lake: Path, telemetry: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A file name that is not UTF-8 comes out of `os.listdir` with a lone surrogate (`surrogateescape`), and
    a session id can carry one too. UTF-8 cannot hold it: the tool span's annotation failed (its arguments
    hash, arguments and result lost, a traceback logged) and the session id was dropped from every span. Each
    such character is recorded as U+FFFD now, and the arguments hash is the hash of what was recorded."""
    from tracevals.model.calls import args_digest

    name = b"caf\xe9 report.txt".decode("utf-8", "surrogateescape")

    @tracevals.tool
    def list_files(folder: str) -> str:
        return name

    set_capture(True)
    try:
        with caplog.at_level(logging.ERROR), tracevals.session(f"s-{name}"), tracevals.agent(f"agent {name}"):
            list_files(folder=name)
    finally:
        set_capture(None)
    whole = "caf\ufffd report.txt"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    [span] = tool_spans(lake)
    assert {s["session_id"] for s in read_spans(lake)} == {f"s-{whole}"}
    assert [s["agent_name"] for s in read_spans(lake) if s["agent_name"]] == [f"agent {whole}"]
    assert json.loads(span["attrs"]["gen_ai.tool.call.arguments"]) == {"folder": whole}
    assert span["attrs"]["gen_ai.tool.call.result"] == whole
    assert span["attrs"]["tracevals.tool.args_hash"] == args_digest({"folder": whole})


_DONE: dict[str, int] = {}  # when each order's work ended (time.time_ns, the clock spans are stamped with)


class AsyncOrders:
    """A tool class: its instances are called, and `__call__` is a coroutine function."""

    async def __call__(self, order_id: str) -> dict[str, str]:
        await asyncio.sleep(0.01)
        _DONE[order_id] = time.time_ns()
        raise RuntimeError(f"backend down for {order_id}")


def test_a_tool_that_returns_an_awaitable_is_traced_until_it_is_done(lake: Path, telemetry: Any) -> None:
    """A tool class with an async `__call__`, a function that hands back a coroutine (`lambda x: fetch(x)`), or
    one that hands back a task: the span ended when the call returned, before the work ran, recorded success
    for a tool that failed, and held "<coroutine object ...>" as its result. Each span now lasts until the work
    is done and holds its outcome; a task comes back as itself (it can still be cancelled)."""

    async def fetch(order_id: str) -> dict[str, str]:
        await asyncio.sleep(0.01)
        _DONE[order_id] = time.time_ns()
        return {"order": order_id}

    tools = tracevals.wrap_tools(
        {
            "refund": AsyncOrders(),
            "fetch": lambda order_id: fetch(order_id),
            "scheduled": lambda order_id: asyncio.ensure_future(fetch(order_id)),
            "stalled": lambda order_id: asyncio.ensure_future(asyncio.sleep(10)),
        }
    )
    seen: dict[str, Any] = {}

    async def agent() -> None:
        with pytest.raises(RuntimeError, match="backend down for o1"):
            await tools.acall("refund", {"order_id": "o1"})
        seen["fetch"] = await tools.acall("fetch", {"order_id": "o2"})
        task = tools["scheduled"]("o3")
        assert isinstance(task, asyncio.Task)  # the same task, not a wrapper of it
        seen["scheduled"] = await task
        stalled = tools["stalled"]("o4")
        stalled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stalled

    set_capture(True)
    try:
        with tracevals.session("s-awaitables"):
            asyncio.run(agent())
    finally:
        set_capture(False)
    assert seen == {"fetch": {"order": "o2"}, "scheduled": {"order": "o3"}}
    spans = {s["tool_name"]: s for s in tool_spans(lake)}
    assert (spans["refund"]["status_code"], spans["refund"]["error_type"]) == ("error", "RuntimeError")
    assert (spans["stalled"]["status_code"], spans["stalled"]["error_type"]) == ("error", "CancelledError")
    for name, order in (("fetch", "o2"), ("scheduled", "o3")):
        assert spans[name]["status_code"] == "unset", name
        assert json.loads(spans[name]["attrs"]["gen_ai.tool.call.result"]) == {"order": order}
    for name, order in (("refund", "o1"), ("fetch", "o2"), ("scheduled", "o3")):  # ended once the work had
        assert spans[name]["end_time"] >= _DONE[order], name


def test_a_tool_that_is_a_generator_is_traced_until_it_is_done(lake: Path, telemetry: Any) -> None:
    """A tool that yields its results (a search that streams hits, an async one alike): its span ended when the
    call handed back the generator, before the tool ran: it said the tool succeeded when it failed midway, held
    `<generator object ...>` as its result, and the spans the tool started were not beneath it. Now the span
    lasts until the generator is done, holds the items it gave, fails with it, and ends without failing when
    its reader stops early."""

    @tracevals.tool(effect="read")
    def search(query: str) -> Any:
        for i in range(3):
            if query == "boom" and i == 1:
                raise RuntimeError("index went away")
            with tracevals.agent(f"ranker {i}"):  # a span the tool starts: beneath the tool's
                pass
            yield f"{query} hit {i}"
        _DONE[query] = time.time_ns()

    @tracevals.tool(effect="read")
    async def asearch(query: str) -> Any:
        for i in range(2):
            await asyncio.sleep(0)
            yield f"{query} async hit {i}"
        _DONE[query] = time.time_ns()

    async def read_async() -> list[str]:
        return [hit async for hit in asearch("cats")]

    set_capture(True)
    try:
        assert list(search("dogs")) == ["dogs hit 0", "dogs hit 1", "dogs hit 2"]
        with pytest.raises(RuntimeError, match="index went away"):
            list(search("boom"))
        first = search("early")
        assert next(first) == "early hit 0"
        first.close()  # the reader stopped: no failure
        assert asyncio.run(read_async()) == ["cats async hit 0", "cats async hit 1"]
    finally:
        set_capture(False)
    spans = read_spans(lake)
    tools = [s for s in spans if s["kind"] == "tool"]
    assert [(t["tool_name"], t["status_code"], t["error_type"]) for t in tools] == [
        ("search", "unset", None),
        ("search", "error", "RuntimeError"),
        ("search", "unset", None),
        ("asearch", "unset", None),
    ]
    results = [json.loads(t["attrs"].get("gen_ai.tool.call.result", "null")) for t in tools]
    assert results[0] == ["dogs hit 0", "dogs hit 1", "dogs hit 2"] and results[2] == ["early hit 0"]
    assert results[3] == ["cats async hit 0", "cats async hit 1"]
    assert tools[0]["end_time"] >= _DONE["dogs"] and tools[3]["end_time"] >= _DONE["cats"]
    rankers = [s for s in spans if s["kind"] == "agent"]
    assert {r["parent_span_id"] for r in rankers} <= {t["span_id"] for t in tools[:3]} and len(rankers) == 5


class Streamer:
    """An agent class whose streaming method is decorated: it stays a method (bound to its instance)."""

    def __init__(self) -> None:
        self.prefix = "word"

    @tracevals.session("s-method")
    @tracevals.agent("method-streamer")
    def stream(self, n: int) -> Any:
        for i in range(n):
            yield f"{self.prefix} {i}"

    @tracevals.agent("static-answerer")
    @staticmethod
    def answer(text: str) -> str:
        return text.upper()


def test_a_decorated_generator_method_stays_a_method(lake: Path, telemetry: Any) -> None:
    assert list(Streamer().stream(2)) == ["word 0", "word 1"]
    assert Streamer().answer("hi") == "HI" and Streamer.answer("yo") == "YO"  # above @staticmethod, too
    span, *_ = [s for s in read_spans(lake) if s["kind"] == "agent"]
    assert (span["name"], span["session_id"]) == ("invoke_agent method-streamer", "s-method")


class OrderTools:
    """Tools as methods, decorated in either order: above `@staticmethod` / `@classmethod` the call failed
    (the wrapper, a plain function, was bound to the instance: `get_order() takes 1 positional argument but 2
    were given`)."""

    prefix = "ord"

    @tracevals.tool(effect="read")
    @staticmethod
    def get_order(order_id: str) -> dict[str, str]:
        return {"id": order_id}

    @staticmethod
    @tracevals.tool(effect="read")
    def get_status(order_id: str) -> str:
        return "shipped"

    @tracevals.tool(effect="read")
    @classmethod
    def next_id(cls, n: int) -> str:
        return f"{cls.prefix}_{n}"

    @tracevals.tool(effect="write")
    def cancel(self, order_id: str) -> bool:
        return True


def test_a_tool_method_is_traced_in_whichever_order_it_is_decorated(lake: Path, telemetry: Any) -> None:
    tools = OrderTools()
    set_capture(True)
    try:
        assert tools.get_order("o1") == {"id": "o1"} and OrderTools.get_order("o2") == {"id": "o2"}
        assert tools.get_status("o1") == "shipped"
        assert tools.next_id(7) == "ord_7" and OrderTools.next_id(8) == "ord_8"
        assert tools.cancel("o1") is True
    finally:
        set_capture(False)
    spans = tool_spans(lake)
    assert [(s["tool_name"], json.loads(s["attrs"]["gen_ai.tool.call.arguments"])) for s in spans] == [
        ("get_order", {"order_id": "o1"}),
        ("get_order", {"order_id": "o2"}),
        ("get_status", {"order_id": "o1"}),
        ("next_id", {"n": 7}),  # neither the class nor the instance is an argument the model chose
        ("next_id", {"n": 8}),
        ("cancel", {"order_id": "o1"}),
    ]
