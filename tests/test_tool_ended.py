"""An agent that ends on its tools' results answered with them.

Found trying a correct agent as a stranger would: LangChain's `return_direct`, the OpenAI Agents SDK's
`stop_on_first_tool`, CrewAI's `result_as_answer` and ADK's `skip_summarization` end the run on a tool's result, with
no model call after it. The model asked for `send_message`, it ran and succeeded, the root ended well; yet
`session_completeness` failed it ("no terminal state: no final answer, hand-off or error"), the `turns` view had no
final text (so `cases extract` called it unanswered) and the evaluators' trajectory had no output, while the `sessions`
view called it completed.

The rule (`queries/sql/tool_ended.sql`, read by `trace_facts`, `turns` and the loader's `batch_traces`): a last model
call whose every requested tool ran and none failed, in a run whose root ended without error, answered with their
results, in the order asked. What it must not do: answer for a run that stopped short: a tool that failed, a request
that never ran, a root that failed. With content capture off (the default outside the harness) nothing says what the
model asked for: the tools that ran after its last call stand for its requests. Then the same on the real frameworks'
recordings of such an agent (tests/corpus, scenario tool_ends), each of which failed `session_completeness` before the
rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.corpus_check import ROOT, ingest
from fixtures.otlp_lakes import ingest_doc
from fixtures.recording import doc, span

from tracevals.queries import open_lake
from tracevals.queries.trajectories import load_trajectories
from tracevals.scoring.offline import score_lake

SECOND = 10**9


def _trace(
    trace: str,
    results: list[str | None],
    *,
    failed: bool = False,
    ran: bool = True,
    root_error: bool = False,
    then: str | None = None,
) -> list[dict[str, Any]]:
    """A turn of session `s-<trace>`: the model asks for one `send_message` per result (in that order); the tools run
    (the last asked first: the answer is in the order asked) unless `ran` is false, the first fails if `failed`;
    `then`: a model call after them says that text; root_error: the root span ends in error."""
    sid = f"s-{trace[:4]}"
    asked = [
        {"type": "tool_call", "id": f"c{n}", "name": "send_message", "arguments": {"to": f"user {n}"}}
        for n in range(len(results))
    ]
    chat = {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.conversation.id": sid,
        "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "Tell them it is done."}]}],
        "gen_ai.output.messages": [{"role": "assistant", "parts": asked, "finish_reason": "tool_call"}],
    }  # fmt: skip
    root_extra: dict[str, Any] = {"endTimeUnixNano": str(20 * SECOND)}
    if root_error:
        root_extra["status"] = {"code": 2, "message": "boom"}
    spans = [
        span("f" * 16, None, "invoke_agent notifier",
             {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "notifier", "gen_ai.conversation.id": sid},
             0, trace=trace, **root_extra),
        span("1" * 16, "f" * 16, "chat m", chat, SECOND, trace=trace),
    ]  # fmt: skip
    for n, result in enumerate(results if ran else []):
        attrs = {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "send_message", "gen_ai.tool.call.id": f"c{n}",
            "gen_ai.tool.call.arguments": json.dumps({"to": f"user {n}"}),
        }  # fmt: skip
        if result is not None:
            attrs["gen_ai.tool.call.result"] = result
        extra: dict[str, Any] = {"trace": trace}
        if failed and n == 0:
            attrs["error.type"] = "SendError"
            extra["status"] = {"code": 2, "message": "mailbox full"}
        spans.append(span(f"{n + 2:016x}", "f" * 16, "execute_tool send_message", attrs, (9 - n) * SECOND, **extra))
    if then is not None:
        reply = {"role": "assistant", "parts": [{"type": "text", "content": then}], "finish_reason": "stop"}
        said = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.output.messages": [reply]}
        spans.append(span("e" * 16, "f" * 16, "chat m", said, 12 * SECOND, trace=trace))
    return spans


CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


def _without_content(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trace as an instrumentation with content capture off (the default outside the harness) records it: no
    messages, arguments or results, so nothing says which tools the model asked for."""
    return [{**s, "attributes": [a for a in s["attributes"] if a["key"] not in CONTENT]} for s in spans]


ENDS, TWO, UNCAPTURED, SAID, FAILED, NEVER, CRASHED, ENDS_OFF, FAILED_OFF = (str(n) * 32 for n in range(1, 10))
TRACES = {
    ENDS: _trace(ENDS, ['{"status": "sent"}']),  # ends on its tool's result: that is its answer
    TWO: _trace(TWO, ["sent to user 0", "sent to user 1"]),  # two, run in reverse: answered in the order asked
    UNCAPTURED: _trace(UNCAPTURED, [None]),  # ended on its tool, whose result no span recorded: answered, no text
    SAID: _trace(SAID, ["sent"], then="Done: they know."),  # a model call after the tools: its text
    FAILED: _trace(FAILED, ["mailbox full"], failed=True),  # the tool failed: it stopped short
    NEVER: _trace(NEVER, ["sent"], ran=False),  # the request never ran: it stopped short
    CRASHED: _trace(CRASHED, ["sent"], root_error=True),  # the root failed after the tool: an error
    # content off: the tools that ran after the last call stand for its requests
    ENDS_OFF: _without_content(_trace(ENDS_OFF, ["sent to user 0", "sent to user 1"])),  # answered, no text
    FAILED_OFF: _without_content(_trace(FAILED_OFF, ["mailbox full"], failed=True)),  # stopped short
}


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tool_ended") / "lake"
    ingest_doc(path, doc([s for spans in TRACES.values() for s in spans]))
    return path


@pytest.mark.parametrize("materialize", [True, False], ids=["snapshot", "views"])
def test_a_turn_that_ended_on_its_tools_answered_with_their_results(lake: Path, materialize: bool) -> None:
    con = open_lake(lake, materialize=materialize)
    final = dict(con.sql("SELECT trace_id, final_text FROM turns").fetchall())
    assert final == {
        ENDS: '{"status": "sent"}', TWO: "sent to user 0\nsent to user 1", UNCAPTURED: None, SAID: "Done: they know.",
        FAILED: None, NEVER: None, CRASHED: None, ENDS_OFF: None, FAILED_OFF: None,
    }  # fmt: skip
    # what the evaluators read as the attempt's answer (the loader's `batch_traces`) is the same
    assert {t.trace_id: t.output for t in load_trajectories(con)} == final


def test_session_completeness_takes_the_tools_results_for_a_terminal_state(lake: Path) -> None:
    run = score_lake(lake, write=False)
    judged = {
        t: (p, json.loads(d)["terminal"])
        for t, e, p, d in run.scores.select("trace_id", "evaluator", "passed", "details").iter_rows()
        if e == "session_completeness"
    }
    assert judged == {
        ENDS: (True, "answer"), TWO: (True, "answer"), UNCAPTURED: (True, "answer"), SAID: (True, "answer"),
        FAILED: (False, None), NEVER: (False, None), CRASHED: (True, "error"),  # an error is how it ended
        ENDS_OFF: (True, "answer"), FAILED_OFF: (False, None),
    }  # fmt: skip
    # and the sessions view agrees on how each ended
    states = dict(open_lake(lake).sql("SELECT session_id, terminal_state FROM sessions").fetchall())
    assert states[f"s-{ENDS[:4]}"] == "completed" and states[f"s-{CRASHED[:4]}"] == "error"


# Recorded with the real frameworks (tests/corpus, scenario tool_ends): one model call, the tool, no call after it
RECORDED = {
    "langgraph_openinference/default": '{"city": "Paris", "forecast": "sunny", "temp_c": 21}',  # return_direct
    "langgraph_openllmetry/default": '{"city": "Paris", "forecast": "sunny", "temp_c": 21}',
    "openai_agents/openinference": '{"city": "Paris", "forecast": "sunny", "temp_c": 21}',  # stop_on_first_tool
    "crewai/openinference": '{"city": "Paris", "forecast": "sunny", "temp_c": 21}',  # result_as_answer
}


@pytest.mark.parametrize("where", sorted(RECORDED))
def test_a_recorded_agent_that_ends_on_its_tool_completes_its_session(tmp_path: Path, where: str) -> None:
    lake = tmp_path / "lake"
    ingest(lake, [ROOT / where / "tool_ends.json"])
    judged = [
        (p, json.loads(d)["terminal"])
        for e, p, d in score_lake(lake, write=False).scores.select("evaluator", "passed", "details").iter_rows()
        if e == "session_completeness"
    ]
    assert judged == [(True, "answer")]
    [(answer,)] = open_lake(lake).sql("SELECT final_text FROM turns").fetchall()
    assert json.loads(answer) == json.loads(RECORDED[where])
    assert [json.loads(str(t.output)) for t in load_trajectories(open_lake(lake))] == [json.loads(RECORDED[where])]
