"""`tracevals run`: your agent, your task file, k attempts each; resumes a killed run by its run id."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tracevals.lake.lake import Lake
from tracevals.queries import open_lake
from tracevals.queries.derived import derived_hours, hours_of

AGENT = textwrap.dedent(
    """
    import os, signal

    def agent(text, ctx):
        log = os.environ["AGENT_LOG"]
        with open(log, "a") as fh:
            fh.write(f"{ctx.task_id}:{ctx.attempt}\\n")
        with open(log) as fh:
            calls = sum(1 for _ in fh)
        if os.environ.get("KILL_AT") and calls == int(os.environ["KILL_AT"]):
            os.kill(os.getpid(), signal.SIGKILL)  # the machine dies mid-run
        if ctx.task_id == "t2" and ctx.attempt == 2:
            raise RuntimeError("upstream down")
        return f"the answer to {text} is 42"
    """
)

TASKS = [
    {"case_id": "t1", "input": "q1", "success_criteria": {"must_include": ["42"]}},
    {"case_id": "t2", "input": "q2", "success_criteria": {"must_include": ["42"]}},
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "my_agent.py").write_text(AGENT)
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(t) for t in TASKS) + "\n")
    return tmp_path


def _run(
    project: Path, *args: str, kill_at: int | None = None, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # the end-of-run merge deletes the files it merged at once (no readers to wait for: TRACEVALS_COMPACT_RETENTION
    # is tests/test_lake_retention.py's), so that a run leaves one file an hour
    env = {
        **os.environ,
        "AGENT_LOG": str(project / "calls.log"),
        "TRACEVALS_COMPACT_RETENTION": "0",
        **(env_extra or {}),
    }
    env.pop("KILL_AT", None)
    if kill_at is not None:
        env["KILL_AT"] = str(kill_at)
    command = [sys.executable, "-m", "tracevals", "run", "--tasks", "cases.jsonl", "--agent", "my_agent:agent"]
    return subprocess.run(
        [*command, "--lake", "lake", "--concurrency", "1", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_run_scores_and_prints_statistics(project: Path) -> None:
    result = _run(project, "-k", "3", "--run-id", "r1", "--format", "json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    (variant,) = summary["variants"]
    # hand calculation: t1 passes 3/3, t2 fails attempt 2 -> 2/3; pass@1 = (1 + 2/3) / 2 = 0.8333
    assert variant["runs"] == 6 and variant["pass_at_1"] == pytest.approx(0.8333, abs=1e-4)
    # pass^3 = (C(3,3)/C(3,3) + C(2,3)/C(3,3)) / 2 = (1 + 0) / 2
    assert variant["k"] == 3 and variant["pass_hat_k"] == 0.5 and variant["worst_task"] == "t2"
    con = open_lake(project / "lake")
    assert con.execute("select count(*) from runs where error is not null").fetchone() == (1,)
    # the hours merged at the run's end, the running one included, carry their derived frames: the run's
    # report and every later one read its attempts from them (tests/test_lake_data_narrowed.py)
    lake = Lake.open(project / "lake")
    assert hours_of(lake) and set(derived_hours(lake)) == set(hours_of(lake))


def test_a_run_beside_more_traffic_than_a_small_lake_leaves_its_hours_to_compact(project: Path) -> None:
    """The end of a run derives only the hours a small lake's snapshot would take (TRACEVALS_SNAPSHOT_MB): an
    hour that also holds production traffic is not rebuilt at every run's end. Its figures are the same."""
    small = _run(project, "-k", "3", "--run-id", "small", "--format", "json")
    (project / "calls.log").unlink()
    shutil.move(project / "lake", project / "small-lake")
    big = _run(project, "-k", "3", "--run-id", "small", "--format", "json",
               env_extra={"TRACEVALS_SNAPSHOT_MB": "0.000001"})  # fmt: skip
    assert small.returncode == big.returncode == 0, big.stderr
    assert derived_hours(Lake.open(project / "small-lake")) and not derived_hours(Lake.open(project / "lake"))
    figures = [
        {k: v for k, v in json.loads(r.stdout)["variants"][0].items() if "latency" not in k} for r in (small, big)
    ]
    assert figures[0] == figures[1]


def test_a_killed_run_resumes_without_repeating_finished_attempts(project: Path) -> None:
    killed = _run(project, "-k", "3", "--run-id", "r2", kill_at=4)
    assert killed.returncode == -9  # SIGKILL while the 4th attempt ran
    calls = (project / "calls.log").read_text().split()
    assert calls == ["t1:1", "t1:2", "t1:3", "t2:1"]
    # killed: each finished attempt is in a file of its own, flushed as it finished
    assert len(list((project / "lake" / "spans").rglob("*.parquet"))) >= 3

    resumed = _run(project, "-k", "3", "--run-id", "r2")
    assert resumed.returncode == 0, resumed.stderr
    assert "3 attempts already in the lake are skipped" in resumed.stderr
    calls = (project / "calls.log").read_text().split()
    # the three finished attempts ran once; the killed one ran again, then the rest
    assert calls == ["t1:1", "t1:2", "t1:3", "t2:1", "t2:1", "t2:2", "t2:3"]
    con = open_lake(project / "lake")
    done = con.execute(
        "select task_id, attempt, count(*) from runs where run_id = 'r2' and end_time is not null "
        "group by all order by 1, 2"
    ).fetchall()
    assert done == [("t1", 1, 1), ("t1", 2, 1), ("t1", 3, 1), ("t2", 1, 1), ("t2", 2, 1), ("t2", 3, 1)]
    # finished: the run's files merged into one per hour, every span once
    files = list((project / "lake" / "spans").rglob("*.parquet"))
    assert len(files) == len({f.parent for f in files}) <= 2
    assert con.execute("select count(*) - count(distinct (trace_id, span_id)) from raw_spans").fetchone() == (0,)


def test_bad_agent_reference_is_one_line(project: Path) -> None:
    result = _run(project, "-k", "1", "--agent", "my_agent:nope")
    # click keeps the last --agent; the error names the missing function
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "Error: --agent my_agent:nope: 'my_agent' has no 'nope'; check the name after the colon"
    ]


def test_an_agent_is_a_module_or_a_file_and_a_bad_one_is_one_line(project: Path) -> None:
    """`--agent path/to/file.py:function` (what a stranger types first) loads the file, its folder importable for
    its own imports; it was refused (`No module named 'sub/agent.py'`), and `./sub/agent.py:run` ended in a
    traceback. Whatever the user's module does at import is one line (`model.callables.import_reference`, the
    loader the task files' checkers use too)."""
    sub = project / "sub"
    sub.mkdir()
    (sub / "helper.py").write_text("ANSWER = 'from the helper'\n")
    (sub / "agent.py").write_text("import helper\n\ndef run(input, ctx):\n    return helper.ANSWER\n")
    (sub / "raises.py").write_text("raise RuntimeError('boom at import')\n")
    (sub / "syntax.py").write_text("def run(:\n")
    for reference in ("sub/agent.py:run", "./sub/agent.py:run", str(sub / "agent.py") + ":run"):
        result = _run(project, "-k", "1", "--agent", reference, "--format", "json")
        assert result.returncode in (0, 1), result.stderr  # 1: the cases' checks fail; it ran
        assert json.loads(result.stdout)["variants"][0]["runs"] == len(TASKS), reference
    for reference, line in [
        ("sub/raises.py:run", "cannot import 'sub/raises.py': RuntimeError: boom at import"),
        ("sub/syntax.py:run", "cannot import 'sub/syntax.py': SyntaxError: invalid syntax (syntax.py, line 1)"),
        ("sub/none.py:run", "'sub/none.py': no such file; give a path to a .py file, or a module name"),
        (
            "sub/agent.py",
            "'sub/agent.py' must look like module:function or path/to/file.py:function, e.g. my_agent:run",
        ),
        ("sub/agent.py:nope", "'sub/agent.py' has no 'nope'; check the name after the colon"),
    ]:
        result = _run(project, "-k", "1", "--agent", reference)
        assert result.returncode == 1
        assert result.stderr.strip().splitlines() == [f"Error: --agent {reference}: {line}"]


TOOL_AGENT = textwrap.dedent(
    """
    import os
    import tracevals

    @tracevals.tool(effect="read")
    def lookup(key):
        with open(os.environ["AGENT_LOG"], "a") as fh:
            fh.write(f"live {key}\\n")
        return {"key": key, "value": 42}

    def agent(text, ctx):
        try:
            return f"{text}: {lookup(key=text)['value']}"
        except tracevals.ToolError as exc:
            return f"{text}: after {exc.error_type}, {lookup(key=text)['value']}"
    """
)


def test_faults_and_cassettes_from_the_command_line(project: Path) -> None:
    (project / "my_agent.py").write_text(TOOL_AGENT)
    (project / "faults.yaml").write_text("faults:\n  - {tool: lookup, call: 1, type: timeout, latency_ms: 1}\n")
    recorded = _run(
        project, "-k", "2", "--run-id", "rec", "--faults", "faults.yaml", "--cassettes", "tapes", "--record"
    )
    assert recorded.returncode == 0, recorded.stderr
    live = (project / "calls.log").read_text().split("\n")
    assert live.count("live q1") == 2  # the first call of each attempt timed out before the tool ran
    replayed = _run(project, "-k", "2", "--run-id", "rep", "--cassettes", "tapes", "--replay")
    assert replayed.returncode == 0, replayed.stderr
    assert (project / "calls.log").read_text().split("\n") == live  # nothing ran live in the replay
    con = open_lake(project / "lake")
    outputs = con.execute("select run_id, task_id, attempt, output from runs order by 2, 3, 1").fetchall()
    by_run = {(t, a): o for r, t, a, o in outputs if r == "rec"}
    assert by_run == {(t, a): o for r, t, a, o in outputs if r == "rep"}
    assert by_run[("t1", 1)] == "q1: after timeout, 42"


def test_a_damaged_cassette_is_one_line_naming_it(project: Path) -> None:
    """A cassette cut short or edited by hand (here: a truncated copy) fails the run before any attempt, in
    one line naming the file; it was a traceback (and a replay must not record over it)."""
    (project / "my_agent.py").write_text(TOOL_AGENT)
    assert _run(project, "-k", "1", "--run-id", "rec", "--cassettes", "tapes", "--record").returncode == 0
    tape = project / "tapes" / "t1.json"
    whole = tape.read_bytes()
    tape.write_bytes(whole[: len(whole) // 2])
    for mode in ("--replay", "--record-new", "--record"):
        result = _run(project, "-k", "1", "--run-id", f"r{mode}", "--cassettes", "tapes", mode)
        assert result.returncode == 1, result.stderr
        [line] = result.stderr.strip().splitlines()
        assert line.startswith(f"Error: cassette {Path('tapes') / 't1.json'} is not JSON (Unterminated string")
        assert line.endswith("; restore it, or delete it and record again (--record)")
        assert tape.read_bytes() == whole[: len(whole) // 2]  # left as it was


def test_replay_without_a_recording_is_one_line(project: Path) -> None:
    result = _run(project, "-k", "1", "--cassettes", "tapes", "--replay")
    assert result.returncode == 1
    assert result.stderr.strip().startswith("Error: no cassette for task 't1'")


def test_two_cassette_modes_together_are_an_error(project: Path) -> None:
    result = _run(project, "-k", "1", "--cassettes", "tapes", "--record", "--replay")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "Error: --record and --replay contradict each other: pick one cassette mode"
    ]
    assert not (project / "lake").exists()  # refused before anything ran


def test_a_fault_rule_that_never_fires_is_said(project: Path) -> None:
    (project / "my_agent.py").write_text(TOOL_AGENT)
    (project / "faults.yaml").write_text(
        "faults:\n"
        "  - {tool: lookup, call: 1, type: timeout, latency_ms: 1}\n"
        "  - {tool: lokup, call: 1, type: server_error}\n"  # a typo: no such tool is ever called
        "  - {tool: lookup, call: 7, type: rate_limit}\n"  # an index no attempt reaches
    )
    result = _run(project, "-k", "1", "--faults", "faults.yaml")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: fault rule lokup:server_error:1 never fired: no attempt called 'lokup' (tools called: lookup)",
        "warning: fault rule lookup:rate_limit:7 never fired: no attempt reached call 7 of 'lookup' (at most 2)",
    ]


def test_a_replay_miss_is_an_infrastructure_error(project: Path) -> None:
    (project / "my_agent.py").write_text(TOOL_AGENT)
    recorded = _run(project, "-k", "1", "--run-id", "rec", "--cassettes", "tapes", "--record")
    assert recorded.returncode == 0, recorded.stderr
    # attempt 2 was never recorded: its tool calls miss; that is not the agent failing
    replayed = _run(project, "-k", "2", "--run-id", "rep", "--cassettes", "tapes", "--replay", "--format", "json")
    assert replayed.returncode == 2
    summary = json.loads(replayed.stdout)
    assert len(summary["replay_misses"]) == 2  # attempt 2 of t1 and of t2
    assert all("attempt 2 was not recorded" in miss for miss in summary["replay_misses"])
    (error,) = [line for line in replayed.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith("error: 2 tool calls had no recording (first: no recording of lookup(")
    assert "--record-new" in error


def test_a_resumed_run_with_other_flags_is_refused(project: Path) -> None:
    first = _run(project, "-k", "1", "--run-id", "r3", "--setting", "model=a")
    assert first.returncode == 0, first.stderr
    again = _run(project, "-k", "1", "--run-id", "r3", "--setting", "model=a", "--concurrency", "2")
    assert again.returncode == 0, again.stderr  # concurrency does not change what an attempt is
    for flags, name in (
        (["-k", "2", "--setting", "model=a"], "-k"),
        (["-k", "1", "--setting", "model=b"], "--setting"),
        (["-k", "1", "--setting", "model=a", "--seed", "9"], "--seed"),
    ):
        changed = _run(project, "--run-id", "r3", *flags)
        assert changed.returncode == 1
        (line,) = changed.stderr.strip().splitlines()
        assert line.startswith(f"Error: run 'r3' (variant 'default') ran with {name} = ")
        assert line.endswith("resume it with the same flags, or pick a new --run-id")
    # another variant under the same run id is its own configuration
    other = _run(project, "-k", "2", "--run-id", "r3", "--variant", "v2")
    assert other.returncode == 0, other.stderr


def test_a_yaml_error_in_a_fault_profile_names_the_file_and_line(project: Path) -> None:
    (project / "faults.yaml").write_text("faults:\n  - {tool: lookup, call: 1, type: timeout\n  - {tool: x}\n")
    result = _run(project, "-k", "1", "--faults", "faults.yaml")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "Error: faults.yaml:3:5: not valid YAML: expected ',' or '}', but got '{' (while parsing a flow mapping)"
    ]


def test_every_run_asked_for_is_reported_and_a_missing_one_is_an_error(project: Path) -> None:
    for run_id in ("r1", "r2", "r3"):
        assert _run(project, "-k", "1", "--run-id", run_id).returncode == 0
    runs = ["--run", "r1", "--run", "r2", "--run", "r3"]
    command = [sys.executable, "-m", "tracevals", "report", "--lake", "lake", "--out", "r.json", "--format", "json"]
    env = {**os.environ, "AGENT_LOG": str(project / "calls.log")}
    report = subprocess.run([*command, *runs], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["runs"] == ["r1", "r2", "r3"]  # the third is not dropped
    (variant,) = json.loads(report.stdout)["variants"]
    assert variant["runs"] == 3 * 2  # every attempt of the three runs: 2 cases, k=1 each
    doc = json.loads((project / "r.json").read_text())
    assert doc["meta"]["runs"] == ["r1", "r2", "r3"]
    typo = subprocess.run([*command, *runs, "--run", "r4"], cwd=project, env=env, capture_output=True, text=True)
    assert typo.returncode == 1
    assert typo.stderr.strip().splitlines()[-1] == (
        "Error: run r4 has no attempts in the selection (runs in the lake: r1, r2, r3)"
    )


STREAMING_AGENT = textwrap.dedent(
    """
    import asyncio
    import tracevals

    @tracevals.tool(effect="read")
    def lookup(q):
        return "42"

    @tracevals.agent("streamer")
    async def agent(text, ctx):  # a streaming agent: its answer comes in pieces, as a chat UI shows it
        yield "the answer "
        await asyncio.sleep(0)
        yield f"to {text} is "
        yield lookup(text)

    def sync_agent(text, ctx):
        yield from ("the answer is ", lookup(text))
    """
)


def test_a_streaming_agent_is_read_to_its_end(project: Path) -> None:
    """An agent that streams its answer (an async generator, or a generator): the run took the generator object
    as the answer, `<async_generator object agent at 0x…>`, and failed every attempt of a correct agent. The
    stream is read to its end inside the attempt now, its pieces joined into the answer."""
    (project / "my_agent.py").write_text(STREAMING_AGENT)
    for name, run_id in (("agent", "r-async"), ("sync_agent", "r-sync")):
        result = _run(project, "-k", "2", "--run-id", run_id, "--format", "json", "--agent", f"my_agent:{name}")
        assert result.returncode == 0, result.stderr
        (variant,) = json.loads(result.stdout)["variants"]
        assert (variant["passes"], variant["runs"]) == (4, 4), (name, variant)
    con = open_lake(project / "lake")
    outputs = con.execute("select run_id, task_id, output from runs order by all").fetchall()
    expected = {("r-async", f"the answer to {q} is 42") for q in ("q1", "q2")} | {("r-sync", "the answer is 42")}
    assert {(r, o) for r, _, o in outputs} == expected
    # each lookup of the async stream ran beneath its agent span, inside the attempt
    tools = con.execute(
        "select count(*) from spans t join spans a on a.span_id = t.parent_span_id and a.trace_id = t.trace_id "
        "where t.tool_name = 'lookup' and a.name = 'invoke_agent streamer'"
    ).fetchone()
    assert tools == (4,)


def test_an_agent_that_calls_sys_exit_fails_its_attempt_not_the_run(project: Path) -> None:
    """An agent that gives up with `sys.exit("...")` (as a command-line agent does): the exit ended the whole
    run at that attempt, its message printed and the other attempts never run, the attempt's error not recorded.
    It is that attempt's failure now, recorded as any other."""
    (project / "my_agent.py").write_text(
        textwrap.dedent(
            """
            import sys

            def agent(text, ctx):
                if ctx.attempt == 1:
                    sys.exit("could not reach the backend")
                return "the answer is 42"
            """
        )
    )
    result = _run(project, "-k", "3", "--run-id", "r-exit", "--format", "json")
    assert result.returncode == 0, result.stderr
    (variant,) = json.loads(result.stdout)["variants"]
    assert (variant["passes"], variant["runs"]) == (4, 6)  # two tasks, attempt 1 of each exited
    con = open_lake(project / "lake")
    errors = con.execute("select distinct error from runs where attempt = 1").fetchall()
    assert errors == [("SystemExit: could not reach the backend",)]
