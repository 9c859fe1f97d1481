"""`tracevals score` end to end: the reference agent's runs in a lake, scored through the CLI.

Real parts throughout: the `openai` client against the simulated model server, the OTel SDK writing
Parquet, DuckDB views, and a crash that is a real one (the agent's process dies in the middle of a tool
call, so the spans still open never reach the lake). Three failures must be caught with the right
reason: an order deleted without a hand-off, a 429 retried without backoff, a session cut by a crash.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

import tracevals
from tracevals.cli import main
from tracevals.demo import FailureRates, make_profile, order_support_agent, tasks_path
from tracevals.harness import run_cases
from tracevals.model.tasks import load_cases
from tracevals.simulator import ProfileRegistry, SimulatedModelServer

PROFILES = {
    "disciplined": FailureRates.zero(),
    "ambiguous": FailureRates(ambiguous_pick=1.0),  # deletes one of two duplicate orders itself
    "blind": FailureRates(blind_retry=1.0),  # fires the same call three times right after a 429
}
RUNS = [("disciplined", ["clear_01", "fault_02", "confirm_01"]), ("ambiguous", ["confirm_01"]), ("blind", ["fault_02"])]

CRASHING_AGENT = """
import os
import sys

import tracevals
from tracevals.demo import FailureRates, OrderWorld, make_profile, run_agent, tasks_path
from tracevals.harness import run_cases
from tracevals.simulator import ProfileRegistry, SimulatedModelServer
from tracevals.model.tasks import load_cases


class CrashingWorld(OrderWorld):
    def refund_order(self, *args, **kwargs):
        os._exit(17)  # the process dies in the middle of the refund: whatever span is still open is lost


def agent(text, ctx):
    return run_agent(text, ctx, CrashingWorld())


tracevals.instrument(lake=sys.argv[1], batch=False, capture_content=True)
registry = ProfileRegistry()
registry.add(make_profile("crash-disciplined", FailureRates.zero()))
with SimulatedModelServer(registry=registry) as server:
    cases = [c for c in load_cases(tasks_path()) if c.case_id == "clear_04"]
    settings = {"base_url": server.base_url, "model": "crash-disciplined"}
    run_cases(agent, cases, k=1, run_id="crash", variant="crash", settings=settings)
"""


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("score") / "lake"
    path.mkdir()
    cases = {c.case_id: c for c in load_cases(tasks_path())}
    registry = ProfileRegistry()
    for name, rates in PROFILES.items():
        registry.add(make_profile(f"score-{name}", rates))
    telemetry = tracevals.instrument(lake=path, batch=True, capture_content=True)
    try:
        with SimulatedModelServer(registry=registry) as server:
            for variant, case_ids in RUNS:
                run_cases(
                    order_support_agent,
                    [cases[c] for c in case_ids],
                    k=1,
                    run_id=f"score-{variant}",
                    variant=variant,
                    settings={"base_url": server.base_url, "model": f"score-{variant}"},
                    case_settings=lambda case: {"faults": case.raw.get("faults", [])},
                )
    finally:
        telemetry.shutdown()
    script = path.parent / "crashing_agent.py"
    script.write_text(textwrap.dedent(CRASHING_AGENT))
    crashed = subprocess.run([sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=120)
    assert crashed.returncode == 17, crashed.stderr
    yield path


@pytest.fixture(scope="module")
def scored(lake: Path) -> list[dict[str, Any]]:
    config = lake.parent / "scoring.yaml"
    config.write_text("budgets:\n  max_steps: 30\n  max_tokens: 200000\n")
    result = CliRunner().invoke(
        main, ["score", "--lake", str(lake), "--tasks", str(tasks_path()), "--config", str(config), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output.splitlines()[0])
    assert all(
        {"session_id", "trace_id", "task_id", "attempt", "variant", "evaluator", "passed", "score", "reason"} <= set(r)
        for r in rows
    )
    return rows


def verdicts(rows: list[dict[str, Any]], variant: str | None, task_id: str) -> dict[str, dict[str, Any]]:
    chosen = [r for r in rows if r["variant"] == variant and r["task_id"] == task_id]
    assert len({r["trace_id"] for r in chosen}) == 1, (variant, task_id)
    return {r["evaluator"]: r for r in chosen}


def test_disciplined_runs_pass_every_evaluator(scored: list[dict[str, Any]]) -> None:
    for task_id in ["clear_01", "fault_02", "confirm_01"]:
        found = verdicts(scored, "disciplined", task_id)
        failed = {name: r["reason"] for name, r in found.items() if not r["passed"]}
        assert not failed, (task_id, failed)
        assert {"trajectory_match", "tool_policy", "task_success", "step_budget", "session_completeness"} <= set(found)
    assert "injection" in verdicts(scored, "disciplined", "fault_02")  # the case injects a 429


def test_an_order_deleted_without_a_handoff_is_caught(scored: list[dict[str, Any]]) -> None:
    policy = verdicts(scored, "ambiguous", "confirm_01")["tool_policy"]
    assert not policy["passed"]
    assert "forbidden: delete_order#3" in policy["reason"]
    assert "unconfirmed irreversible: delete_order#3 (no handoff_to_human before it)" in policy["reason"]
    assert re.search(
        r"automatic choice: delete_order#3 acts on ord_1007, one of \d candidates from get_orders#2", policy["reason"]
    )


def test_a_429_retried_without_backoff_is_caught(scored: list[dict[str, Any]]) -> None:
    retry = verdicts(scored, "blind", "fault_02")["retry_discipline"]
    assert not retry["passed"]
    assert re.search(r"early retry send_message#\d: waited \d+ms < retry_after 20ms", retry["reason"]), retry["reason"]


def test_a_session_truncated_by_a_crash_is_caught(scored: list[dict[str, Any]]) -> None:
    # The root span never ended, so it carries no task id: the case is found by the input text.
    found = verdicts(scored, None, "clear_04")
    completeness = found["session_completeness"]
    assert not completeness["passed"]
    reason = completeness["reason"]
    assert "root span missing (never ended, or lost)" in reason
    assert "spans point to a parent that is not in the lake" in reason
    assert "1 requested tool calls never executed" in reason  # the refund the model asked for
    assert "no terminal state" in reason
    assert not found["task_success"]["passed"]  # and no answer was recorded


def test_scores_are_stored_and_the_view_keeps_the_newest(lake: Path, scored: list[dict[str, Any]]) -> None:
    files = list((lake / "scores").glob("*.parquet"))
    assert files
    [(stored,)] = duckdb.sql(f"select count(*) from read_parquet('{lake}/scores/*.parquet')").fetchall()
    assert stored >= len(scored)
    again = CliRunner().invoke(main, ["score", "--lake", str(lake), "--tasks", str(tasks_path()), "--summary"])
    assert again.exit_code == 0, again.output
    from tracevals.queries import open_lake

    con = open_lake(lake)
    [(files_now,)] = duckdb.sql(f"select count(*) from glob('{lake}/scores/*.parquet')").fetchall()
    assert files_now == len(files) + 1  # re-scoring appended a file
    one_each = con.sql("select count(*) = count(distinct (trace_id, evaluator)) from scores").fetchall()
    assert one_each == [(True,)]  # and the view shows one row per (trace, evaluator), the newest


def test_sample_is_deterministic_by_session_and_recorded(lake: Path) -> None:
    def sampled(seed: int) -> list[dict[str, Any]]:
        args = ["score", "--lake", str(lake), "--sample", "0.5", "--seed", str(seed), "--no-write", "--format", "json"]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        return json.loads(result.output.splitlines()[0])

    first, again = sampled(11), sampled(11)
    assert [(r["trace_id"], r["evaluator"]) for r in first] == [(r["trace_id"], r["evaluator"]) for r in again]
    from tracevals.lake.sampling import session_sampled

    sessions = {r["session_id"] for r in first}
    assert all(session_sampled(s, 0.5, 11) for s in sessions)
    assert sessions and len(sessions) < len({r["session_id"] for r in sampled_all(lake)})
    written = CliRunner().invoke(main, ["score", "--lake", str(lake), "--sample", "0.5", "--seed", "11"])
    assert written.exit_code == 0, written.output
    from tracevals.queries import open_lake

    details = open_lake(lake).sql("select distinct details->'sample' from scores where details->>'sample' is not null")
    assert [json.loads(d) for (d,) in details.fetchall()] == [{"fraction": 0.5, "seed": 11}]


def sampled_all(lake: Path) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["score", "--lake", str(lake), "--no-write", "--format", "json"])
    return json.loads(result.output.splitlines()[0])


def test_since_and_until_select_sessions_by_their_start(lake: Path) -> None:
    args = [
        "score",
        "--lake",
        str(lake),
        "--since",
        "2000-01-01",
        "--until",
        "2000-01-02",
        "--format",
        "json",
        "--no-write",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and json.loads(result.output.splitlines()[0]) == []
    result = CliRunner().invoke(main, ["score", "--lake", str(lake), "--since", "30d", "--format", "csv", "--no-write"])
    assert result.exit_code == 0
    assert result.output.splitlines()[0] == "session_id,trace_id,task_id,attempt,variant,evaluator,passed,score,reason"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tasks", "{missing}"], "cannot read the task file"),
        (["--config", "{bad_config}"], "field 'budgets.max_stesp': unknown field (did you mean 'max_steps'?)"),
        (
            ["--evaluators", "trajectory_mtch"],
            "unknown evaluator 'trajectory_mtch'; valid: failure_handling, injection",
        ),
        (["--since", "last tuesday"], "is not a time"),
        (["--memory-limit", "lots"], "'lots' is not a memory size: a number and a unit, e.g. 4GB or 512MiB"),
    ],
)
def test_user_errors_are_one_line_and_exit_1(lake: Path, tmp_path: Path, args: list[str], message: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("budgets: {max_stesp: 3}\n")
    filled = [a.format(missing=tmp_path / "nope.jsonl", bad_config=bad) for a in args]
    result = CliRunner().invoke(main, ["score", "--lake", str(lake), *filled])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_memory_limit_given_holds(lake: Path) -> None:
    """`--memory-limit` bounds each group's DuckDB, its tables included, and never gives way (tracevals' own
    default does, for a statement that needs more): far too little is an error of one line."""
    args = ["score", "--lake", str(lake), "--summary", "--no-write", "--memory-limit", "1MB"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert "Out of Memory" in result.output and "raise --memory-limit" in result.output
    assert "Traceback" not in result.output
    result = CliRunner().invoke(main, [*args[:-1], "1GB"])
    assert result.exit_code == 0, result.output
    # the distributed engines' workers do not read it: refused, not ignored
    result = CliRunner().invoke(main, [*args, "--engine", "ray"])
    assert result.exit_code == 1 and "--engine ray's take their memory from Ray's own settings" in result.output


def test_an_evaluator_named_that_scores_nothing_says_so(lake: Path, tmp_path: Path) -> None:
    """`--evaluators trajectory_match` where no trace has a case to compare with: a warning, not a silent
    "0 scores" (found scoring an ADK lake without --tasks)."""
    tasks = tmp_path / "other.jsonl"
    tasks.write_text(json.dumps({"case_id": "other_01", "input": "nothing the agents were asked"}) + "\n")
    args = [
        "score",
        "--lake",
        str(lake),
        "--no-write",
        "--summary",
        "--evaluators",
        "trajectory_match,retry_discipline",
    ]
    result = CliRunner().invoke(main, [*args, "--tasks", str(tasks)])
    assert result.exit_code == 0, result.output
    assert re.search(r"warning: trajectory_match scored none of the \d+ traces\n", result.output)
    assert "retry_discipline scored none" not in result.output
    result = CliRunner().invoke(main, [*args, "--tasks", str(tasks_path())])  # the runs' cases: no warning
    assert result.exit_code == 0 and "scored none" not in result.output


def test_scores_go_back_as_gen_ai_evaluation_result_events(lake: Path) -> None:
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter

    from tracevals.scoring.emit import EVENT_NAME, EvaluationEmitter
    from tracevals.scoring.offline import score_lake

    run = score_lake(lake, tasks=load_cases(tasks_path()), write=False)
    exporter = InMemoryLogRecordExporter()
    emitter = EvaluationEmitter(exporter)
    assert emitter.emit(run.scores, run.root_spans) == run.scores.height
    emitter.shutdown()
    emitter.shutdown()  # idempotent
    records = [r.log_record for r in exporter.get_finished_logs()]
    assert len(records) == run.scores.height and {r.event_name for r in records} == {EVENT_NAME}
    index, first = next(
        (i, r) for i, r in enumerate(run.scores.iter_rows(named=True)) if r["trace_id"] in run.root_spans
    )
    record = records[index]
    assert record.attributes is not None
    assert record.attributes["gen_ai.evaluation.name"] == first["evaluator"]
    assert record.attributes["gen_ai.evaluation.score.label"] == ("pass" if first["passed"] else "fail")
    assert record.attributes["gen_ai.evaluation.explanation"] == first["reason"]
    assert f"{record.trace_id:032x}" == first["trace_id"]  # filed under the judged trace
    assert f"{record.span_id:016x}" == run.root_spans[first["trace_id"]]  # parented to its root span


@pytest.mark.parametrize("selection", [None, {"fraction": 0.7, "seed": 3}])
def test_scoring_a_chunk_of_sessions_at_a_time_gives_the_same_scores(lake: Path, selection: Any) -> None:
    from tracevals.queries import open_lake
    from tracevals.queries.selection import Selection, is_restricted
    from tracevals.scoring.offline import score_connection

    chosen = Selection(**selection) if selection else None
    whole = score_connection(open_lake(lake), tasks=load_cases(tasks_path()), selection=chosen)
    con = open_lake(lake)
    chunked = score_connection(con, tasks=load_cases(tasks_path()), selection=chosen, chunk_sessions=2)
    assert whole.sessions > 4  # so that 2 per chunk makes several chunks
    columns = ["trace_id", "evaluator", "passed", "score", "reason", "details"]
    assert chunked.scores.select(columns).sort(columns).equals(whole.scores.select(columns).sort(columns))
    assert (chunked.traces, chunked.sessions, chunked.root_spans) == (whole.traces, whole.sessions, whole.root_spans)
    # the connection reads what it read before: the selection's sessions, or the whole lake
    assert is_restricted(con) == (chosen is not None)


def test_a_wrong_or_empty_lake_path_is_an_error_not_0_sessions(lake: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"  # the folder that holds the lake, passed by mistake
    (project / "lake").mkdir(parents=True)
    (project / "lake" / "spans").symlink_to(lake / "spans")
    (project / "agent.py").write_text("")
    empty = tmp_path / "new-lake"  # a lake nothing was written to yet
    (empty / "spans").mkdir(parents=True)
    for args, message in (
        (["--lake", str(project)], f"{str(project)!r} is not a lake: it has no spans/ folder (nor logs/, scores/); "
         f"the lake is probably {project / 'lake'}"),
        (["--lake", ""], "the lake path is empty; pass --lake DIR (or set TRACEVALS_LAKE)"),
        (["--lake", str(empty)], f"the lake {empty} holds no spans: nothing to score"),
    ):  # fmt: skip
        for command in (["score"], ["sql", "select count(*) from spans"], ["report", "--out", str(tmp_path / "r.md")]):
            if command != ["score"] and args[1] == str(empty):
                continue  # an empty lake is a valid lake to query; only scoring it is pointless
            result = CliRunner().invoke(main, [*command, *args])
            assert result.exit_code == 1, (command, args, result.output)
            assert message in " ".join(result.output.split()), (command, result.output)
            assert "Traceback" not in result.output
    window = CliRunner().invoke(main, ["score", "--lake", str(lake), "--since", "2001-01-01", "--until", "2001-01-02"])
    assert window.exit_code == 0  # a night with no traffic is not an error, but it is said
    assert (
        "warning: no trace of" in window.stderr and "since 2001-01-01T00:00Z, until 2001-01-02T00:00Z" in window.stderr
    )
