"""The scenarios of issue 36 for `bench/faults.py`: runs as units of the lake, signals, names that become
paths, clocks, flat traces, a read-only lake. Each returns a `Result`: its figures and its targets, met or
not. Real processes throughout (`python -m tracevals`), as a user would run them; the tests
(tests/test_run_units.py, test_run_names.py, test_time_skew.py, test_score_rows_linear.py,
test_operational_errors.py) run the same things smaller."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTHON_CLI = [sys.executable, "-m", "tracevals"]


@dataclass
class Result:
    scenario: str
    figures: dict[str, Any] = field(default_factory=dict)
    targets: list[tuple[str, bool]] = field(default_factory=list)

    def line(self) -> str:
        figures = ", ".join(f"{k} {v}" for k, v in self.figures.items())
        return f"{self.scenario}: {figures}"

    @property
    def ok(self) -> bool:
        return all(met for _, met in self.targets)


def _project(work: Path, cases: int = 3) -> Path:
    from tests.fixtures.run_project import write_project  # the tests' project (sys.path: bench/faults.py)

    return write_project(work, range(cases))


def _start(work: Path, lake: str, run_id: str, *args: str, sleep: float = 0.1) -> subprocess.Popen[str]:
    env = {**os.environ, "AGENT_LOG": str(work / "calls.log"), "AGENT_SLEEP": str(sleep)}
    command = [*PYTHON_CLI, "run", "--tasks", "cases.jsonl", "--agent", "my_agent:agent", "--lake", lake]
    return subprocess.Popen([*command, "--run-id", run_id, "--format", "json", *args], cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def _starts(work: Path) -> list[tuple[str, str, float]]:
    log = work / "calls.log"
    if not log.exists():
        return []
    return [(p[1], p[2], float(p[3])) for p in (line.split() for line in log.read_text().splitlines())]


@contextmanager
def moto_lake(name: str) -> Iterator[str]:
    """An S3 lake on a local moto server (the tests' fixture, as a context)."""
    import logging
    import socket

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    saved = dict(os.environ)
    os.environ.update({"AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "bench",
                       "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1"})  # fmt: skip
    try:
        boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}").create_bucket(Bucket="bench")
        yield f"s3://bench/{name}"
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.stop()


def concurrent_runs(work: Path, lake: str, rounds: int = 3, k: int = 3) -> Result:
    """Each round: runs A and B and a retry of A (the same id) started together on one lake."""
    result = Result(f"two runs and a retry, started together ({'S3' if '://' in lake else 'local disk'})")
    dup = missing = refused = printed = late_resumes = bad = 0
    started = time.monotonic()
    for r in range(rounds):
        project = _project(work / f"round{r}")
        target = f"{lake}-{r}" if "://" in lake else str(project / "lake")
        procs = [_start(project, target, f"r{r}-a", "-k", str(k)), _start(project, target, f"r{r}-b", "-k", str(k)),
                 _start(project, target, f"r{r}-a", "-k", str(k))]  # fmt: skip
        outs = [(p.communicate(timeout=600), p.returncode) for p in procs]
        for (stdout, stderr), code in outs:
            lines = stderr.strip().splitlines()
            if code == 0 and stdout.strip():
                printed += 1
                late_resumes += "attempts already in the lake are skipped" in stderr
            elif code == 1 and len(lines) == 1 and "is in progress on host" in lines[0]:
                refused += 1
            else:
                bad += 1
        counts = Counter((run, attempt) for run, attempt, _ in _starts(project))
        expected = {(f"r{r}-{x}", f"t{i}:{a}") for x in "ab" for i in range(3) for a in range(1, k + 1)}
        dup += sum(n - 1 for n in counts.values())
        missing += len(expected - set(counts))
    result.figures = {"rounds": rounds, "attempts run twice": dup, "attempts never run": missing,
                      "statistics printed": printed, "refused in one line": refused,
                      "retries that came after the run ended": late_resumes, "other outcomes": bad,
                      "seconds": round(time.monotonic() - started, 1)}  # fmt: skip
    result.targets = [("every attempt exactly once", dup == 0 and missing == 0),
                      ("each process printed its statistics or was refused in one line", bad == 0)]  # fmt: skip
    return result


def sigint(work: Path, rounds: int = 3) -> Result:
    """SIGINT while two attempts are in flight, then resume; and a second SIGINT that aborts."""
    result = Result("SIGINT mid-run, then resume")
    after = codes = resumed_once = 0
    latency: list[float] = []
    for r in range(rounds):
        project = _project(work / f"sigint{r}")
        run = _start(project, str(project / "lake"), "r", "-k", "3", "--concurrency", "2", sleep=1.0)
        deadline = time.monotonic() + 120
        while len(_starts(project)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        signalled, sent = time.time(), time.monotonic()
        run.send_signal(signal.SIGINT)
        run.communicate(timeout=300)
        latency.append(time.monotonic() - sent)
        codes += run.returncode == 130
        after += sum(1 for *_, at in _starts(project) if at > signalled)
        resumed = _start(project, str(project / "lake"), "r", "-k", "3", "--concurrency", "2", sleep=0.0)
        resumed.communicate(timeout=600)
        resumed_once += resumed.returncode == 0 and set(Counter(a for _, a, _ in _starts(project)).values()) == {1}
    result.figures = {"rounds": rounds, "attempts started after the signal": after, "exits 130": f"{codes}/{rounds}",
                      "seconds from the signal to the exit (in-flight attempts finish)": round(max(latency), 1),
                      "resumed runs with every attempt once": f"{resumed_once}/{rounds}"}  # fmt: skip
    result.targets = [("no attempt started after the signal", after == 0),
                      ("resume runs every attempt once", resumed_once == rounds and codes == rounds)]  # fmt: skip
    return result


def hostile_ids(work: Path) -> Result:
    """Run ids that try to leave the lake, and ones that cannot be names, under --attribute-variance."""
    result = Result("hostile run ids (--attribute-variance)")
    project = _project(work / "names" / "project", cases=1)
    (work / "names" / "x").write_text("an existing file")

    def outside() -> dict[str, bytes]:
        # Python's own cache of the agent's module (`__pycache__`, unless PYTHONDONTWRITEBYTECODE) is not tracevals'
        return {str(p): p.read_bytes() for p in (work / "names").rglob("*") if p.is_file()
                and project / "lake" not in p.parents and p.name != "calls.log"
                and p.parent.name != "__pycache__"}  # fmt: skip

    before, absolute = outside(), Path(tempfile.gettempdir()) / "tracevals-bench-hostile"
    shutil.rmtree(absolute, ignore_errors=True)  # left by an earlier run, it would count as this run's escape
    escaped = one_line = attempts_before_refusal = 0
    for run_id in ("../../x", str(absolute), "a/../../../b", "..", "."):
        proc = _start(project, "lake", run_id, "-k", "2", "--attribute-variance", sleep=0.0)
        proc.communicate(timeout=600)
    escaped = len(set(outside().items()) ^ set(before.items())) + absolute.exists()
    for run_id in ("r" * 10_000, "nightly\n42"):
        log = len(_starts(project))
        proc = _start(project, "lake", run_id, "-k", "2", "--attribute-variance", sleep=0.0)
        _, stderr = proc.communicate(timeout=600)
        one_line += proc.returncode == 1 and len(stderr.strip().splitlines()) == 1
        attempts_before_refusal += len(_starts(project)) - log
    result.figures = {"files written or changed outside the lake": escaped,
                      "bad ids refused in one line": f"{one_line}/2",
                      "attempts run before a refusal": attempts_before_refusal}  # fmt: skip
    refused_first = one_line == 2 and attempts_before_refusal == 0
    result.targets = [("nothing written outside the lake", escaped == 0),
                      ("a 10 kB id is one line before any attempt", refused_first)]  # fmt: skip
    return result


def skew(work: Path) -> Result:
    """A production lake whose night should fail, with sessions from clients one day ahead and in 2262."""
    from tracevals.lake.writer import LakeWriter

    lake = work / "skew" / "lake"
    today = dt.datetime.now(dt.timezone.utc).date()
    rows: list[dict[str, Any]] = []

    def session(sid: str, day: dt.date, ended: bool) -> None:
        """An agent turn with one model call that answered; `ended` False: the root never ended (a crash)."""
        t = int(dt.datetime.combine(day, dt.time(6), tzinfo=dt.timezone.utc).timestamp() * 1e9) + len(rows) * 10**6
        tid, root = f"{len(rows) + 1:032x}", f"{len(rows) + 1:016x}"
        rows.append(
            {
                "trace_id": tid,
                "span_id": root,
                "name": "invoke_agent",
                "kind": "agent",
                "operation": "invoke_agent",
                "session_id": sid,
                "start_time": t,
                "end_time": t + 10**8 if ended else None,
            }
        )
        rows.append({"trace_id": tid, "span_id": f"{len(rows) + 1:016x}", "parent_span_id": root, "name": "chat",
                     "kind": "llm", "operation": "chat", "model": "m", "session_id": sid, "start_time": t + 1000,
                     "end_time": t + 10**7})  # fmt: skip

    for d in (3, 2, 1):  # the night: yesterday, half its sessions never end (completeness fails)
        for i in range(20):
            session(f"{d}-{i}", today - dt.timedelta(days=d), ended=d > 1 or i % 2 == 0)
    session("ahead", today + dt.timedelta(days=1), ended=True)
    session("2262", dt.date(2262, 4, 1), ended=True)
    LakeWriter(lake).write_rows(rows)
    gate = subprocess.run([*PYTHON_CLI, "gate", "--lake", str(lake), "--format", "json"], capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    doc = json.loads(gate.stdout) if gate.stdout.strip() else {}
    night = doc.get("night")
    result = Result("clock skew: sessions one day ahead and in 2262 beside a night that fails")
    result.figures = {"verdict": "FAIL" if gate.returncode == 1 else "PASS", "the night": night,
                      "future-dated spans": (doc.get("data_quality") or {}).get("future_dated")}  # fmt: skip
    wanted = str(today - dt.timedelta(days=1))
    result.targets = [("the gate still fails the real night", gate.returncode == 1 and night == wanted)]
    return result


def flat(work: Path, sizes: tuple[int, ...] = (10, 100, 1_000, 10_000, 76_500)) -> Result:
    """One trace per size, every span without a parent: score rows per (trace, evaluator)."""
    from tracevals.lake.writer import LakeWriter
    from tracevals.scoring.offline import score_lake

    lake = work / "flat" / "lake"
    start = time.time_ns() - 3 * 3600 * 10**9
    writer = LakeWriter(lake)
    for t, size in enumerate(sizes, 1):
        at = [start + s * 1000 for s in range(size)]
        writer.write_rows([{"trace_id": f"{t:032x}", "span_id": f"{s + 1:016x}", "name": "call", "kind": "llm",
                            "start_time": at[s], "end_time": at[s] + 500} for s in range(size)])  # fmt: skip
    began = time.monotonic()
    run = score_lake(lake, write=False)
    evaluators = run.scores.get_column("evaluator").n_unique()
    result = Result("flat traces (every span parentless)")
    result.figures = {"spans": sum(sizes), "traces": len(sizes), "evaluators": evaluators,
                      "score rows": run.scores.height, "seconds": round(time.monotonic() - began, 1)}  # fmt: skip
    result.targets = [("rows = traces x evaluators", run.scores.height == len(sizes) * evaluators)]
    return result


def read_only_lake(work: Path) -> Result:
    """score, compact, ingest and run on a read-only bind mount: one line each."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fixtures.read_only import available, read_only

    from tracevals.lake.writer import LakeWriter

    result = Result("a read-only lake")
    if available():
        result.figures = {"skipped": available()}
        return result
    project = _project(work / "ro")
    lake = project / "lake"
    now = time.time_ns() - 3 * 3600 * 10**9
    LakeWriter(lake).write_rows([{"trace_id": "1" * 32, "span_id": "1" * 16, "name": "chat", "kind": "llm",
                                  "operation": "chat", "start_time": now, "end_time": now + 1}])  # fmt: skip
    otlp = ROOT / "tests" / "fixtures" / "otlp" / "genai_current.json"
    commands: dict[str, list[str]] = {
        "score": ["score", "--lake", str(lake)], "compact": ["compact", "--lake", str(lake), "--min-age", "0"],
        "ingest": ["ingest", "--lake", str(lake), str(otlp)],
        "run": ["run", "--tasks", "cases.jsonl", "--agent", "my_agent:agent", "--lake", str(lake), "-k", "1"],
    }  # fmt: skip
    lines: dict[str, int] = {}
    for name, args in commands.items():
        done = subprocess.run(read_only([lake], [*PYTHON_CLI, *args]), cwd=project, capture_output=True, text=True,
                              timeout=600)  # fmt: skip
        lines[name] = len(done.stderr.strip().splitlines()) if done.returncode == 1 else -1
    result.figures = {f"{n} (lines of error)": v for n, v in lines.items()}
    result.targets = [("one line each", set(lines.values()) == {1})]
    return result


SCENARIOS: dict[str, Callable[..., Result]] = {"runs": concurrent_runs, "signals": sigint, "names": hostile_ids,
                                              "skew": skew, "flat": flat, "readonly": read_only_lake}  # fmt: skip
