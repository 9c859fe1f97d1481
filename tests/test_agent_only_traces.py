"""A trace that recorded no model call: some instrumentations write agent and tool spans only (OpenLLMetry's
Agno instrumentation, tests/corpus/agno/openllmetry), the turn's texts then only on the agent span
(`traceloop.entity.input` / `.output`, declared as `agent_inputs` / `agent_outputs`).

One rule (`queries/sql/agent_texts.sql`) gives such a turn its user text and answer in the `turns` view, the
attempt's answer the evaluators read (`batch_traces`) and its terminal state (`trace_facts`): before it, every
session of a correct agent so traced failed `session_completeness` ("no final answer") and a failed tool the
agent answered for was `failure_handling`'s "failed silently". Where a model call recorded the turn, its answer
stands, whatever the agent span says; JSON and placeholders are no text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures.otlp_lakes import ingest_doc
from fixtures.recording import doc, span

from tracevals.scoring.offline import score_lake

QUESTION = "What is the weather in Rome?"


def _agent_only(trace: str, output: str, tool_failed: bool = False) -> list[dict[str, Any]]:
    agent = {"traceloop.span.kind": "agent", "gen_ai.agent.name": "weather_agent",
             "traceloop.entity.input": QUESTION, "traceloop.entity.output": output}  # fmt: skip
    tool = {"traceloop.span.kind": "tool", "traceloop.entity.name": "get_weather",
            "traceloop.entity.input": '{"city": "Rome"}', "traceloop.entity.output": "cloudy"}  # fmt: skip
    if tool_failed:
        tool["traceloop.entity.output"] = "status='failure' result=None error='unknown city: Rome' updated=None"
    return [
        span("a" * 16, None, "weather_agent.agent", agent, 1000, trace=trace, endTimeUnixNano="9000"),
        span("b" * 16, "a" * 16, "get_weather.tool", tool, 2000, trace=trace),
    ]


def _with_model_call(trace: str) -> list[dict[str, Any]]:
    spans = _agent_only(trace, "the agent span's text")
    chat = {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
        "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}],
        "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": "Rome is cloudy."}]}],
    }  # fmt: skip
    return [*spans, span("c" * 16, "a" * 16, "chat m", chat, 4000, trace=trace)]


TRACES = {
    "1" * 32: _agent_only("1" * 32, "Rome is cloudy at 18 C."),
    "2" * 32: _with_model_call("2" * 32),
    "3" * 32: _agent_only("3" * 32, '{"messages": [{"role": "assistant"}]}'),  # JSON: no text
    "4" * 32: _agent_only("4" * 32, "__REDACTED__"),  # a placeholder: no text
    "5" * 32: _agent_only("5" * 32, "Sorry, I could not find Rome.", tool_failed=True),
}


def test_a_turn_that_recorded_no_model_call_is_what_its_agent_span_says(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    ingest_doc(lake, doc([s for spans in TRACES.values() for s in spans]))
    from tracevals.queries import open_lake

    turns = open_lake(lake).sql("SELECT trace_id, user_text, final_text FROM turns ORDER BY trace_id").fetchall()
    assert turns == [
        ("1" * 32, QUESTION, "Rome is cloudy at 18 C."),
        ("2" * 32, QUESTION, "Rome is cloudy."),  # the model call's answer, not the agent span's text
        ("3" * 32, QUESTION, None),
        ("4" * 32, QUESTION, None),
        ("5" * 32, QUESTION, "Sorry, I could not find Rome."),
    ]
    run = score_lake(lake, write=False, keep_batch=True)
    assert run.batch is not None
    answers = dict(run.batch.traces.select("trace_id", "output").iter_rows())
    assert answers == {
        "1" * 32: "Rome is cloudy at 18 C.",
        "2" * 32: "Rome is cloudy.",
        "3" * 32: None,
        "4" * 32: None,
        "5" * 32: "Sorry, I could not find Rome.",
    }
    verdicts = {
        (t, e): p for t, e, p in run.scores.select("trace_id", "evaluator", "passed").iter_rows()
    }  # fmt: skip
    assert verdicts[("1" * 32, "session_completeness")] and verdicts[("2" * 32, "session_completeness")]
    assert not verdicts[("3" * 32, "session_completeness")] and not verdicts[("4" * 32, "session_completeness")]
    # the failed tool is seen (its result object says so) and answered for
    assert verdicts[("5" * 32, "session_completeness")] and verdicts[("5" * 32, "failure_handling")]
