"""The harness: every attempt one trace with its run attributes; failures kept, never swallowed."""

from __future__ import annotations

from pathlib import Path

import tracevals
from tracevals.evaluators import evaluate_all
from tracevals.harness import run_cases
from tracevals.model.attempt import AttemptContext
from tracevals.model.case import Case, ExpectedCall
from tracevals.queries import open_lake
from tracevals.queries.trajectories import load_trajectories


@tracevals.tool(effect="read")
def lookup(key: str) -> str:
    return f"value of {key}"


def flaky_agent(text: str, ctx: AttemptContext) -> str:
    """Attempt 2 raises after one tool call; attempt 3 answers without the required word."""
    lookup(key=text)
    if ctx.attempt == 2:
        raise RuntimeError("tool backend went away")
    return "the answer is 42" if ctx.attempt == 1 else "no idea"


CASE = Case(case_id="c1", input="question", expected_steps=(ExpectedCall("lookup"),), must_include=("42",))


def test_each_attempt_is_one_trace_and_failures_are_kept(lake: Path, telemetry: tracevals.Telemetry) -> None:
    results = run_cases(flaky_agent, [CASE], k=3, run_id="r1", variant="v1", concurrency=2)
    telemetry.force_flush()
    assert [r.error for r in results] == [None, "RuntimeError: tool backend went away", None]

    con = open_lake(lake)
    runs = con.execute("select attempt, output, error, error_type, status_code from runs order by attempt").fetchall()
    assert runs == [
        (1, "the answer is 42", None, None, "unset"),
        (2, None, "RuntimeError: tool backend went away", "RuntimeError", "error"),
        (3, "no idea", None, None, "unset"),
    ]
    # one trace per attempt, each with its own session id, root carrying the run attributes
    rows = con.execute(
        "select count(distinct trace_id), count(distinct session_id), min(run_id), min(task_id), min(variant) "
        "from attempts"
    ).fetchone()
    assert rows == (3, 3, "r1", "c1", "v1")
    # the explicit end-of-session marker closes every attempt
    assert con.execute("select count(*) from spans where kind = 'session_end'").fetchone() == (3,)
    # the exception event is kept with its type and message
    (events,) = con.execute(
        "select events from spans where parent_span_id is null and error_type is not null"
    ).fetchone() or ("",)
    assert "tool backend went away" in events and "RuntimeError" in events

    trajectories = load_trajectories(con)
    verdicts = {(s.attempt, s.evaluator): s.passed for s in evaluate_all(trajectories, {"c1": CASE})}
    assert verdicts[(1, "task_success")] is True
    assert verdicts[(2, "task_success")] is False
    assert verdicts[(3, "task_success")] is False
    assert all(verdicts[(a, "trajectory_match")] for a in (1, 2, 3))


def test_a_structured_answer_is_checked_as_the_json_it_is(lake: Path, telemetry: tracevals.Telemetry) -> None:
    """An agent that answers with a dict (structured output): the attempt's output was its Python repr,
    `{'answer': '42', ...}`, which is no JSON, so a case's `json_schema` failed an agent that returned exactly
    the object asked for. A dict, a list or a pydantic model is its JSON now; text stays as it is."""
    import pydantic

    class Answer(pydantic.BaseModel):
        answer: str
        sources: list[str]

    schema = {"type": "object", "required": ["answer", "sources"], "properties": {"answer": {"const": "42"}}}
    case = Case(case_id="c1", input="question", json_schema=schema)
    agents = {
        "dict": lambda text, ctx: {"answer": "42", "sources": ["kb-7"], "ok": True, "missing": None},
        "model": lambda text, ctx: Answer(answer="42", sources=["kb-7"]),
        "text": lambda text, ctx: '{"answer": "42", "sources": []}',
    }
    for variant, agent in agents.items():
        run_cases(agent, [case], k=1, run_id=f"r-{variant}", variant=variant, concurrency=1)
    telemetry.force_flush()
    con = open_lake(lake)
    outputs = dict(con.execute("select variant, output from runs").fetchall())
    assert outputs == {
        "dict": '{"answer": "42", "missing": null, "ok": true, "sources": ["kb-7"]}',
        "model": '{"answer": "42", "sources": ["kb-7"]}',
        "text": '{"answer": "42", "sources": []}',
    }
    verdicts = {
        s.variant: s.passed for s in evaluate_all(load_trajectories(con), {"c1": case}) if s.evaluator == "task_success"
    }
    assert verdicts == {"dict": True, "model": True, "text": True}
