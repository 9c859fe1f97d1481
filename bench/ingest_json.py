"""`tracevals ingest` of OTLP/JSON files, in spans per second per core, against the validating path and against
OTLP protobuf files of the same spans, all measured in the same run.

    .venv/bin/python bench/ingest_json.py [--spans 200000] [--spans-per-file 5000] [--adk-sessions 2000]
                                          [--runs 3] [--slow-runs 1]

Two workloads, each written once to files in a temporary folder:
- `genai`: the spans `bench/ingest.py` sends the collector (alternating chat and execute_tool spans, 10
  attributes each), as OTLP/JSON files (protobuf's JSON mapping: hex ids, int64s as strings, one line) and as
  OTLP protobuf files (`.pb`), `--spans-per-file` spans a file. The target is read on this one.
- `adk`: real Google ADK sessions (the ones `bench/compare_e2e.py` scores: `shared/otlp-corpus`, S2 and S5
  with fresh ids, 100 sessions an OTLP/JSON file, spans and log records), when the corpus is there.

Each measurement is one `tracevals ingest --lake LAKE FILES` child process, from start to exit (interpreter
start-up and imports included, the way a user runs it): spans/s per core = spans / the child's CPU seconds
(user + system, from the kernel's accounting of it, every thread counted). The fast path (the default) runs
`--runs` times, the validating path (`TRACEVALS_INGEST_FAST=0`, what `tracevals ingest` did before) and the
protobuf files `--slow-runs` times; medians. The same run also measures the start-up alone (one file of one
span) and prints the figures without it. The lakes written by the two JSON paths are checked to hold the same
rows (a digest of every row, by DuckDB). Exit 1 when the target is not met.

Two more lines say what bounds the fast path:
- its peak memory with twice the files (the same files again under other names) against once: what was read
  waits on disk until everything is checked and written, so the peak follows a batch of files, not the input;
- the floor of the design: the start-up, Arrow's JSON reader (the fast path's own call) and the lake's Parquet
  writer (its own call, over the rows the fast path wrote), measured in this process, the least of three runs:
  what no conversion code can go under, in CPU seconds and in spans/s per core, beside what the target needs.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from resource import RUSAGE_SELF, getrusage

sys.path.insert(0, str(Path(__file__).resolve().parent))

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from common import PROJECT_PYTHON, ROOT, last_lines, run_measured
from google.protobuf import json_format
from ingest import genai_request
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

TARGET = 100_000  # spans/s per core, OTLP/JSON
TARGET_RATIO = 0.5  # of the protobuf files' rate, same spans


@dataclass
class Run:
    cpu_s: float
    wall_s: float
    peak_mb: float


def ingest(files: list[Path], lake: Path, fast: bool = True) -> Run:
    """One `tracevals ingest` child over `files`: its CPU seconds (user + system), wall seconds, peak RSS (from
    `run_measured`: the child's own, not this process's)."""
    shutil.rmtree(lake, ignore_errors=True)
    env = {**os.environ, "TRACEVALS_INGEST_FAST": "1" if fast else "0"}
    cmd = [str(PROJECT_PYTHON), "-m", "tracevals", "ingest", "--lake", str(lake), "--format", "csv", *map(str, files)]
    done = run_measured(cmd, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"tracevals ingest failed: {last_lines(done.stderr)}")
    return Run(done.cpu_s, done.wall_s, done.peak_rss_mb)


def lake_digest(lake: Path) -> tuple[int, int, int]:
    """(spans, log records, a digest of every row): equal lakes give equal digests."""
    out = []
    for table in ("spans", "logs"):
        files = sorted(str(p) for p in (lake / table).rglob("*.parquet"))
        if not files:
            out.append((0, 0))
            continue
        ((rows, digest),) = duckdb.sql(
            f"SELECT count(*), coalesce(bit_xor(hash(t::VARCHAR)), 0) FROM read_parquet({files!r}) t"
        ).fetchall()
        out.append((int(rows), int(digest)))
    return out[0][0], out[1][0], out[0][1] ^ out[1][1]


def genai_json(payload: bytes) -> bytes:
    """An encoded request as OTLP/JSON: protobuf's JSON mapping (int64s as strings), ids in hex, one line."""
    doc = json_format.MessageToDict(ExportTraceServiceRequest.FromString(payload))
    for resource in doc["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(doc, separators=(",", ":")).encode()


def write_genai(folder: Path, spans: int, per_file: int) -> tuple[list[Path], list[Path]]:
    folder.mkdir(parents=True, exist_ok=True)
    json_files, pb_files = [], []
    for i, first in enumerate(range(0, spans, per_file)):
        payload = genai_request(min(per_file, spans - first), seed=1_000 + i)
        pb_files.append(folder / f"part-{i:05d}.pb")
        pb_files[-1].write_bytes(payload)
        json_files.append(folder / f"part-{i:05d}.json")
        json_files[-1].write_bytes(genai_json(payload))
    return json_files, pb_files


def _cpu() -> float:
    usage = getrusage(RUSAGE_SELF)  # every thread of this process
    return usage.ru_utime + usage.ru_stime


def design_floor(files: list[Path], lake: Path) -> tuple[float, float]:
    """CPU seconds, in this process, of the two steps of the fast path no conversion code can remove: Arrow's
    JSON reader over `files` (the fast path's own call, `GROUP_BYTES` of documents at a time), and the lake's
    Parquet writer over the span rows the fast path wrote into `lake` (the writer's own call); the least of
    three runs of each."""
    sys.path.insert(0, str(ROOT))
    from tracevals.collector.conversion.json_check import GROUP_BYTES, _parse
    from tracevals.lake.schema import SPAN_SCHEMA
    from tracevals.lake.writer import write_stream

    texts = [path.read_bytes().rstrip() for path in files]
    groups: list[list[bytes]] = [[]]
    for text in texts:
        if groups[-1] and sum(map(len, groups[-1])) + len(text) > GROUP_BYTES:
            groups.append([])
        groups[-1].append(text)
    rows = pq.read_table(sorted(lake.joinpath("spans").rglob("*.parquet")), schema=SPAN_SCHEMA)
    parse, write = [], []
    for _ in range(3):  # a floor: the least of three (the first call pays warm-ups)
        started = _cpu()
        for group in groups:
            _parse(b"\n".join(group), len(group), max(map(len, group)))
        parse.append(_cpu() - started)
        started = _cpu()
        write_stream([rows], SPAN_SCHEMA, pa.BufferOutputStream())
        write.append(_cpu() - started)
    return min(parse), min(write)


def median_run(files: list[Path], lake: Path, runs: int, fast: bool = True) -> tuple[Run, list[Run]]:
    done = [ingest(files, lake, fast) for _ in range(runs)]
    by_cpu = sorted(done, key=lambda r: r.cpu_s)
    return by_cpu[len(by_cpu) // 2], done


def rate(spans: int, run: Run, startup: float = 0.0) -> float:
    return spans / max(run.cpu_s - startup, 1e-9)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=200_000, help="GenAI spans (the target's workload)")
    parser.add_argument("--spans-per-file", type=int, default=5_000)
    parser.add_argument("--adk-sessions", type=int, default=2_000, help="ADK sessions (0: skip)")
    parser.add_argument("--runs", type=int, default=3, help="runs of the fast path (median)")
    parser.add_argument("--slow-runs", type=int, default=1, help="runs of the validating path and of protobuf")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="tracevals-ingest-json-"))
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    try:
        json_files, pb_files = write_genai(work / "genai", args.spans, args.spans_per_file)
        size = sum(p.stat().st_size for p in json_files)
        print(
            f"genai: {args.spans:,} spans in {len(json_files)} OTLP/JSON files ({size / args.spans:,.0f} bytes a span) "
            f"and as many .pb files"
        )
        tiny = work / "tiny.json"
        tiny.write_bytes(genai_json(genai_request(1, seed=7)))
        startup = statistics.median(ingest([tiny], work / "lake-tiny").cpu_s for _ in range(3))
        print(f"start-up (one file of one span): {startup:.2f} CPU s")

        fast, fast_runs = median_run(json_files, work / "lake-fast", args.runs)
        fast_digest = lake_digest(work / "lake-fast")
        slow, _ = median_run(json_files, work / "lake-slow", args.slow_runs, fast=False)
        slow_digest = lake_digest(work / "lake-slow")
        proto, _ = median_run(pb_files, work / "lake-pb", args.slow_runs)
        proto_digest = lake_digest(work / "lake-pb")
        same = fast_digest == slow_digest
        per_core = rate(args.spans, fast)
        print(
            f"genai OTLP/JSON, fast path: {per_core:,.0f} spans/s per core ({args.spans / fast.wall_s:,.0f} spans/s "
            f"wall, peak {fast.peak_mb:,.0f} MiB; {rate(args.spans, fast, startup):,.0f} spans/s per core without "
            f"start-up; CPU s of the runs: {', '.join(f'{r.cpu_s:.2f}' for r in fast_runs)})"
        )
        print(
            f"genai OTLP/JSON, validating path: {rate(args.spans, slow):,.0f} spans/s per core "
            f"({rate(args.spans, slow, startup):,.0f} without start-up, peak {slow.peak_mb:,.0f} MiB)"
        )
        print(
            f"genai OTLP protobuf files: {rate(args.spans, proto):,.0f} spans/s per core "
            f"({rate(args.spans, proto, startup):,.0f} without start-up, peak {proto.peak_mb:,.0f} MiB)"
        )
        again = work / "genai-twice"  # the same files under other names: twice the input, the same batches
        again.mkdir()
        for path in json_files:
            (again / f"again-{path.name}").symlink_to(path)
        twice, _ = median_run([*json_files, *sorted(again.iterdir())], work / "lake-twice", 1)
        print(
            f"genai OTLP/JSON, fast path, twice the files: peak {twice.peak_mb:,.0f} MiB against {fast.peak_mb:,.0f} "
            f"MiB once ({twice.peak_mb / fast.peak_mb:.2f}x; what was read waits on disk until it is written)"
        )
        parse_s, write_s = design_floor(json_files, work / "lake-fast")
        floor_s = startup + parse_s + write_s
        print(
            f"floor of this design, same spans: start-up {startup:.2f} + Arrow's JSON reader {parse_s:.2f} + the "
            f"lake's Parquet write {write_s:.2f} = {floor_s:.2f} CPU s, {args.spans / floor_s:,.0f} spans/s per core "
            f"(the target needs <= {args.spans / TARGET:.2f} CPU s; the fast path took {fast.cpu_s:.2f})"
        )
        ratio_slow = rate(args.spans, fast) / rate(args.spans, slow)
        ratio_proto = rate(args.spans, fast) / rate(args.spans, proto)
        print(f"fast / validating path: {ratio_slow:.1f}x; fast / protobuf files: {ratio_proto:.2f}x")
        print(
            f"lakes: fast {fast_digest[0]:,} spans, validating {slow_digest[0]:,}, protobuf {proto_digest[0]:,}; "
            f"fast and validating rows {'the same' if same else 'DIFFER'}"
        )
        if args.adk_sessions:
            try:
                from compare_e2e import CORPUS, SESSIONS_PER_FILE, write_sessions
            except ImportError as exc:  # pragma: no cover
                print(f"adk: skipped ({exc})")
            else:
                if not CORPUS.is_dir():
                    print(f"adk: skipped (no corpus at {CORPUS})")
                else:
                    adk_files = write_sessions(work / "adk", args.adk_sessions)
                    adk_fast, _ = median_run(adk_files, work / "lake-adk-fast", args.runs)
                    spans, logs, digest = lake_digest(work / "lake-adk-fast")
                    adk_slow, _ = median_run(adk_files, work / "lake-adk-slow", args.slow_runs, fast=False)
                    adk_same = (spans, logs, digest) == lake_digest(work / "lake-adk-slow")
                    same = same and adk_same
                    print(
                        f"adk OTLP/JSON ({args.adk_sessions:,} sessions, {SESSIONS_PER_FILE} a file: {spans:,} spans, "
                        f"{logs:,} log records), fast path: {rate(spans, adk_fast):,.0f} spans/s per core "
                        f"({rate(spans, adk_fast, startup):,.0f} without start-up; "
                        f"{args.adk_sessions / adk_fast.wall_s:,.0f} sessions/s wall, peak {adk_fast.peak_mb:,.0f} MiB)"
                    )
                    print(
                        f"adk OTLP/JSON, validating path: {rate(spans, adk_slow):,.0f} spans/s per core "
                        f"({rate(spans, adk_fast) / rate(spans, adk_slow):.1f}x); rows "
                        f"{'the same' if adk_same else 'DIFFER'}"
                    )
        met = per_core >= TARGET and same
        print(
            f"target ingest OTLP/JSON >= {TARGET} spans/s per core: {per_core:,.0f} spans/s per core -- "
            f"{'met' if met else 'NOT MET'}"
        )
        print(
            f"target ingest OTLP/JSON >= {TARGET_RATIO}x the protobuf files' rate: {ratio_proto:.2f}x -- "
            f"{'met' if ratio_proto >= TARGET_RATIO else 'NOT MET'}"
        )
        print(f"load average at end: {os.getloadavg()[0]:.2f}")
        return 0 if met and ratio_proto >= TARGET_RATIO else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
