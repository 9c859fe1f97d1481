"""Record and replay of model calls: the real openai and anthropic clients against a real simulated
server, recorded through the harness, then replayed with that server stopped and the client pointed at
a port nothing listens on, so any request that got through would fail the attempt."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pydantic
import pytest
from fixtures.simulated import lookup_twice

import tracevals
from tracevals.demo import agent as demo_agent
from tracevals.demo import tasks_path
from tracevals.demo.profiles import make_profile
from tracevals.demo.rates import FailureRates
from tracevals.harness import run_cases
from tracevals.harness.attempts import AttemptResult
from tracevals.harness.cassettes import ANY_ATTEMPT
from tracevals.harness.interceptor import RunPlan
from tracevals.harness.model_cassettes import KEY_IGNORES, model_key
from tracevals.instrumentation.model_span import canonical_sha256
from tracevals.model.tasks import load_cases
from tracevals.queries import open_lake
from tracevals.simulator import (
    Conversation,
    ModelTurn,
    ProfileRegistry,
    SimulatedModel,
    SimulatedModelServer,
)
from tracevals.simulator.engine import Completion

DEMO_CASES = {c.case_id: c for c in load_cases(tasks_path())}
TOOL_SCHEMA = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
CHAT_TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": TOOL_SCHEMA}}]
ANTHROPIC_TOOLS = [{"name": "lookup", "description": "Look a word up.", "input_schema": TOOL_SCHEMA}]


# --- a server that counts what it serves ------------------------------------------------------------------


class CountingModel(SimulatedModel):
    """The simulated model, counting the completions it served (every chat, responses and messages request)."""

    def __init__(self, registry: ProfileRegistry) -> None:
        super().__init__(registry)
        self.served = 0
        self._lock = threading.Lock()

    def complete(self, conversation: Conversation) -> Completion:
        with self._lock:
            self.served += 1
        return super().complete(conversation)


def _registry() -> ProfileRegistry:
    registry = ProfileRegistry()
    registry.add(make_profile("careful", FailureRates.zero()))
    registry.add(make_profile("sloppy", FailureRates.uniform(0.3).but(follow_injection=0.0)))
    registry.register("lookup", lookup_twice)
    registry.register("json", lambda c, d: ModelTurn.say(json.dumps({"word": c.first_user_text()})))
    return registry


@pytest.fixture
def server() -> Iterator[SimulatedModelServer]:
    srv = SimulatedModelServer(registry=_registry())
    srv.model = CountingModel(srv.model.registry)
    with srv:
        yield srv


def served(server: SimulatedModelServer) -> int:
    assert isinstance(server.model, CountingModel)
    return server.model.served


def dead_url(suffix: str = "/v1") -> str:
    """A base URL on a port nothing listens on: a request that got through would fail to connect."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{suffix}"


@pytest.fixture
def batch_telemetry(lake: Path) -> Iterator[tracevals.Telemetry]:
    t = tracevals.instrument(lake=lake, batch=True, capture_content=True)
    yield t
    t.shutdown()


def _run(agent: Any, cases: list[Any], run_id: str, k: int, plan: RunPlan, **settings: Any) -> list[AttemptResult]:
    return run_cases(agent, cases, k=k, run_id=run_id, variant="v", seed=5, concurrency=4, settings=settings, plan=plan)


def outcomes(results: list[AttemptResult]) -> dict[tuple[str, int], tuple[str | None, str | None]]:
    return {(r.context.task_id, r.context.attempt): (r.output, r.error) for r in results}


def trajectories(lake: Path, run_id: str) -> dict[tuple[str, int], list[tuple[Any, ...]]]:
    rows = (
        open_lake(lake)
        .execute(
            "select task_id, attempt, tool_name, tool_args, error_type from tool_calls where run_id = ? "
            "order by task_id, attempt, call_index",
            [run_id],
        )
        .fetchall()
    )
    out: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
    for task, attempt, name, args, error in rows:
        kept = {k: v for k, v in json.loads(args).items() if k != "idempotency_key"}  # carries the run id
        out.setdefault((task, attempt), []).append((name, kept, error))
    return out


def model_spans(lake: Path, run_id: str) -> list[dict[str, Any]]:
    rows = (
        open_lake(lake)
        .execute(
            "select r.task_id, r.attempt, s.attributes from spans s join runs r using (trace_id) "
            "where s.kind = 'llm' and r.run_id = ? order by r.task_id, r.attempt, s.start_time",
            [run_id],
        )
        .fetchall()
    )
    return [{"task": t, "attempt": a, **json.loads(attrs)} for t, a, attrs in rows]


def tapes_of(folder: Path) -> dict[str, list[dict[str, Any]]]:
    return {p.name: json.loads(p.read_text())["interactions"] for p in sorted(folder.glob("*.json"))}


# --- the acceptance test: the demo agent, recorded, then replayed with no server ------------------------


def test_the_demo_agent_replays_identically_with_the_model_server_stopped(
    server: SimulatedModelServer, lake: Path, batch_telemetry: tracevals.Telemetry, tmp_path: Path
) -> None:
    cases = [DEMO_CASES[c] for c in ("clear_01", "fault_02", "confirm_01", "vague_02")]
    tapes = tmp_path / "tapes"
    recorded = _run(
        demo_agent.order_support_agent,
        cases,
        "recorded",
        2,
        RunPlan(cassette_dir=tapes, cassette_mode="record"),
        base_url=server.base_url,
        model="sloppy",
    )
    assert all(r.error is None for r in recorded), [r.error for r in recorded]
    models = tapes_of(tapes / "models")
    assert sorted(models) == sorted(f"{c.case_id}.json" for c in cases)
    first = models["clear_01.json"][0]
    assert first["provider"] == "openai" and first["method"] == "chat.completions.create"
    assert first["response"]["class"] == "openai.types.chat.chat_completion.ChatCompletion"
    assert not KEY_IGNORES & set(first["request"])  # the seed each attempt sends is not part of the key
    calls_recorded = served(server)
    assert calls_recorded == sum(len(v) for v in models.values()) > 8
    server.stop()

    plan = RunPlan(cassette_dir=tapes, cassette_mode="replay")
    replayed = _run(demo_agent.order_support_agent, cases, "replayed", 2, plan, base_url=dead_url(), model="sloppy")
    batch_telemetry.force_flush()
    assert served(server) == calls_recorded  # the stopped server saw nothing new
    assert plan.misses == [], "\n".join(plan.misses)
    assert outcomes(replayed) == outcomes(recorded) and len(replayed) == 8
    assert trajectories(lake, "replayed") == trajectories(lake, "recorded")
    assert len(trajectories(lake, "recorded")) == 8
    live, again = model_spans(lake, "recorded"), model_spans(lake, "replayed")
    assert {s["tracevals.replay"] for s in live} == {"record"} and {s["tracevals.replay"] for s in again} == {"replay"}
    # a replayed call has the span of a live one: ids, usage, finish reasons, requested tool calls
    fields = ("gen_ai.response.id", "gen_ai.usage.input_tokens", "gen_ai.response.finish_reasons")
    fields += ("tracevals.tool_calls.names", "tracevals.request.system_sha256", "gen_ai.request.seed")
    assert [[s.get(f) for f in fields] for s in again] == [[s.get(f) for f in fields] for s in live]
    assert all(s["gen_ai.usage.input_tokens"] > 0 for s in again)


# --- anthropic: messages.create with tools, and the messages.stream() helper ----------------------------


def anthropic_agent(word: str, ctx: tracevals.AttemptContext) -> str:
    @tracevals.tool(effect="read")
    def lookup(word: str) -> str:
        return f"{word}={len(word)}"

    client = anthropic.Anthropic(base_url=ctx.settings["base_url"], api_key="sim-key", max_retries=0)
    kwargs: dict[str, Any] = {"model": "lookup", "max_tokens": 256, "tools": ANTHROPIC_TOOLS, "system": "Be brief."}
    messages: list[dict[str, Any]] = [{"role": "user", "content": word}]
    first = client.messages.create(**kwargs, messages=messages, extra_body={"seed": ctx.seed})
    uses = [b for b in first.content if b.type == "tool_use"]
    messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]})
    results = [{"type": "tool_result", "tool_use_id": b.id, "content": lookup(**b.input)} for b in uses]
    messages.append({"role": "user", "content": results})
    with client.messages.stream(**kwargs, messages=messages) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_message()
    return f"{first.stop_reason}/{final.stop_reason}: {''.join(texts)} [{final.usage.output_tokens}]"


def test_anthropic_messages_and_stream_helper_replay_with_the_server_stopped(
    server: SimulatedModelServer, lake: Path, batch_telemetry: tracevals.Telemetry, tmp_path: Path
) -> None:
    cases, tapes, recorded = _record(anthropic_agent, tmp_path, server, "apple", "pear", k=2)
    assert all(r.error is None and r.output and r.output.startswith("tool_use/end_turn: Found") for r in recorded)
    doc = tapes_of(tapes / "models")["apple.json"]
    assert {i["method"] for i in doc} == {"messages.create", "messages.stream"}
    streamed = next(i for i in doc if i["method"] == "messages.stream")
    assert streamed["complete"] is True and streamed["stream"][0]["data"]["type"] == "message_start"
    assert "sim-key" not in (tapes / "models" / "apple.json").read_text()
    before = served(server)
    server.stop()

    plan, replayed = _replay(anthropic_agent, cases, tapes, k=2)
    batch_telemetry.force_flush()
    assert served(server) == before and plan.misses == []
    assert outcomes(replayed) == outcomes(recorded)
    assert trajectories(lake, "rep") == trajectories(lake, "rec")
    spans = model_spans(lake, "rep")
    assert len(spans) == 8 and {s["tracevals.replay"] for s in spans} == {"replay"}
    assert all(s["gen_ai.provider.name"] == "anthropic" and s["gen_ai.usage.output_tokens"] > 0 for s in spans)


def _word_cases(tmp_path: Path, *words: str) -> list[Any]:
    path = tmp_path / "words.jsonl"
    path.write_text("".join(json.dumps({"case_id": w, "input": w}) + "\n" for w in words))
    return load_cases(path)


def _record(
    agent: Any, tmp_path: Path, server: SimulatedModelServer, *words: str, k: int = 1
) -> tuple[list[Any], Path, list[AttemptResult]]:
    """(cases, tapes, results): `agent` run k times on a case per word, recorded into tmp_path/tapes."""
    cases = _word_cases(tmp_path, *words)
    tapes = tmp_path / "tapes"
    plan = RunPlan(cassette_dir=tapes, cassette_mode="record")
    return cases, tapes, _run(agent, cases, "rec", k, plan, base_url=server.root_url)


def _replays_alike(
    server: SimulatedModelServer, agent: Any, cases: list[Any], tapes: Path, recorded: list[AttemptResult]
) -> None:
    """With `server` stopped, the run replayed from `tapes` has the recorded outcomes, and no replay missed."""
    server.stop()
    plan, replayed = _replay(agent, cases, tapes)
    assert outcomes(replayed) == outcomes(recorded) and plan.misses == []


def _replay(agent: Any, cases: list[Any], tapes: Path, k: int = 1) -> tuple[RunPlan, list[AttemptResult]]:
    """(plan, results): the same run replayed from `tapes` with the client pointed at a dead port."""
    plan = RunPlan(cassette_dir=tapes, cassette_mode="replay")
    return plan, _run(agent, cases, "rep", k, plan, base_url=dead_url(""))


# --- streams: openai chat, stream=True and the .stream() helper, sync and async -------------------------


def streaming_agent(word: str, ctx: tracevals.AttemptContext) -> str:
    client = openai.OpenAI(base_url=ctx.settings["base_url"], api_key="sim", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": word}]
    calls: dict[int, dict[str, str]] = {}
    with client.chat.completions.create(
        model="lookup",
        messages=messages,  # type: ignore[arg-type]
        tools=CHAT_TOOLS,  # type: ignore[arg-type]
        stream=True,
        stream_options={"include_usage": True},
        seed=ctx.seed,
    ) as stream:
        for chunk in stream:
            deltas = (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []
            for delta in deltas:
                slot = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] += delta.id or ""
                slot["name"] += (delta.function and delta.function.name) or ""
                slot["arguments"] += (delta.function and delta.function.arguments) or ""
    assistant_calls = [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in calls.values()
    ]
    messages.append({"role": "assistant", "content": None, "tool_calls": assistant_calls})
    for c in calls.values():
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": json.loads(c["arguments"])["word"]})
    with client.chat.completions.stream(
        model="lookup",
        messages=messages,  # type: ignore[arg-type]
        tools=CHAT_TOOLS,  # type: ignore[arg-type]
        seed=ctx.seed,
    ) as helper:
        final = helper.get_final_completion()
    return f"{[c['name'] for c in calls.values()]} -> {final.choices[0].message.content}"


async def async_streaming_agent(word: str, ctx: tracevals.AttemptContext) -> str:
    async with openai.AsyncOpenAI(base_url=ctx.settings["base_url"], api_key="sim", max_retries=0) as client:
        stream = await client.chat.completions.create(
            model="lookup",
            messages=[{"role": "user", "content": word}],
            stream=True,
            seed=ctx.seed,
        )
        async with stream:
            pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    return "".join(pieces)


def test_openai_chat_streams_replay_sync_and_async(
    server: SimulatedModelServer, lake: Path, batch_telemetry: tracevals.Telemetry, tmp_path: Path
) -> None:
    cases = _word_cases(tmp_path, "fig", "plum")
    tapes, atapes = tmp_path / "tapes", tmp_path / "async-tapes"
    record = RunPlan(cassette_dir=tapes, cassette_mode="record")
    recorded = _run(streaming_agent, cases, "rec", 2, record, base_url=server.base_url)
    arecorded = _run(
        async_streaming_agent,
        cases,
        "arec",
        2,
        RunPlan(cassette_dir=atapes, cassette_mode="record"),
        base_url=server.base_url,
    )
    assert outcomes(recorded)[("fig", 1)] == ("['lookup', 'lookup'] -> Found: fig, figs", None)
    assert outcomes(arecorded)[("fig", 1)] == ("Looking.", None)
    doc = tapes_of(tapes / "models")["fig.json"]
    assert [i["method"] for i in doc if i["attempt"] == 1] == ["chat.completions.create"] * 2
    assert all(i["complete"] and i["stream"][0]["class"].endswith("ChatCompletionChunk") for i in doc)
    before = served(server)
    server.stop()

    plan, aplan = (
        RunPlan(cassette_dir=tapes, cassette_mode="replay"),
        RunPlan(cassette_dir=atapes, cassette_mode="replay"),
    )
    replayed = _run(streaming_agent, cases, "rep", 2, plan, base_url=dead_url())
    areplayed = _run(async_streaming_agent, cases, "arep", 2, aplan, base_url=dead_url())
    batch_telemetry.force_flush()
    assert served(server) == before and plan.misses == aplan.misses == []
    assert outcomes(replayed) == outcomes(recorded) and outcomes(areplayed) == outcomes(arecorded)
    live, again = model_spans(lake, "rec"), model_spans(lake, "rep")
    assert {s["tracevals.replay"] for s in again} == {"replay"} and len(again) == 8
    # the replayed stream fed the span as the live one did: usage (include_usage), tool calls, finish
    fields = ("gen_ai.request.stream", "gen_ai.usage.output_tokens", "tracevals.tool_calls.names")
    fields += ("gen_ai.response.finish_reasons", "gen_ai.response.id")
    assert [[s.get(f) for f in fields] for s in again] == [[s.get(f) for f in fields] for s in live]


# --- the other APIs: Responses (streamed, and its helper), .parse(), anthropic async, a half-read stream ----


class Word(pydantic.BaseModel):
    word: str


async def many_apis_agent(word: str, ctx: tracevals.AttemptContext) -> str:
    root, out = ctx.settings["base_url"], []
    async with anthropic.AsyncAnthropic(base_url=root, api_key="sim", max_retries=0) as claude:
        kwargs: dict[str, Any] = {"model": "lookup", "max_tokens": 64, "tools": ANTHROPIC_TOOLS}
        async with claude.messages.stream(**kwargs, messages=[{"role": "user", "content": word}]) as stream:
            message = await stream.get_final_message()
        out.append(f"{message.stop_reason} {[b.type for b in message.content]}")
    oai = openai.OpenAI(base_url=root + "/v1", api_key="sim", max_retries=0)
    with oai.responses.stream(model="lookup", input=word) as helper:
        out.append(helper.get_final_response().output_text)
    out.append(str([e.type for e in oai.responses.create(model="lookup", input=word, stream=True)]))
    with oai.chat.completions.create(model="lookup", messages=[{"role": "user", "content": word}], stream=True) as s:
        out.append(next(iter(s)).id)  # read one chunk, then leave: recorded as far as it was read
    parsed = oai.chat.completions.parse(
        model="json", messages=[{"role": "user", "content": word}], response_format=Word
    )
    out.append(repr(parsed.choices[0].message.parsed))
    return " | ".join(out)


def test_responses_parse_anthropic_async_and_a_half_read_stream_replay(
    server: SimulatedModelServer, tmp_path: Path, telemetry: tracevals.Telemetry
) -> None:
    cases, tapes, recorded = _record(many_apis_agent, tmp_path, server, "kiwi")
    [(output, error)] = outcomes(recorded).values()
    assert error is None and output is not None and output.endswith("Word(word='kiwi')"), error
    doc = tapes_of(tapes / "models")["kiwi.json"]
    assert sorted((i["method"], i.get("complete")) for i in doc) == [
        ("chat.completions.create", False),
        ("chat.completions.parse", None),
        ("messages.stream", True),
        ("responses.create", True),
        ("responses.create", True),
    ]
    _replays_alike(server, many_apis_agent, cases, tapes, recorded)


# --- a frozen replay: one recording in slot 0 serves attempts 1..3, each with its own seed ----------------


def test_a_frozen_recording_in_slot_0_serves_every_attempt_despite_its_seed(
    server: SimulatedModelServer, lake: Path, batch_telemetry: tracevals.Telemetry, tmp_path: Path
) -> None:
    case = DEMO_CASES["clear_01"]
    tapes = tmp_path / "tapes"
    plan = RunPlan(cassette_dir=tapes, cassette_mode="record")
    [reference] = _run(
        demo_agent.order_support_agent, [case], "ref", 1, plan, base_url=server.base_url, model="careful"
    )
    for path in (tapes / "clear_01.json", tapes / "models" / "clear_01.json"):  # freeze: attempt 1 -> slot 0
        doc = json.loads(path.read_text())
        doc["interactions"] = [{**i, "attempt": ANY_ATTEMPT} for i in doc["interactions"]]
        path.write_text(json.dumps(doc))
    server.stop()

    frozen = RunPlan(cassette_dir=tapes, cassette_mode="replay")
    results = _run(demo_agent.order_support_agent, [case], "frozen", 3, frozen, base_url=dead_url(), model="careful")
    batch_telemetry.force_flush()
    assert frozen.misses == []
    assert [(r.output, r.error) for r in results] == [(reference.output, None)] * 3
    spans = model_spans(lake, "frozen")
    seeds = {s["attempt"]: s["gen_ai.request.seed"] for s in spans}
    assert len(set(seeds.values())) == 3  # three attempts, three seeds sent, one recording
    assert {s["tracevals.replay"] for s in spans} == {"replay"}
    base = {"model": "careful", "messages": [{"role": "user", "content": "x"}]}
    assert model_key("openai", "m", {**base, "seed": 1}) == model_key("openai", "m", {**base, "seed": 2})
    assert model_key("openai", "m", base) != model_key("openai", "m", {**base, "temperature": 0.2})


# --- a replay miss --------------------------------------------------------------------------------------


def test_a_model_replay_miss_names_the_call_and_the_nearest_recording(
    server: SimulatedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, telemetry: tracevals.Telemetry
) -> None:
    case = DEMO_CASES["clear_01"]
    tapes = tmp_path / "tapes"
    _run(
        demo_agent.order_support_agent,
        [case],
        "rec",
        1,
        RunPlan(cassette_dir=tapes, cassette_mode="record"),
        base_url=server.base_url,
        model="careful",
    )
    [key] = [i["key"] for i in tapes_of(tapes / "models")["clear_01.json"] if len(i["request"]["messages"]) == 2]
    server.stop()
    changed = demo_agent.system_prompt
    monkeypatch.setattr(demo_agent, "system_prompt", lambda ctx: changed(ctx) + " Be terse.")
    plan = RunPlan(cassette_dir=tapes, cassette_mode="replay")
    [result] = _run(demo_agent.order_support_agent, [case], "miss", 1, plan, base_url=dead_url(), model="careful")
    [miss] = plan.misses
    assert miss.startswith("no recording of model call openai chat.completions.create(model='careful', 2 messages)")
    assert f"nearest recorded: {key} openai chat.completions.create(" in miss
    assert "differs at messages[0].content" in miss
    assert result.error is not None and result.error.startswith("CassetteMiss: no recording of model call")


def test_tracevals_run_replay_exits_2_on_a_model_miss(server: SimulatedModelServer, tmp_path: Path) -> None:
    tasks = tmp_path / "cases.jsonl"
    tasks.write_text(json.dumps(DEMO_CASES["clear_01"].raw) + "\n")
    base = [sys.executable, "-m", "tracevals", "run", "--tasks", str(tasks), "--cassettes", str(tmp_path / "tapes")]
    base += ["--agent", "tracevals.demo.agent:order_support_agent", "--setting", "model=careful", "--format", "json"]
    record = [*base, "--record", "-k", "1", "--setting", f"base_url={server.base_url}", "--lake", str(tmp_path / "l1")]
    done = subprocess.run(record, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    server.stop()
    # attempt 2 was never recorded: its first model call misses; the run is incomplete, exit 2
    replay = [*base, "--replay", "-k", "2", "--setting", f"base_url={dead_url()}", "--lake", str(tmp_path / "l2")]
    done = subprocess.run(replay, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    [miss] = json.loads(done.stdout)["replay_misses"]
    assert miss.startswith("no recording of model call openai chat.completions.create(") and "attempt 2" in miss


# --- API errors are recorded and raised again as the SDK's own class --------------------------------------


def erring_agent(text: str, ctx: tracevals.AttemptContext) -> str:
    seen = []
    oai = openai.OpenAI(base_url=ctx.settings["base_url"] + "/v1", api_key="sim", max_retries=0)
    claude = anthropic.Anthropic(base_url=ctx.settings["base_url"], api_key="sim", max_retries=0)
    calls: list[Any] = [
        lambda: oai.chat.completions.create(model="gpt-nope", messages=[{"role": "user", "content": text}]),
        lambda: claude.messages.create(model="claude-nope", max_tokens=8, messages=[{"role": "user", "content": text}]),
    ]
    for call in calls:
        try:
            call()
        except (openai.APIStatusError, anthropic.APIStatusError) as exc:
            seen.append(f"{type(exc).__module__}.{type(exc).__name__} {exc.status_code} {exc.body} | {exc}")
    return "\n".join(seen)


def test_api_errors_replay_as_the_same_sdk_exception(
    server: SimulatedModelServer, tmp_path: Path, telemetry: tracevals.Telemetry
) -> None:
    cases, tapes, recorded = _record(erring_agent, tmp_path, server, "oops")
    [(output, error)] = outcomes(recorded).values()
    assert error is None and output is not None
    assert output.startswith("openai.NotFoundError 404") and "\nanthropic.NotFoundError 404" in output
    _replays_alike(server, erring_agent, cases, tapes, recorded)


# --- the request's system prompt and tool set, hashed on every model span ---------------------------------


def test_system_and_tools_hashes_are_on_every_span_and_follow_the_prompt(
    server: SimulatedModelServer, lake: Path, telemetry: tracevals.Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = DEMO_CASES["clear_01"]
    settings = {"base_url": server.base_url, "model": "careful"}
    _run(demo_agent.order_support_agent, [case], "same", 2, RunPlan(), **settings)
    original = demo_agent.system_prompt
    monkeypatch.setattr(demo_agent, "system_prompt", lambda ctx: original(ctx) + " Be terse.")
    _run(demo_agent.order_support_agent, [case], "other", 1, RunPlan(), **settings)
    same, other = model_spans(lake, "same"), model_spans(lake, "other")
    assert len(same) >= 2 and other
    ctx = tracevals.AttemptContext.for_attempt("same", "clear_01", 1, "v", 5)
    expected = canonical_sha256([{"role": "system", "content": original(ctx)}])
    assert {s["tracevals.request.system_sha256"] for s in same} == {expected}  # every call, both attempts
    assert {s["tracevals.request.tools_sha256"] for s in same} == {canonical_sha256(demo_agent.TOOL_SCHEMAS)}
    assert {s["tracevals.request.system_sha256"] for s in other} != {expected}
    assert {s["tracevals.request.tools_sha256"] for s in other} == {canonical_sha256(demo_agent.TOOL_SCHEMAS)}
    assert len({s["gen_ai.request.seed"] for s in same}) == 2  # recorded, and each attempt's own


def test_hashes_of_each_api_and_the_request_numbers(
    server: SimulatedModelServer, lake: Path, telemetry: tracevals.Telemetry
) -> None:
    oai = openai.OpenAI(base_url=server.base_url, api_key="sim", max_retries=0)
    claude = anthropic.Anthropic(base_url=server.root_url, api_key="sim", max_retries=0)
    system = [{"role": "developer", "content": "Be brief."}]
    oai.chat.completions.create(
        model="lookup",
        messages=[*system, {"role": "user", "content": "kiwi"}],  # type: ignore[list-item]
        tools=CHAT_TOOLS,  # type: ignore[arg-type]
        temperature=0.3,
        top_p=0.9,
        seed=11,
        max_tokens=64,
    )
    oai.responses.create(model="lookup", input="kiwi", instructions="Be brief.")
    claude.messages.create(
        model="lookup", max_tokens=32, system="Be brief.", messages=[{"role": "user", "content": "kiwi"}]
    )
    oai.chat.completions.create(model="lookup", messages=[{"role": "user", "content": "kiwi"}])
    rows = open_lake(lake).execute("select attributes from spans where kind = 'llm' order by start_time").fetchall()
    chat, responses, messages, bare = [json.loads(r[0]) for r in rows]
    assert chat["tracevals.request.system_sha256"] == canonical_sha256(system)
    assert chat["tracevals.request.tools_sha256"] == canonical_sha256(CHAT_TOOLS)
    assert responses["tracevals.request.system_sha256"] == canonical_sha256("Be brief.")
    assert messages["tracevals.request.system_sha256"] == canonical_sha256("Be brief.")
    assert "tracevals.request.tools_sha256" not in responses and "tracevals.request.system_sha256" not in bare
    numbers = {k: chat[f"gen_ai.request.{k}"] for k in ("temperature", "top_p", "seed", "max_tokens")}
    assert numbers == {"temperature": 0.3, "top_p": 0.9, "seed": 11, "max_tokens": 64}
    assert messages["gen_ai.request.max_tokens"] == 32
