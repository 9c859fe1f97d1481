"""Ingest side by side: tracevals' collector and Arize Phoenix's OTLP endpoint, the same spans.

    .venv/bin/python bench/compare_ingest.py [--spans 102000] [--phoenix-spans 5100] [--runs 3] [--json FILE]

One load generator (this process) sends the same pre-encoded OTLP/HTTP protobuf requests (51 GenAI
sessions of 10 spans each per request, the SDK's batch size, 2 keep-alive connections, 429/503 waited
out) to each receiver, each a separate local process: `tracevals collect` (Parquet lake, rotation
max_age 1 s so that a reader sees rows within a second; the default is 30 s) and `phoenix serve`
(SQLite, its default store). Per run, from the first request:
  accepted   spans / seconds until the last request was acknowledged
  queryable  spans / seconds until a query returns every span (tracevals: DuckDB count over the lake's
             Parquet files; Phoenix: GraphQL `recordCount`), and the latency after the last accept.
Phoenix gets fewer spans (it stores far fewer per second; the figures are rates). The raw protobuf
decode floor of the same payloads (`bench/ingest.py`'s `decode_rate`) is measured in this process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    Figure,
    PeerUnavailable,
    Section,
    distribution_versions,
    free_port,
    last_lines,
    otlp_kv,
    peak_rss_mb,
    peer_python,
    post_all,
    start_collect,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ACCEPT_LIMIT_S = 20.0  # how long Phoenix's accept rate is measured on tracevals' volume
SESSIONS_PER_REQUEST = 51  # x 10 spans = 510, about the SDK's batch of 512
SPANS_PER_SESSION = 10
_ID_MARK = bytes.fromhex("9d1ce752b34f")  # stands for the request number inside every id
_TEXT_MARK = b"QqQqQqQqQqQq"  # the same, in session ids and call ids (12 hex digits)
T0_NS = 1_795_000_000 * 10**9  # 2026-11-18T...: every request carries the same times
# The sessions of one request cycle through these shapes: tool calls in order (the case expects the
# "refund" or the "status" list; see compare_scale.py)
SHAPES = [
    ("refund", ["lookup_order", "get_order", "refund_order", "send_message"]),
    ("status", ["lookup_order", "get_order", "get_order", "send_message"]),
    ("refund", ["get_order", "lookup_order", "refund_order", "send_message"]),
    ("refund", ["lookup_order", "get_order", "send_message", "send_message"]),
]
EXPECTED = {
    "refund": ["lookup_order", "get_order", "refund_order", "send_message"],
    "status": ["lookup_order", "get_order", "get_order", "send_message"],
}


def request_template(sessions: int = SESSIONS_PER_REQUEST) -> bytes:
    """One encoded request whose ids and session ids carry the marks that `payloads` replaces."""
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.extend([otlp_kv("service.name", "bench-agent"), otlp_kv("service.version", "1.0.0")])
    ss = rs.scope_spans.add()
    ss.scope.name = "tracevals.bench"
    mark = _TEXT_MARK.decode()
    for s in range(sessions):
        task, tools = SHAPES[s % len(SHAPES)]

        def span(
            i: int, name: str, attrs: list[tuple[str, object]], dur_ms: int, root: bool = False, *, s: int = s
        ) -> None:
            sp = ss.spans.add()
            sp.trace_id = _ID_MARK + s.to_bytes(2, "big") + b"\x01" * 8
            root_id = _ID_MARK + bytes([s, 0xF0])
            sp.span_id = root_id if root else _ID_MARK + bytes([s, i])
            if not root:
                sp.parent_span_id = root_id
            sp.name, sp.kind = name, 1 if root else 3
            sp.start_time_unix_nano = T0_NS + s * 1_000_000_000 + i * 20_000_000
            sp.end_time_unix_nano = sp.start_time_unix_nano + dur_ms * 1_000_000
            sid = f"sess-{mark}-{s:03d}"
            sp.attributes.extend(otlp_kv(k, v) for k, v in [("gen_ai.conversation.id", sid), *attrs])

        span(
            0,
            "invoke_agent support",
            [
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", "support"),
                ("gen_ai.provider.name", "openai"),
                ("tracevals.run.id", "bench"),
                ("tracevals.task.id", task),
                ("tracevals.attempt", 1),
                ("tracevals.variant", "baseline"),
                ("tracevals.session.end", True),
            ],
            200,
            root=True,
        )
        for k in range(5):  # chat, tool, chat, tool, ... chat
            asks = [f"call_{mark}_{s}_{2 * k + 2}"] if k < 4 else []
            span(
                2 * k + 1,
                "chat gpt-4o-mini",
                [
                    ("gen_ai.operation.name", "chat"),
                    ("gen_ai.provider.name", "openai"),
                    ("gen_ai.request.model", "gpt-4o-mini"),
                    ("gen_ai.response.model", "gpt-4o-mini-2024-07-18"),
                    ("gen_ai.usage.input_tokens", 400 + 37 * k),
                    ("gen_ai.usage.output_tokens", 20 + k),
                    ("gen_ai.response.id", f"chatcmpl-{mark}{s:03d}{k}"),
                    ("tracevals.tool_calls.ids", json.dumps(asks)),
                ],
                12,
            )
            if k < 4:
                tool = tools[k]
                span(
                    2 * k + 2,
                    f"execute_tool {tool}",
                    [
                        ("gen_ai.operation.name", "execute_tool"),
                        ("gen_ai.tool.name", tool),
                        ("gen_ai.tool.call.id", f"call_{mark}_{s}_{2 * k + 2}"),
                        ("gen_ai.tool.call.arguments", json.dumps({"order_id": f"ord_{mark}{s:03d}", "step": k})),
                        ("gen_ai.tool.call.result", '{"ok": true}'),
                        ("gen_ai.provider.name", "openai"),
                        ("tracevals.tool.effect", "write" if tool in ("refund_order", "send_message") else "read"),
                    ],
                    3,
                )
    data = request.SerializeToString()
    assert data.count(_ID_MARK) == sessions * (3 * SPANS_PER_SESSION - 1), "an id mark collides"
    return data


def payloads(count: int, first: int = 0, template: bytes | None = None) -> Iterator[bytes]:
    """`count` requests with fresh ids: request number `first`, `first + 1`, ... in place of the marks."""
    template = template or request_template()
    for n in range(first, first + count):
        yield template.replace(_ID_MARK, n.to_bytes(6, "big")).replace(_TEXT_MARK, b"%012x" % n)


# ---------------------------------------------------------------- tracevals


def start_collector(workdir: Path, max_age: str = "1s") -> tuple[subprocess.Popen[str], int]:
    return start_collect(workdir, {"path": "lake", "rotation": {"max_age": max_age}})


def lake_count(lake: Path) -> int:
    import duckdb

    if not any(lake.glob("spans/**/*.parquet")):
        return 0
    ((n,),) = duckdb.execute(f"select count(*) from read_parquet('{lake}/spans/**/*.parquet')").fetchall()
    return int(n)


def wait_until(count: callable, target: int, timeout: float, interval: float = 0.1) -> float:  # type: ignore[valid-type]
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if count() >= target:
            return time.perf_counter()
        time.sleep(interval)
    raise TimeoutError(f"not queryable after {timeout:.0f} s")


def run_tracevals(requests: int, first: int) -> dict[str, float]:
    data = list(payloads(requests, first))
    spans = requests * SESSIONS_PER_REQUEST * SPANS_PER_SESSION
    with tempfile.TemporaryDirectory(prefix="tracevals-cmp-") as tmp:
        proc, port = start_collector(Path(tmp))
        try:
            t0 = time.perf_counter()
            _, accept_s = post_all(port, data, senders=2)
            done = wait_until(lambda: lake_count(Path(tmp) / "lake"), spans, timeout=300)
            rss = peak_rss_mb(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
    return _rates(spans, accept_s, done - t0, rss)


def _rates(spans: int, accept_s: float, queryable_s: float, rss: float) -> dict[str, float]:
    return {
        "spans": spans,
        "accepted_per_s": spans / accept_s,
        "queryable_per_s": spans / queryable_s,
        "latency_s": max(0.0, queryable_s - accept_s),
        "peak_rss_mb": rss,
    }


# ---------------------------------------------------------------- Phoenix


class Phoenix:
    """`phoenix serve` on free loopback ports with a fresh SQLite working directory."""

    def __init__(self, python: Path, workdir: Path) -> None:
        self.port, grpc = free_port(), free_port()
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": str(workdir),
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(grpc),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        }
        self.log = (workdir / "phoenix.log").open("w")
        cmd = [str(python.parent / "phoenix"), "serve"]
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=workdir)
        self.workdir = workdir
        deadline = time.time() + 240
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise PeerUnavailable(f"phoenix serve exited {self.proc.returncode}: {last_lines(self._log())}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2).read()
                return
            except OSError:
                time.sleep(0.5)
        raise PeerUnavailable(f"phoenix serve did not answer in 240 s: {last_lines(self._log())}")

    def _log(self) -> str:
        self.log.flush()
        return (self.workdir / "phoenix.log").read_text(errors="replace")

    def span_count(self) -> int:
        query = json.dumps({"query": "{ projects { edges { node { recordCount } } } }"}).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/graphql", query, {"content-type": "application/json"}
        )
        data = json.loads(urllib.request.urlopen(req, timeout=30).read())
        return sum(e["node"]["recordCount"] for e in data["data"]["projects"]["edges"])

    def run(self, requests: int, first: int) -> dict[str, float]:
        data = list(payloads(requests, first))
        spans = requests * SESSIONS_PER_REQUEST * SPANS_PER_SESSION
        before = self.span_count()
        t0 = time.perf_counter()
        _, accept_s = post_all(self.port, data, senders=2)
        done = wait_until(lambda: self.span_count() - before, spans, timeout=900, interval=0.25)
        return _rates(spans, accept_s, done - t0, peak_rss_mb(self.proc.pid))

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


# ---------------------------------------------------------------- the comparison


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=102_000, help="spans per tracevals run")
    parser.add_argument("--phoenix-spans", type=int, default=5_100, help="spans per Phoenix run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the figures here (for run_all.py)")
    args = parser.parse_args(argv)
    per_request = SESSIONS_PER_REQUEST * SPANS_PER_SESSION
    ours_n, phoenix_n = max(1, args.spans // per_request), max(1, args.phoenix_spans // per_request)
    cmd = (
        f".venv/bin/python bench/compare_ingest.py --spans {ours_n * per_request} "
        f"--phoenix-spans {phoenix_n * per_request} --runs {args.runs}"
    )
    section = Section("ingest", "Ingest: tracevals collector vs Arize Phoenix (OTLP/HTTP protobuf)", cmd)

    import ingest as ours_bench  # bench/ingest.py: the decode floor

    template = request_template()
    floor = ours_bench.decode_rate(list(payloads(8, 10**9, template)), per_request)
    runs = [run_tracevals(ours_n, first=1_000 + i * ours_n) for i in range(args.runs)]
    print(f"tracevals runs: {runs}", file=sys.stderr)

    peer: list[dict[str, float]] = []
    peer_accept: list[float] = []
    accept_note = ""
    try:
        python = peer_python("phoenix")
        section.versions = distribution_versions(python, ["arize-phoenix"])
        workdir = Path(tempfile.mkdtemp(prefix="phoenix-cmp-"))
        try:
            phoenix = Phoenix(python, workdir)
            try:
                phoenix.run(1, first=900_000)  # warm-up: the first insert creates the project
                peer = [phoenix.run(phoenix_n, first=1_000_000 + i * phoenix_n) for i in range(args.runs)]
                # accepting is queueing: time it on as many spans as tracevals got (then stop, not wait)
                data = list(payloads(ours_n, first=2_000_000))
                taken, seconds = post_all(phoenix.port, data, senders=2, time_limit=ACCEPT_LIMIT_S)
                peer_accept = [taken * per_request / seconds]
                accept_note = (
                    f"Phoenix's accept rate: {taken * per_request:,} of {ours_n * per_request:,} spans "
                    f"acknowledged in {seconds:.1f} s"
                    + (
                        ""
                        if taken == ours_n
                        else f" (then it answered 503 until the {ACCEPT_LIMIT_S:.0f} s limit: its "
                        "in-memory queue was full, so past that point it accepts as fast as it stores)"
                    )
                )
            finally:
                phoenix.stop()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        print(f"phoenix runs: {peer}", file=sys.stderr)
    except (PeerUnavailable, RuntimeError, TimeoutError, OSError) as exc:
        section.errors.append(f"Arize Phoenix could not run: {exc}")

    def fig(name: str, key: str, unit: str, higher: bool = True) -> Figure:
        return Figure(
            name, unit, [r[key] for r in runs], higher, "arize-phoenix" if peer else None, [r[key] for r in peer]
        )

    section.figures = [
        Figure(
            f"spans accepted per second ({ours_n * per_request:,} spans, 2 senders)",
            "spans/s",
            [r["accepted_per_s"] for r in runs],
            True,
            "arize-phoenix" if peer_accept else None,
            peer_accept,
        ),
        fig("spans queryable per second (first send to all queryable)", "queryable_per_s", "spans/s"),
        fig("latency: last accept to all queryable", "latency_s", "s", higher=False),
        fig("receiver peak RSS", "peak_rss_mb", "MiB", higher=False),
        Figure("raw protobuf decode floor (FromString, one core, same payloads)", "spans/s", [floor]),
    ]
    section.notes += [
        f"tracevals: {ours_n * per_request:,} spans a run; Phoenix: {phoenix_n * per_request:,} spans a run "
        "(after a 1-request warm-up). Rates, so the sizes differ; every span is distinct (fresh ids).",
        "tracevals' collector acknowledges a request once it is in its fsynced write-ahead log; the lake's "
        "rotation max_age is 1 s here (the default, 30 s, bounds the latency at about 30 s instead).",
        "Phoenix acknowledges a request when it is queued in memory, then inserts into SQLite in the "
        "background: its accept rate is the queue's, its queryable rate the store's. Its accept rate is "
        f"measured once, sending {ours_n * per_request:,} spans (as many as a tracevals run) for at most "
        f"{ACCEPT_LIMIT_S:.0f} s after the queryable runs; Phoenix is then stopped without waiting for them "
        "to be stored.",
    ]
    if accept_note:
        section.notes.append(accept_note + ".")
    section.print()
    section.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
