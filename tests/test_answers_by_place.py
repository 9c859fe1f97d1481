"""A tool message that names no call answers by its place in the conversation.

Found recording Haystack under OpenInference (tests/corpus/haystack/openinference): no span per tool call, and in the
next model call's history the assistant message has lost its calls and each tool message is its role alone (no id, no
content). Nothing paired the answers with the requests, so every call the correct agent made read as requested and
never executed: `session_completeness` failed 5 of its 7 turns ("requested tool calls never executed").

The rule (`queries/sql/answers_by_place.sql`): a model call's last run of such tool messages answers the requests of
the latest model call of its trace that made requests and ended before it started, the k-th message the k-th
request. What it must not do: answer a request that no later history answers (a dangling call stays a gap), or more
requests than there are answers, or take a previous turn's answer, repeated in the history, for one (the run must
come after every tool message the asking call's own history held)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.otlp_lakes import ingest_doc
from fixtures.recording import doc, span

from tracevals.queries import open_lake
from tracevals.scoring.offline import score_lake

SYSTEM, QUESTION = "You are a weather assistant.", "Compare the weather in Paris and London."


def _messages(prefix: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenInference's flattened messages: `<prefix>.N.message.role` / `.content` / `.tool_calls.K.tool_call...`."""
    out: dict[str, Any] = {}
    for n, message in enumerate(messages):
        for key, value in message.items():
            if key == "tool_calls":
                for k, (name, args) in enumerate(value):
                    out[f"{prefix}.{n}.message.tool_calls.{k}.tool_call.function.name"] = name
                    out[f"{prefix}.{n}.message.tool_calls.{k}.tool_call.function.arguments"] = json.dumps(args)
            else:
                out[f"{prefix}.{n}.message.{key}"] = value
    return out


def _call(sid: str, start: int, trace: str, history: list[dict[str, Any]], reply: dict[str, Any]) -> dict[str, Any]:
    attrs = {
        "openinference.span.kind": "LLM", "llm.model_name": "m", "session.id": f"s-{trace[:4]}",
        "llm.token_count.prompt": 10, "llm.token_count.completion": 5,
        **_messages("llm.input_messages", history), **_messages("llm.output_messages", [reply]),
    }  # fmt: skip
    return span(sid, "a" * 16, "OpenAIChatGenerator.run", attrs, start, trace=trace)


# a previous turn's exchange, repeated in this turn's history: its answer is no answer to this turn's requests
EARLIER = [{"role": "user", "content": "And Rome?"}, {"role": "assistant"}, {"role": "tool"},
           {"role": "assistant", "content": "Rome is cloudy."}]  # fmt: skip


def _trace(
    trace: str, answers: list[dict[str, Any]] | None, asked: int = 2, again: bool = True, earlier: bool = False
) -> list[dict[str, Any]]:
    """A run: the model asks for `asked` calls; the next call (if `again`) holds `answers` after the assistant
    message (which keeps its role only) and says the final text; `answers` None: the next call is the same request
    made again (its history as the first's). earlier: the history starts with a previous turn's exchange."""
    calls = [("get_weather", {"city": c}) for c in ("Paris", "London", "Rome")[:asked]]
    history = [
        {"role": "system", "content": SYSTEM},
        *(EARLIER if earlier else []),
        {"role": "user", "content": QUESTION},
    ]
    spans = [
        span("a" * 16, None, "Agent.run", {"openinference.span.kind": "CHAIN", "session.id": f"s-{trace[:4]}"}, 1000,
             trace=trace, endTimeUnixNano="90000"),
        _call("b" * 16, 2000, trace, history, {"role": "assistant", "tool_calls": calls}),
    ]  # fmt: skip
    if again:
        later = history if answers is None else [*history, {"role": "assistant"}, *answers]
        spans.append(_call("c" * 16, 9000, trace, later, {"role": "assistant", "content": "Paris is sunny."}))
    return spans


TWO, ONE, NONE, DANGLING, SAID, LATER, AGAIN = (str(n) * 32 for n in range(1, 8))
TRACES = {
    TWO: _trace(TWO, [{"role": "tool"}, {"role": "tool"}]),  # both answered, by their place
    ONE: _trace(ONE, [{"role": "tool"}]),  # one answer for two requests: the first answered
    NONE: _trace(NONE, []),  # a later call with no answer in its history: the requests dangle
    DANGLING: _trace(DANGLING, [], asked=1, again=False),  # nothing after the request: it dangles
    SAID: _trace(SAID, [{"role": "tool", "content": "sunny, 21 C"}, {"role": "tool", "content": "rain, 14 C"}]),
    LATER: _trace(LATER, [{"role": "tool"}], asked=1, earlier=True),  # a later turn's answer: answered
    AGAIN: _trace(AGAIN, None, asked=1, earlier=True),  # the same request again: the earlier turn's answer is no answer
}


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("by_place") / "lake"
    ingest_doc(path, doc([s for spans in TRACES.values() for s in spans]))
    return path


@pytest.mark.parametrize("materialize", [True, False], ids=["snapshot", "views"])
def test_tool_messages_without_ids_answer_the_requests_before_them_in_order(lake: Path, materialize: bool) -> None:
    con = open_lake(lake, materialize=materialize)
    sql = "SELECT trace_id, tool_args, answered, answer, is_gap FROM {} ORDER BY trace_id, request_index"
    requested = [
        (t, json.loads(a)["city"], *rest) for t, a, *rest in con.sql(sql.format("requested_tool_calls")).fetchall()
    ]
    assert requested == [
        (TWO, "Paris", True, None, True), (TWO, "London", True, None, True),
        (ONE, "Paris", True, None, True), (ONE, "London", False, None, True),
        (NONE, "Paris", False, None, True), (NONE, "London", False, None, True),
        (DANGLING, "Paris", False, None, True),
        (SAID, "Paris", True, "sunny, 21 C", True), (SAID, "London", True, "rain, 14 C", True),
        (LATER, "Paris", True, None, True),
        (AGAIN, "Paris", False, None, True),
    ]  # fmt: skip
    steps = con.sql(
        "SELECT trace_id, status, result FROM steps WHERE step_kind = 'tool' ORDER BY trace_id, step_index"
    ).fetchall()
    assert steps == [
        (TWO, "ok", None), (TWO, "ok", None),
        (ONE, "ok", None), (ONE, "gap", None),
        (NONE, "gap", None), (NONE, "gap", None),
        (DANGLING, "gap", None),
        (SAID, "ok", "sunny, 21 C"), (SAID, "ok", "rain, 14 C"),
        (LATER, "ok", None),
        (AGAIN, "gap", None),
    ]  # fmt: skip


def test_a_correct_agent_whose_answers_name_no_call_completes_its_session(lake: Path) -> None:
    run = score_lake(lake, write=False)
    judged = {
        t: (p, json.loads(d)["gaps"])
        for t, e, p, d in run.scores.select("trace_id", "evaluator", "passed", "details").iter_rows()
        if e == "session_completeness"
    }
    # LATER and AGAIN fail all_turns besides (their history holds a turn the lake does not): their gaps say it
    assert judged == {
        TWO: (True, 0), SAID: (True, 0), ONE: (False, 1), NONE: (False, 2), DANGLING: (False, 1),
        LATER: (False, 0), AGAIN: (False, 1),
    }  # fmt: skip
