"""The collector's write-ahead-log replay at start: a previous run's log written to Parquet, in spans/s.

    .venv/bin/python bench/wal_replay.py [--spans 500000] [--spans-per-request 512] [--senders 3]
                                         [--profile FILE]

1. Baseline: the spans (GenAI-shaped, 10 attributes each, as bench/ingest.py makes them; every span id
   unique) are sent live over OTLP/HTTP protobuf to a fresh `tracevals collect`; ingest rate = spans /
   (first request -> every span committed: SIGTERM, which commits, and the exit).
2. A real log: the same spans sent to another fresh collector whose rotation never comes (max_rows,
   max_bytes, max_age out of reach: nothing is committed), SIGKILLed once every request is acknowledged.
   The lake then holds no committed file and the log every span.
3. Replay: a collector started on that log with the default rotation, as a user runs it. Measured from
   the process's start (spawn: imports included, which is what a restarted collector's user waits) to
   every span committed (the committed Parquet files' row counts, polled; the replayed log's segments are
   deleted by then), and the collector's CPU seconds until then (/proc, user + system); also the time
   until the receivers accept (the "listening" line, and a one-span request acknowledged, whose span is
   counted with the others). Then SIGTERM, and DuckDB over the lake: every acknowledged span id is there
   exactly once (count, count distinct, none missing, none foreign).

Prints the figures, then `target WAL replay >= 100000 spans/s: <figure> spans/s -- met` (or `-- NOT MET`),
the figure being replay spans/s wall from start to every span committed. Exit 0 met, 1 not met, 2 a span
lost or written twice. `--profile FILE` runs the replay collector with every thread under cProfile
(merged into FILE at its exit; the timings then include the profiler's cost).
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from common import post_all
from ingest import genai_request
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ROOT = Path(__file__).resolve().parents[1]
TARGET = 100_000
NEVER = {"max_rows": 1_000_000_000, "max_bytes": "1000GiB", "max_age": "1000h"}
# Every thread of the collector under its own cProfile.Profile, merged into one file at exit: cProfile
# alone sees only the main thread, and the replay runs in the exporter thread.
PROFILED = """
import atexit, cProfile, pstats, sys, threading
out, profiles, lock = sys.argv.pop(1), [], threading.Lock()
run = threading.Thread.run
def profiled(self):
    p = cProfile.Profile()
    with lock:
        profiles.append(p)
    p.enable()
    try:
        run(self)
    finally:
        p.disable()
threading.Thread.run = profiled
main_profile = cProfile.Profile()
profiles.append(main_profile)
def dump():
    main_profile.disable()
    stats = pstats.Stats(profiles[0])
    for p in profiles[1:]:
        try:
            stats.add(p)
        except TypeError:  # a thread that never ran
            pass
    stats.dump_stats(out)
atexit.register(dump)
from tracevals.cli import main
main_profile.enable()
main()
"""


def payloads(spans: int, per_request: int) -> tuple[list[bytes], list[str]]:
    """Encoded requests of `per_request` spans (the last may be smaller), 16 templates with every span id
    rewritten so that each is unique; and the span ids (hex, as the lake holds them)."""
    templates = [ExportTraceServiceRequest.FromString(genai_request(per_request, seed)) for seed in range(16)]
    out: list[bytes] = []
    ids: list[str] = []
    n = 0
    while n < spans:
        request = ExportTraceServiceRequest()
        request.CopyFrom(templates[len(out) % len(templates)])
        batch = request.resource_spans[0].scope_spans[0].spans
        take = min(per_request, spans - n)
        del batch[take:]
        for span in batch:
            n += 1
            span.span_id = (n + 1).to_bytes(8, "big")  # 1 is the probe's
            ids.append(span.span_id.hex())
        out.append(request.SerializeToString())
    return out, ids


def probe_request() -> bytes:
    request = ExportTraceServiceRequest.FromString(genai_request(1, 99))
    request.resource_spans[0].scope_spans[0].spans[0].span_id = (1).to_bytes(8, "big")
    return request.SerializeToString()


def write_config(workdir: Path, rotation: dict[str, Any]) -> Path:
    config = {
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "processors": {"memory_limiter": None, "batch": {"send_batch_size": 8192, "timeout": "200ms"}},
        "exporters": {"parquet": {"path": "lake", "rotation": rotation, "wal": {"dir": "wal"}}},
        "service": {
            "pipelines": {"traces": {"receivers": ["otlp"], "processors": ["memory_limiter", "batch"],
                                     "exporters": ["parquet"]}}
        },
    }  # fmt: skip
    path = workdir / f"config-{len(list(workdir.glob('config-*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


class Collector:
    """`tracevals collect` in `workdir`; its stderr is read by a thread (kept in `lines`)."""

    def __init__(self, workdir: Path, config: Path, profile: Path | None = None) -> None:
        if profile is None:
            cmd = [sys.executable, "-c", "from tracevals.cli import main; main()"]
        else:
            cmd = [sys.executable, "-c", PROFILED, str(profile)]
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [*cmd, "collect", "--config", str(config)], cwd=workdir, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        self._listening = threading.Event()
        self.port = 0
        self.listening_at = 0.0
        self.listening_cpu = 0.0
        threading.Thread(target=self._read, daemon=True).start()
        if not self._listening.wait(120):
            self.proc.kill()
            raise SystemExit("the collector did not start: " + "".join(self.lines))

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if not self._listening.is_set() and "otlp/http=127.0.0.1:" in line:
                self.listening_at = time.perf_counter()
                self.listening_cpu = self.cpu()
                self.port = int(line.split("otlp/http=127.0.0.1:")[1].split()[0])
                self._listening.set()
        self._listening.set()

    def cpu(self) -> float:
        """CPU seconds (user + system) the process has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def terminate(self) -> tuple[float, Any]:
        """SIGTERM (which commits everything) and the exit: (CPU seconds in all, rusage)."""
        self.proc.send_signal(signal.SIGTERM)
        _, status, usage = os.wait4(self.proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"the collector exited with {status}: " + "".join(self.lines[-5:]))
        return usage.ru_utime + usage.ru_stime, usage

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


def committed_rows(lake: Path, seen: dict[Path, int]) -> int:
    """Rows in the lake's committed span files (each file's footer read once)."""
    for path in (lake / "spans").rglob("*.parquet"):
        if path not in seen:
            seen[path] = pq.read_metadata(path).num_rows
    return sum(seen.values())


def send_one(port: int, body: bytes) -> None:
    """POST until acknowledged (a 503 while the collector starts is retried)."""
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
            response = conn.getresponse()
            response.read()
            conn.close()
        except OSError:
            time.sleep(0.005)
            continue
        if response.status == 200:
            return
        if response.status not in (429, 503):
            raise SystemExit(f"the collector answered {response.status}")
        time.sleep(0.05)


def baseline(workdir: Path, bodies: list[bytes], spans: int, senders: int) -> dict[str, float]:
    collector = Collector(workdir, write_config(workdir, {}))
    cpu0, t0 = collector.cpu(), time.perf_counter()
    accepted, _ = post_all(collector.port, bodies, senders)
    cpu, _ = collector.terminate()
    wall = time.perf_counter() - t0
    committed = committed_rows(workdir / "lake", {})
    if accepted != len(bodies) or committed != spans:
        raise SystemExit(f"baseline: {accepted}/{len(bodies)} requests accepted, {committed}/{spans} spans committed")
    return {"wall": wall, "cpu": cpu - cpu0, "rate": spans / wall, "per_cpu": spans / (cpu - cpu0)}


def build_log(workdir: Path, bodies: list[bytes], senders: int) -> dict[str, float]:
    """Send every request to a collector that never commits, then SIGKILL it: the log holds them all."""
    collector = Collector(workdir, write_config(workdir, NEVER))
    accepted, seconds = post_all(collector.port, bodies, senders)
    collector.kill()
    if accepted != len(bodies):
        raise SystemExit(f"log: only {accepted} of {len(bodies)} requests acknowledged")
    if list((workdir / "lake").rglob("*.parquet")):
        raise SystemExit("log: the collector committed files before its kill; the log is not the whole run")
    segments = sorted((workdir / "wal").glob("wal-*.log"))
    return {"bytes": sum(p.stat().st_size for p in segments), "segments": len(segments), "send_s": seconds}


def replay(workdir: Path, expected: int, profile: Path | None) -> dict[str, float]:
    lake = workdir / "lake"
    collector = Collector(workdir, write_config(workdir, {}), profile)
    listening = collector.listening_at - collector.started
    send_one(collector.port, probe_request())
    accepting = time.perf_counter() - collector.started
    seen: dict[Path, int] = {}
    deadline = time.perf_counter() + 3600
    while committed_rows(lake, seen) < expected:
        if collector.proc.poll() is not None or time.perf_counter() > deadline:
            raise SystemExit("replay: the collector exited or never committed everything: " + "".join(collector.lines))
        time.sleep(0.01)
    done = time.perf_counter()
    cpu = collector.cpu()
    total_cpu, usage = collector.terminate()
    wall = done - collector.started
    return {
        "wall": wall,
        "cpu": cpu,
        "listening": listening,
        "listening_cpu": collector.listening_cpu,
        "accepting": accepting,
        "rate": expected / wall,
        "per_cpu": expected / cpu,
        "rss": usage.ru_maxrss / 1024,
        "total_cpu": total_cpu,
    }


def exactly_once(lake: Path, ids: list[str]) -> dict[str, int]:
    """Rows, distinct span ids, acknowledged ids missing and ids nobody sent, over the committed files."""
    expected = pa.table({"span_id": pa.array(ids, pa.string())})
    con = duckdb.connect()
    con.register("expected", expected)
    files = f"read_parquet('{lake}/spans/**/*.parquet')"
    ((rows, distinct),) = con.execute(f"select count(*), count(distinct span_id) from {files}").fetchall()
    ((missing,),) = con.execute(
        f"select count(*) from expected where span_id not in (select span_id from {files})"
    ).fetchall()
    ((foreign,),) = con.execute(
        f"select count(distinct span_id) from {files} where span_id not in (select span_id from expected)"
    ).fetchall()
    return {"rows": rows, "distinct": distinct, "missing": missing, "foreign": foreign}


def say(*parts: str) -> None:
    print("".join(parts), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=500_000)
    parser.add_argument("--spans-per-request", type=int, default=512, help="the SDK's default batch is 512")
    parser.add_argument("--senders", type=int, default=3, help="sender threads (keep-alive connections)")
    parser.add_argument("--profile", type=Path, help="cProfile the replay collector (every thread) into FILE")
    parser.add_argument("--no-baseline", action="store_true", help="skip the live ingest baseline")
    args = parser.parse_args()
    bodies, ids = payloads(args.spans, args.spans_per_request)
    ids.append((1).to_bytes(8, "big").hex())  # the probe's span, sent to the replaying collector
    n = len(ids)
    size = sum(map(len, bodies)) / args.spans
    say(f"payload: {args.spans:,} GenAI spans in {len(bodies):,} requests of {args.spans_per_request}, ",
        f"10 attributes/span, {size:.0f} bytes/span")  # fmt: skip
    say(f"machine: {len(os.sched_getaffinity(0))} CPUs, load average {os.getloadavg()[0]:.1f} at the start ",
        "(the wall figures count the share of the CPUs the collector got; the CPU-second ones less so)")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="tracevals-replay-") as tmp:
        base = Path(tmp)
        live: dict[str, float] = {}
        if not args.no_baseline:
            (base / "live").mkdir()
            live = baseline(base / "live", bodies, args.spans, args.senders)
            say("baseline ingest (the same spans live over OTLP/HTTP protobuf to a fresh collector, first request ",
                f"to every span committed): {live['rate']:,.0f} spans/s wall, {live['per_cpu']:,.0f} spans/s per ",
                f"collector CPU-second ({live['wall']:.2f} s, {live['cpu']:.2f} CPU s)")  # fmt: skip
        work = base / "replay"
        work.mkdir()
        log = build_log(work, bodies, args.senders)
        say(f"log: {log['bytes'] / 1e6:.1f} MB in {log['segments']:.0f} segment(s), written by a collector ",
            f"SIGKILLed once every request was acknowledged ({log['send_s']:.1f} s of sending); ",
            "nothing committed")  # fmt: skip
        r = replay(work, n, args.profile)
        say(f"replay: receivers listening {r['listening']:.2f} s after the start ({r['listening_cpu']:.2f} CPU s), ",
            f"a request acknowledged after {r['accepting']:.2f} s")  # fmt: skip
        say(f"replay: every span committed {r['wall']:.2f} s after the start ({r['cpu']:.2f} CPU s of the ",
            f"collector, imports included: {r['cpu'] / r['wall']:.2f} cores busy); ",
            f"peak RSS {r['rss']:.0f} MiB")  # fmt: skip
        say(f"WAL replay, start to every span committed: {r['rate']:,.0f} spans/s wall, ",
            f"{r['per_cpu']:,.0f} spans/s per collector CPU-second")  # fmt: skip
        after, after_cpu = r["wall"] - r["listening"], r["cpu"] - r["listening_cpu"]
        say(f"WAL replay, receivers open to every span committed: {n / after:,.0f} spans/s wall, ",
            f"{n / after_cpu:,.0f} spans/s per collector CPU-second ({after:.2f} s, ",
            f"{after_cpu:.2f} CPU s)")  # fmt: skip
        if live:
            say(f"ratio replay / live ingest: {r['rate'] / live['rate']:.2f} (wall), ",
                f"{r['per_cpu'] / live['per_cpu']:.2f} (per CPU-second)")  # fmt: skip
        check = exactly_once(work / "lake", ids)
    ok = check["rows"] == check["distinct"] == n and not check["missing"] and not check["foreign"]
    say(f"exactly once: {n:,} acknowledged, {check['rows']:,} rows, {check['distinct']:,} distinct span ids, ",
        f"{check['missing']} missing, {check['foreign']} not sent -- {'ok' if ok else 'FAILED'}")  # fmt: skip
    if args.profile:
        say(f"profile: {args.profile} (python -m pstats {args.profile}); the timings include the profiler's cost")
    figure = int(r["rate"])
    say(f"target WAL replay >= {TARGET} spans/s: {figure} spans/s -- {'met' if figure >= TARGET else 'NOT MET'}")
    if not ok:
        return 2
    return 0 if figure >= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
