"""A run is a unit of the lake: real `tracevals run` processes on one lake, on local disk and on S3 (moto).

- Two runs with different ids started together both finish and print their statistics (the merge of one
  never breaks the other's reading: tracevals.lake.retention); a third with the first one's id, started
  with them, is refused in one line (or, if it came late, resumes a finished run and runs nothing). Every
  attempt runs, and is in the lake, exactly once.
- SIGINT mid-run: no attempt starts after the signal, those in flight finish and are kept, the run says how
  to resume and exits 130; resumed, it runs the rest (every attempt once in all). A second SIGINT aborts
  the attempts in flight (the resumed run repeats them); SIGTERM exits 143.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from fixtures.run_project import write_project
from fixtures.s3 import S3, s3  # noqa: F401  (the fixture)

from tracevals.lake.lake import Lake
from tracevals.queries import open_lake


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path, (1, 2))


def _start(project: Path, lake: str, run_id: str, *args: str, sleep: float = 0.3) -> subprocess.Popen[str]:
    env = {**os.environ, "AGENT_LOG": str(project / "calls.log"), "AGENT_SLEEP": str(sleep)}
    command = [sys.executable, "-m", "tracevals", "run", "--tasks", "cases.jsonl", "--agent", "my_agent:agent"]
    return subprocess.Popen(
        [*command, "--lake", lake, "--run-id", run_id, "--format", "json", *args],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _starts(project: Path) -> list[tuple[str, str]]:
    log = project / "calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [(line.split()[1], line.split()[2]) for line in lines]


def _together(project: Path, lake: str) -> None:
    runs = {"a": _start(project, lake, "nightly-a", "-k", "2"), "b": _start(project, lake, "nightly-b", "-k", "2"),
            "a-again": _start(project, lake, "nightly-a", "-k", "2")}  # fmt: skip
    out = {name: (p.communicate(timeout=300), p.returncode) for name, p in runs.items()}
    # of the two with one id, whichever took the lease ran the attempts; the other was refused, or came after
    # the first had ended and resumed a finished run
    winner, other = ("a", "a-again") if "attempts already in the lake" not in out["a"][0][1] else ("a-again", "a")
    if out[winner][1] != 0:
        winner, other = other, winner
    for name in (winner, "b"):
        (stdout, stderr), code = out[name]
        assert code == 0, stderr
        (variant,) = json.loads(stdout)["variants"]  # its statistics, printed
        assert variant["runs"] == 4 and variant["pass_at_1"] == 1.0
        assert "warning" not in stderr, stderr  # the merges of both runs done, none left
    (stdout, stderr), code = out[other]
    if code == 1:  # it overlapped the first: refused, in one line, before any attempt
        (line,) = stderr.strip().splitlines()
        assert line.startswith("Error: run 'nightly-a' is in progress on host ") and " (pid " in line
        assert line.endswith("; --resume to join after it ends")
    else:  # it started after the first had ended: it resumed a finished run and ran nothing
        assert code == 0 and "4 attempts already in the lake are skipped" in stderr, stderr
    # every attempt ran exactly once, and is in the lake exactly once
    counts = Counter(_starts(project))
    assert sorted(counts) == sorted((f"nightly-{r}", f"t{t}:{a}") for r in "ab" for t in (1, 2) for a in (1, 2))
    assert set(counts.values()) == {1}
    con = open_lake(lake)
    rows = con.execute("SELECT run_id, task_id, attempt, count(*) FROM runs GROUP BY ALL").fetchall()
    assert len(rows) == 8 and {n for *_, n in rows} == {1}
    scored = "SELECT count(*), count(DISTINCT (trace_id, evaluator)) FROM scores WHERE evaluator = 'task_success'"
    assert con.execute(scored).fetchone() == (8, 8)  # each attempt scored once, by the run that ran it


def test_two_runs_and_a_retry_of_one_started_together_on_local_disk(project: Path) -> None:
    _together(project, str(project / "lake"))


def test_two_runs_and_a_retry_of_one_started_together_on_s3(project: Path, s3: S3) -> None:  # noqa: F811
    _together(project, s3.lake("runs"))
    assert not [k for k in s3.keys("runs/leases/") if k.endswith(".json")]  # every lease given back


def _wait_for(predicate, timeout: float = 120) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_signal_as_the_first_attempt_starts_counts_it_in_flight(project: Path) -> None:
    """The agent signals its own process the moment the first attempt runs, while the run is still launching
    the others: the message counts every attempt that was launched (each kept in the lake). The count was set
    only once a launch round ended, so a signal inside it said "the 0 in flight" (seen in CI under load)."""
    (project / "my_agent.py").write_text(
        "import os, signal, time\n"
        "def agent(text, ctx):\n"
        "    if ctx.attempt == 1:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(0.5)\n"
        "    return 'the answer is 42'\n"
    )
    run = _start(project, str(project / "lake"), "r1", "-k", "4", "--concurrency", "3", sleep=0.0)
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 130, stderr
    [line] = [line for line in stderr.splitlines() if "no new attempt starts" in line]
    said = int(line.split("the ")[1].split(" in flight")[0])
    kept = open_lake(str(project / "lake")).execute("SELECT count(*) FROM runs WHERE end_time IS NOT NULL")
    assert said == kept.fetchone()[0] >= 1, stderr


def test_sigint_stops_launching_at_once_and_the_run_resumes(project: Path) -> None:
    lake = str(project / "lake")
    run = _start(project, lake, "r1", "-k", "3", "--concurrency", "2", sleep=2.0)
    _wait_for(lambda: len(_starts(project)) >= 2)  # two attempts in flight
    signalled = time.time()
    run.send_signal(signal.SIGINT)
    stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 130, stderr
    starts = [line.split() for line in (project / "calls.log").read_text().splitlines()]
    assert len(starts) == 2 and all(float(s[3]) < signalled for s in starts)  # none started after the signal
    assert "SIGINT: no new attempt starts; the 2 in flight finish and are kept" in stderr
    (last,) = [line for line in stderr.splitlines() if "resume with:" in line]
    assert "stopped by SIGINT: 2 of 6 attempts are in the lake, none started after the signal" in last
    assert last.endswith("--run-id r1 --format json -k 3 --concurrency 2") and stdout == ""
    con = open_lake(lake)
    assert con.execute("SELECT count(*) FROM runs WHERE end_time IS NOT NULL").fetchone() == (2,)  # kept

    resumed = _start(project, lake, "r1", "-k", "3", "--concurrency", "2", sleep=0.0)
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    assert "resuming run r1: 2 attempts already in the lake are skipped" in stderr
    assert json.loads(stdout)["variants"][0]["runs"] == 6
    assert sorted(Counter(_starts(project)).values()) == [1] * 6  # every attempt once, in all


def test_a_second_sigint_aborts_the_attempts_in_flight_and_sigterm_is_143(project: Path) -> None:
    lake = str(project / "lake")
    run = _start(project, lake, "r2", "-k", "2", "--concurrency", "2", sleep=60.0)
    _wait_for(lambda: len(_starts(project)) >= 2)
    run.send_signal(signal.SIGINT)
    time.sleep(0.5)  # the first signal handled
    run.send_signal(signal.SIGINT)
    _, stderr = run.communicate(timeout=60)  # long before the attempts' 60 s
    assert run.returncode == 130, stderr
    assert "SIGINT again: aborted the 2 attempts in flight (not kept: the resumed run repeats them)" in stderr
    assert "resume with: " in stderr

    term = _start(project, lake, "r2", "-k", "2", "--concurrency", "2", sleep=1.0)  # not refused: lease given back
    _wait_for(lambda: len(_starts(project)) >= 4)  # the two aborted attempts, started again
    term.send_signal(signal.SIGTERM)
    _, stderr = term.communicate(timeout=120)
    assert term.returncode == 143, stderr
    assert "stopped by SIGTERM: 2 of 4 attempts are in the lake" in stderr
    assert Counter(_starts(project))[("r2", "t1:1")] == 2  # the aborted attempt ran again on resume


def test_resume_waits_for_the_run_in_progress_then_continues_it(project: Path) -> None:
    from tracevals.lake.leases import Lease

    lake = str(project / "lake")
    holder = Lease(Lake.open(lake), "runs", "r3", "tracevals run").acquire()  # the first job, still running
    env = {**os.environ, "AGENT_LOG": str(project / "calls.log"), "AGENT_SLEEP": "0"}
    command = [sys.executable, "-m", "tracevals", "run", "--tasks", "cases.jsonl", "--agent", "my_agent:agent"]
    with (project / "err.txt").open("w") as err:
        args = [*command, "--lake", lake, "--run-id", "r3", "-k", "1", "--resume", "--format", "json"]
        waiting = subprocess.Popen(args, cwd=project, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        _wait_for(lambda: "waiting for it to end (--resume)" in (project / "err.txt").read_text())
        time.sleep(1)
        assert waiting.poll() is None and _starts(project) == []  # it waits, running nothing
        holder.release()  # the first job ends
        stdout, _ = waiting.communicate(timeout=300)
    stderr = (project / "err.txt").read_text()
    assert waiting.returncode == 0, stderr
    assert stderr.startswith("run 'r3' is in progress on host ")
    assert json.loads(stdout)["variants"][0]["runs"] == 2 and len(_starts(project)) == 2
