"""What every comparison benchmark shares: the machine and versions, the peers' virtual environments,
measuring a child process (wall time, peak memory), and the OTLP load generator.

Peers are never installed into the project's environment: each gets `bench/.venvs/<peer>/`, made with
`python3 -m venv` and filled with `pip install -r bench/peers/<peer>.txt` (exact pins). A stamp file
holds the hash of the requirements, so an unchanged peer is not reinstalled. A peer that cannot be
installed raises `PeerUnavailable` with pip's last lines, and the benchmark reports that instead.

Each comparison script prints its figures and, with `--json FILE`, writes them as a `Section`
(`bench/run_all.py` turns those into `bench/RESULTS.md`).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
PEERS = BENCH / "peers"
VENVS = BENCH / ".venvs"
OUT = BENCH / "out"
PROJECT_PYTHON = ROOT / ".venv" / "bin" / "python"


# ---------------------------------------------------------------- the machine and the versions


def machine() -> dict[str, str]:
    """CPU model, cores, memory and OS of this machine, as RESULTS.md prints them."""
    cpu = "unknown"
    with _suppress():
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = "unknown"
    with _suppress():
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 1024**2:.1f} GiB"
    system = platform.platform()
    with _suppress():
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                system = f"{line.split('=', 1)[1].strip(chr(34))} (kernel {platform.release()})"
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu, "cores": f"{usable} usable ({os.cpu_count()} online)", "memory": memory, "os": system}


def tracevals_commit() -> str:
    """The checked-out commit, read from .git's files (no git process), or "unknown"."""
    git = ROOT / ".git"
    with _suppress():
        if git.is_file():  # a worktree: "gitdir: <path>"
            git = Path(git.read_text().split(":", 1)[1].strip())
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:12]
        ref = head[5:]
        common = Path((git / "commondir").read_text().strip()) if (git / "commondir").exists() else git
        common = common if common.is_absolute() else (git / common).resolve()
        for base in (git, common):
            if (base / ref).exists():
                return (base / ref).read_text().strip()[:12]
        packed = common / "packed-refs"
        if packed.exists():
            for line in packed.read_text().splitlines():
                if line.endswith(" " + ref):
                    return line.split()[0][:12]
    return "unknown"


def distribution_versions(python: Path, names: Sequence[str]) -> dict[str, str]:
    """Installed versions of these distributions in the environment of `python`."""
    code = (
        "import json, sys\nfrom importlib import metadata\nout = {}\n"
        "for n in sys.argv[1:]:\n    try: out[n] = metadata.version(n)\n"
        "    except metadata.PackageNotFoundError: out[n] = 'not installed'\nprint(json.dumps(out))"
    )
    done = subprocess.run([str(python), "-c", code, *names], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return {n: "unknown" for n in names}
    versions: dict[str, str] = json.loads(done.stdout)
    return versions


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], (OSError, ValueError, IndexError))  # type: ignore[arg-type]


# ---------------------------------------------------------------- peers in their own environments


class PeerUnavailable(RuntimeError):
    """A peer could not be installed or started here; the message is what went wrong."""


def peer_python(peer: str, *, install: bool = True) -> Path:
    """The interpreter of `bench/.venvs/<peer>`, created and filled from `bench/peers/<peer>.txt`."""
    requirements = PEERS / f"{peer}.txt"
    venv = VENVS / peer
    python = venv / "bin" / "python"
    stamp = venv / ".requirements.sha256"
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text() == digest:
        return python
    if not install:
        raise PeerUnavailable(f"{peer}: not installed (run bench/run_all.py --setup)")
    VENVS.mkdir(parents=True, exist_ok=True)
    log = VENVS / f"{peer}.install.log"
    steps = [
        ["python3", "-m", "venv", "--clear", str(venv)],
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-r", str(requirements)],
    ]
    with log.open("w") as out:
        for step in steps:
            done = subprocess.run(step, stdout=out, stderr=subprocess.STDOUT, timeout=1800)
            if done.returncode != 0:
                lines = [x for x in log.read_text().splitlines() if x.strip() and "is ignored" not in x]
                raise PeerUnavailable(f"{peer}: `{' '.join(step[:4])} ...` failed: " + " | ".join(lines[-3:]))
    stamp.write_text(digest)
    return python


# ---------------------------------------------------------------- measuring a child process


@dataclass
class Measured:
    wall_s: float
    peak_rss_mb: float  # the child's peak resident set (and its waited-for children's)
    returncode: int
    stdout: str
    stderr: str
    cpu_s: float = 0.0  # user + system CPU seconds of the child and its waited-for children


class Child:
    """A child process whose stdout and stderr are read to the end by two threads (neither pipe fills up
    while the caller waits for it, wait4 included)."""

    def __init__(
        self, cmd: Sequence[str], cwd: Path | None, env: dict[str, str] | None, new_session: bool = False
    ) -> None:
        self.proc = subprocess.Popen(
            list(cmd), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=new_session,
        )  # fmt: skip
        self._out: list[str] = []
        self._err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self._out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self._err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(pipe: Any, into: list[str]) -> None:
        into.append(pipe.read() if pipe else "")

    def output(self) -> tuple[str, str]:
        """(stdout, stderr), once the child has exited."""
        for reader in self._readers:
            reader.join()
        return "".join(self._out), "".join(self._err)


# The launcher every measured command runs under (`python -S -c LAUNCHER RESULT CMD...`): it starts CMD (stdin,
# stdout, stderr, cwd and environment its own), forwards SIGTERM and SIGINT to it, reaps it with wait4 and
# writes its wall seconds, CPU seconds and peak RSS to the file RESULT as JSON; its exit code is CMD's.
# Why a launcher: Linux starts a child's peak RSS (ru_maxrss) at the peak of the memory it was spawned from
# (a vfork child execs out of its parent's memory; a fork child copies it), so a command started by a
# benchmark that has held 4 GB reports 4 GB however little it uses. The launcher's own memory is a bare
# interpreter's, and a command it starts reports its own peak.
LAUNCHER = """
import json, os, signal, subprocess, sys, time
child = subprocess.Popen(sys.argv[2:])
for s in (signal.SIGTERM, signal.SIGINT):
    signal.signal(s, lambda signum, frame: child.send_signal(signum))
started = time.perf_counter()
while True:
    try:
        _, status, usage = os.wait4(child.pid, 0)
        break
    except InterruptedError:
        continue
result = {"wall_s": time.perf_counter() - started, "cpu_s": usage.ru_utime + usage.ru_stime,
          "peak_rss_mb": usage.ru_maxrss / 1024}
with open(sys.argv[1], "w") as out:
    json.dump(result, out)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_measured(
    cmd: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 1800
) -> Measured:
    """Run `cmd` to completion under `LAUNCHER`: its wall time, CPU time and peak RSS from the kernel's
    accounting (wait4 of it, its waited-for children included), not the parent's memory."""
    with tempfile.TemporaryDirectory(prefix="tracevals-measured-") as scratch:
        result = Path(scratch) / "result.json"
        child = Child([sys.executable, "-S", "-c", LAUNCHER, str(result), *cmd], cwd, env, new_session=True)
        proc = child.proc

        def kill() -> None:  # the launcher and the command: a process group of their own
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            returncode = proc.wait()
        except BaseException:  # Ctrl-C: the command is in a session of its own, which the terminal's SIGINT misses
            kill()
            raise
        finally:
            timer.cancel()
        out, err = child.output()
        try:
            measured = json.loads(result.read_text())
        except (OSError, ValueError):  # killed before it wrote: the command's figures are unknown
            measured = {"wall_s": float("nan"), "cpu_s": float("nan"), "peak_rss_mb": float("nan")}
    return Measured(measured["wall_s"], measured["peak_rss_mb"], returncode, out, err, cpu_s=measured["cpu_s"])


def last_lines(text: str, n: int = 3) -> str:
    lines = [x.strip() for x in text.splitlines() if x.strip() and "is ignored" not in x]
    return " | ".join(lines[-n:])[-600:]


# ---------------------------------------------------------------- figures and sections


@dataclass
class Figure:
    """One figure: tracevals' runs against a comparison's runs (`peer` None: no comparison)."""

    name: str
    unit: str
    runs: list[float]
    higher_is_better: bool = True
    peer: str | None = None
    peer_runs: list[float] = field(default_factory=list)
    note: str = ""

    @property
    def median(self) -> float | None:
        return statistics.median(self.runs) if self.runs else None

    @property
    def peer_median(self) -> float | None:
        return statistics.median(self.peer_runs) if self.peer_runs else None

    @property
    def ratio(self) -> float | None:
        """tracevals / peer for rates, peer / tracevals for costs: above 1 means tracevals is better."""
        a, b = self.median, self.peer_median
        if a is None or b is None or a <= 0 or b <= 0:  # a cost measured at or below zero is noise: no ratio
            return None
        return a / b if self.higher_is_better else b / a

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "median": self.median, "peer_median": self.peer_median, "ratio": self.ratio}


@dataclass
class Section:
    key: str
    title: str
    command: str
    figures: list[Figure] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)  # markdown, printed after the figures
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # a peer that could not run, and why
    versions: dict[str, str] = field(default_factory=dict)

    def write(self, path: Path | None) -> None:
        data = {**asdict(self), "figures": [f.as_dict() for f in self.figures]}
        text = json.dumps(data, indent=1, default=str)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def print(self) -> None:
        print(f"== {self.title}")
        for f in self.figures:
            peer = f", {f.peer}: {fmt(f.peer_median)}" if f.peer else ""
            ratio = f", ratio {f.ratio:.2f}" if f.ratio else ""
            print(f"  {f.name}: {fmt(f.median)} {f.unit} (runs {[fmt(x) for x in f.runs]}){peer}{ratio}")
        for e in self.errors:
            print(f"  ERROR: {e}")
        for n in self.notes:
            print(f"  note: {n}")


def fmt(value: float | None) -> str:
    if value is None:
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:,.1f}"
    return f"{value:,.3g}"


# ---------------------------------------------------------------- the OTLP load generator


def post_all(
    port: int, payloads: Sequence[bytes], senders: int, path: str = "/v1/traces", time_limit: float | None = None
) -> tuple[int, float]:
    """POST the payloads (OTLP/HTTP protobuf) over `senders` keep-alive connections; a 429/503 is
    waited out (Retry-After) and resent. Returns (requests accepted, seconds). With `time_limit`, sending
    stops then (a receiver that keeps refusing is not waited for): the seconds are the limit if not
    everything was accepted by then, else the time until the last acknowledgement."""
    lock = threading.Lock()
    queue = list(reversed(payloads))
    accepted = [0]
    errors: list[str] = []
    started = time.perf_counter()
    stop_at = started + time_limit if time_limit is not None else float("inf")

    def worker() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        headers = {"Content-Type": "application/x-protobuf"}
        while True:
            with lock:
                if not queue or errors or time.perf_counter() >= stop_at:
                    break
                body = queue.pop()
            while time.perf_counter() < stop_at:
                try:
                    conn.request("POST", path, body, headers)
                    response = conn.getresponse()
                    response.read()
                except (OSError, http.client.HTTPException):
                    conn.close()
                    time.sleep(0.05)
                    continue
                if response.status in (429, 503):
                    conn.close()
                    time.sleep(
                        min(float(response.getheader("Retry-After") or 1), 5, max(0.0, stop_at - time.perf_counter()))
                    )
                    continue
                if response.status // 100 != 2:
                    errors.append(f"HTTP {response.status}")
                with lock:
                    accepted[0] += 1
                break
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"the receiver refused a request: {errors[0]}")
    elapsed = time.perf_counter() - started
    if time_limit is not None and accepted[0] < len(payloads):
        elapsed = time_limit
    return accepted[0], elapsed


def otlp_kv(key: str, value: object) -> Any:
    """An OTLP KeyValue of a bool, int, float or string (anything else as its text)."""
    from tracevals.collector.testing import otlp_kv as kv  # imported here: this module runs in peers' venvs

    return kv(key, value)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def peak_rss_mb(pid: int) -> float:
    """A live process's peak resident memory (VmHWM), MiB; NaN where /proc does not say."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_collect(
    workdir: Path,
    parquet: dict[str, Any],
    extra_args: Sequence[str] = (),
    python: Path | str = PROJECT_PYTHON,
    redaction: bool = False,
) -> tuple[subprocess.Popen[str], int]:
    """`tracevals collect` in `workdir`, one OTLP/HTTP receiver on a free port, a traces pipeline into the
    `parquet` exporter settings given (with the `redaction` processor of the shipped config if asked);
    returns the process and its HTTP port (read from what it prints)."""
    import re

    processors: dict[str, Any] = {"memory_limiter": None, "batch": {"send_batch_size": 8192, "timeout": "200ms"}}
    used = ["memory_limiter", "batch"]
    if redaction:
        processors["redaction"] = {}
        used.insert(1, "redaction")
    config = {
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "processors": processors,
        "exporters": {"parquet": parquet},
        "service": {"pipelines": {"traces": {"receivers": ["otlp"], "processors": used, "exporters": ["parquet"]}}},
    }
    (workdir / "otel-config.yaml").write_text(json.dumps(config))  # JSON is YAML
    cmd = [str(python), "-c", "from tracevals.cli import main; main()", "collect", "--config", "otel-config.yaml"]
    proc = subprocess.Popen([*cmd, *extra_args], cwd=workdir, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        match = re.search(r"otlp/http=127\.0\.0\.1:(\d+)", line)
        if match:
            return proc, int(match.group(1))
    raise RuntimeError("the tracevals collector did not start")
