"""A framework's set-up is no attempt: a trace that called no model and no tool, handed nothing over and invoked no
agent (LangGraph's and AutoGen's one-span `create_agent <agent>` traces, an MCP client's `server/discover`, an app's
other traffic) is not scored, and a run that links to the trace that created its agent is a turn of its own.

Found recording LangGraph under OpenLIT (tests/corpus/langgraph_openlit): every `invoke_workflow` links to the
`create_agent` span of the graph's build, so the turns view joined every run of a session into the build's trace
(two turns of multi_turn read as one, without its session id); and across the corpus the set-up traces were
scored as sessions of their own, each failing `session_completeness` (no final answer): a correct agent's lake
read 28 of 86 sessions complete under AutoGen, 14 of 28 under LangGraph + OpenLLMetry, 12 of 32 under MCP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures.otlp_lakes import ingest_doc
from fixtures.recording import doc, span

from tracevals.queries import open_lake
from tracevals.scoring.offline import score_lake

BUILD, RUN_1, RUN_2, DISCOVER = "1" * 32, "2" * 32, "3" * 32, "4" * 32
CRASHED, FAILED_BUILD = "5" * 32, "6" * 32  # a session's trace that ran nothing; a build that failed: attempts
SESSION = "thread-1"


def _run(trace: str, start: int, question: str, answer: str) -> list[dict[str, Any]]:
    chat = {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.conversation.id": SESSION,
        "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2,
        "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": question}]}],
        "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}],
    }  # fmt: skip
    workflow = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.conversation.id": SESSION}
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}
    return [
        span("a" * 16, None, "invoke_workflow weather_agent", workflow, start, trace=trace,
             links=[{"traceId": BUILD, "spanId": "b" * 16}], endTimeUnixNano=str(start + 900)),
        span("c" * 16, "a" * 16, "invoke_agent weather_agent", agent, start + 10, trace=trace),
        span("d" * 16, "c" * 16, "chat m", chat, start + 20, trace=trace),
    ]  # fmt: skip


def _lake(tmp_path: Path) -> Path:
    build = span(
        "b" * 16,
        None,
        "create_agent weather_agent",
        {"gen_ai.operation.name": "create_agent", "gen_ai.agent.name": "weather_agent"},
        100,
        trace=BUILD,
    )
    discover = span("e" * 16, None, "server/discover", {"mcp.method.name": "server/discover"}, 150, trace=DISCOVER)
    crashed = span("f" * 16, None, "handle_request", {"session.id": "thread-2"}, 9000, trace=CRASHED)
    failed = span("9" * 16, None, "create_agent weather_agent", {"gen_ai.operation.name": "create_agent"}, 9500,
                  trace=FAILED_BUILD, status={"code": 2, "message": "ValueError: no model"})  # fmt: skip
    spans = [build, discover, *_run(RUN_1, 1000, "Hi.", "Hello!"), *_run(RUN_2, 5000, "Rome?", "Cloudy."), crashed,
             failed]  # fmt: skip
    lake = tmp_path / "lake"
    ingest_doc(lake, doc(spans))
    return lake


def test_a_run_that_links_to_the_trace_that_built_its_agent_is_a_turn_of_its_own(tmp_path: Path) -> None:
    con = open_lake(_lake(tmp_path))
    turns = con.sql("SELECT trace_id, session_id, turn_index, user_text, final_text FROM turns ORDER BY 1").fetchall()
    assert turns == [
        (RUN_1, SESSION, 1, "Hi.", "Hello!"),
        (RUN_2, SESSION, 2, "Rome?", "Cloudy."),
        (CRASHED, "thread-2", 1, None, None),  # ran nothing, but a session's: a turn, as it is an attempt
        (FAILED_BUILD, None, 1, None, None),  # a set-up that failed: a turn of its own
    ]
    setup = dict(con.sql("SELECT trace_id, is_setup FROM attempts").fetchall())
    assert setup == {BUILD: True, DISCOVER: True, RUN_1: False, RUN_2: False, CRASHED: False, FAILED_BUILD: False}
    trajectories = sorted(r[0] for r in con.sql("SELECT trace_id FROM trajectories").fetchall())
    assert trajectories == [RUN_1, RUN_2, CRASHED, FAILED_BUILD]
    assert con.sql("SELECT session_id, turn_count FROM sessions ORDER BY 1").fetchall() == [
        (SESSION, 2),
        ("thread-2", 1),
    ]
    # one rule: the turns are the trajectories, and what the sessions count
    assert sorted(t for (t,) in con.sql("SELECT trace_id FROM turns").fetchall()) == trajectories
    assert con.sql(
        "SELECT session_id, count(*) FROM turns WHERE session_id IS NOT NULL GROUP BY 1 ORDER BY 1"
    ).fetchall() == [
        (SESSION, 2),
        ("thread-2", 1),
    ]


def test_a_frameworks_set_up_is_not_scored(tmp_path: Path) -> None:
    run = score_lake(_lake(tmp_path), write=False)
    scored = {t for (t,) in run.scores.select("trace_id").unique().iter_rows()}
    assert scored == {RUN_1, RUN_2, CRASHED, FAILED_BUILD}
    failed = {t for (t,) in run.scores.filter(~run.scores["passed"]).select("trace_id").unique().iter_rows()}
    assert failed == {CRASHED}  # the runs pass; a session that answered nothing fails (a failure ends in its error)
