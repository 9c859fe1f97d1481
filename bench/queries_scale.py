"""The views at scale: a synthetic lake of GenAI-shaped spans, rebuilt into trajectories two ways.

    .venv/bin/python bench/queries_scale.py [--spans 10000000] [--threads 2] [--memory-limit 6GB]

Builds (or, with --reuse, reuses) `--out`/lake: ten spans per session, one trace per session, in the lake's
real format (pyarrow, `SPAN_SCHEMA`, `date=/hour=` partitions, the lake writer's atomic write; one file an
hour, or --files-per-hour, e.g. 120 as a collector rotating every 30 s leaves them). A session:
an `invoke_agent` root with the harness keys, four `chat` calls, four `execute_tool` calls (1 session in
16 retries a 429, 1 in 128 asks for a tool that never runs: a gap), a `session.end` marker; content
capture off, tracevals.tool_calls.ids / .names and argument hashes on. Then it times, in one process:
  1. every trajectory through the views: written a group of hours at a time (`export_view`, about 10^6
     spans a group, --threads worker processes of one DuckDB thread each), then with one query
     (open_lake(materialize=True), COPY trajectories TO Parquet, --threads DuckDB threads)
  2. one session's lookup (`session_lookup`), on that snapshot and on a fresh connection; then, on a copy
     of the lake compacted by `tracevals compact` (one file an hour, sorted by session), with the
     compaction's time and peak RSS: 20 sessions looked up on the lake and on the copy in turn (`paired_*`),
     and the export of 1 again (--skip-compact leaves this out)
  3. the same reconstruction done naively in Python over the same rows
with peak RSS after the export, the one query and 3 (memory_limit bounds the one query), into
`--out`/queries_scale.json. Targets: 1 <= 20 s on 2 cores, 2 <= 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale_lake import LAKE_LAYOUT, SPANS_PER_SESSION, build_lake, naive_trajectories, session_name  # noqa: E402

from tracevals.queries import open_lake, session_lookup  # noqa: E402
from tracevals.queries.export import export_view  # noqa: E402


def _rss_mb() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # Linux: KiB


def _since(started: float, scale: float = 1.0) -> float:
    return round((time.perf_counter() - started) * scale, 2)


def _lookup_ms(con: Any, session: str, name: str) -> dict[str, Any]:
    """The first and the best of three lookups of one session's trajectories, in milliseconds."""
    times, rows = [], 0
    for _ in range(3):
        started = time.perf_counter()
        rows = session_lookup(con, session).num_rows
        times.append(_since(started, 1000))
    return {f"lookup_{name}_first_ms": times[0], f"lookup_{name}_best_ms": min(times), "lookup_rows": rows}


def _lookups_ms(
    lake: Path, sessions: int, limits: dict[str, Any], count: int = 20, prefix: str = "lookups_open_connection"
) -> dict[str, Any]:
    """`count` different sessions looked up one after another on one open connection (as a UI or an API
    serving lookups would): the first (cold: nothing of the lake read yet), the median, the 90th percentile
    and the slowest of the others, in milliseconds."""
    con = open_lake(lake, **limits)
    times = []
    for i in range(count):
        started = time.perf_counter()
        rows = session_lookup(con, session_name((i * 7_919 + 1) * sessions // (count * 7_919 + 1))).num_rows
        times.append(_since(started, 1000))
        assert rows == 1, f"a session is one trace here, got {rows} rows"
    con.close()
    return {f"{prefix}_first_ms": times[0], **_spread_ms(times[1:], prefix), f"{prefix}_count": count}


def _spread_ms(times: list[float], prefix: str) -> dict[str, float]:
    """The median, 90th percentile and slowest of `times`, under `prefix`."""
    rest = sorted(times)
    return {
        f"{prefix}_median_ms": rest[len(rest) // 2],
        f"{prefix}_p90_ms": rest[int(len(rest) * 0.9)],
        f"{prefix}_max_ms": rest[-1],
    }


def _paired_lookups_ms(lake: Path, compacted: Path, sessions: int, limits: dict[str, Any], count: int = 20) -> dict:
    """The same `count` sessions looked up on the lake as written and on its compacted copy, one after the
    other (an open connection to each), so that both series see the same moment of a noisy machine: the
    median, 90th percentile and slowest of each, first lookups left out, in milliseconds."""
    cons = {"original": open_lake(lake, **limits), "compacted": open_lake(compacted, **limits)}
    times: dict[str, list[float]] = {name: [] for name in cons}
    for i in range(count + 1):
        session = session_name((i * 7_919 + 1) * sessions // ((count + 1) * 7_919 + 1))
        for name, con in cons.items():
            started = time.perf_counter()
            rows = session_lookup(con, session).num_rows
            times[name].append(_since(started, 1000))
            assert rows == 1, f"a session is one trace here, got {rows} rows"
    results: dict[str, Any] = {}
    for name, con in cons.items():
        con.close()
        results.update(_spread_ms(times[name][1:], f"paired_{name}_lookups"))
    return results


def _compacted(lake: Path, out: Path, sessions: int, threads: int, memory_limit: str) -> dict[str, Any]:
    """A copy of the lake compacted (`tracevals compact`, in a process of its own for its peak RSS), then
    the lookups and the export again on it."""
    copy = out / "compacted"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(lake, copy)
    started = time.perf_counter()
    # its own process, which reports its peak RSS (VmHWM: the rusage of a child counts what it forked with)
    code = (
        "import json, sys; from tracevals.lake.compact import compact; "
        "r = compact(sys.argv[1], min_age_s=0, retention_s=0); "
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]; "
        "print(json.dumps([r.files_in, r.files_out, int(hwm) // 1024]))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(copy)], capture_output=True, text=True, cwd=ROOT, check=True)
    files_in, files_out, peak_mb = json.loads(done.stdout)
    results: dict[str, Any] = {
        "compact_s": _since(started),
        "compact_files_in": files_in,
        "compact_files_out": files_out,
        "compact_peak_rss_mb": peak_mb,
        "compacted_lake_mb": round(sum(f.stat().st_size for f in copy.rglob("*.parquet")) / 1e6, 1),
    }
    results.update(_paired_lookups_ms(lake, copy, sessions, {"memory_limit": memory_limit, "threads": threads}))
    exported = out / "trajectories_compacted"
    shutil.rmtree(exported, ignore_errors=True)
    started = time.perf_counter()
    export = export_view(copy, "trajectories", exported, workers=threads, memory_limit=memory_limit)
    results["compacted_export_all_trajectories_s"] = _since(started)
    results["compacted_export_trajectories"] = export.rows
    shutil.rmtree(exported, ignore_errors=True)
    shutil.rmtree(copy, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=10_000_000, help="spans in the synthetic lake (10 per session)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "queries_scale", help="lake and results")
    parser.add_argument("--threads", type=int, default=2, help="DuckDB threads (and export_view workers)")
    parser.add_argument("--memory-limit", default="6GB", help="DuckDB memory_limit")
    parser.add_argument("--reuse", action="store_true", help="reuse the lake of an earlier run of the same size")
    parser.add_argument("--skip-naive", action="store_true", help="leave out the pure-Python reconstruction")
    parser.add_argument("--snapshot-file", action="store_true", help="snapshot in a DuckDB file instead of memory")
    parser.add_argument(
        "--files-per-hour", type=int, default=1, help="files an hour holds (120: a collector's 30 s rotations)"
    )
    parser.add_argument("--skip-compact", action="store_true", help="no lookups and export on a compacted copy")
    args = parser.parse_args(argv)
    lake, marker = args.out / "lake", args.out / "lake.spans"
    results: dict[str, Any] = {"spans": args.spans, "threads": args.threads, "memory_limit": args.memory_limit}
    results["files_per_hour"] = args.files_per_hour
    args.out.mkdir(parents=True, exist_ok=True)
    layout = f"{args.spans} layout {LAKE_LAYOUT}" + (f" files {args.files_per_hour}" if args.files_per_hour > 1 else "")
    if not (args.reuse and marker.exists() and marker.read_text() == layout):
        started = time.perf_counter()
        build_lake(lake, args.spans, args.files_per_hour)
        marker.write_text(layout)
        results["build_s"] = _since(started)
    results["lake_mb"] = round(sum(f.stat().st_size for f in lake.rglob("*.parquet")) / 1e6, 1)
    results["load_average_1m"] = round(os.getloadavg()[0], 2)
    limits = {"memory_limit": args.memory_limit, "threads": args.threads}

    # 1. every trajectory through the views, a group of hours at a time (export_view): memory follows the group
    exported = args.out / "trajectories"
    shutil.rmtree(exported, ignore_errors=True)
    started = time.perf_counter()
    export = export_view(lake, "trajectories", exported, workers=args.threads, memory_limit=args.memory_limit)
    results["export_all_trajectories_s"] = _since(started)
    results["export_trajectories"] = export.rows
    results["export_groups"] = export.groups
    results["export_crossing_traces"] = export.crossing_traces
    results["export_workers"] = args.threads
    results["export_peak_rss_mb"] = _rss_mb()  # this process
    # the largest worker (each holds one group at a time): ru_maxrss of the finished children
    results["export_worker_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    _report(args.out, results)

    # and with one query over the whole lake (memory bounded by memory_limit)
    snapshot, output = args.out / "snapshot.duckdb", args.out / "trajectories.parquet"
    snapshot.unlink(missing_ok=True)
    started = time.perf_counter()
    con = open_lake(lake, **limits, materialize=True, snapshot_path=snapshot if args.snapshot_file else None)
    results["views_open_s"] = _since(started)
    copy_started = time.perf_counter()
    con.execute(f"COPY (SELECT * FROM trajectories) TO '{output}' (FORMAT parquet)")
    results["views_copy_s"] = _since(copy_started)
    results["views_all_trajectories_s"] = _since(started)
    results["views_trajectories"] = pq.ParquetFile(output).metadata.num_rows
    results["views_gaps"] = sum(pq.read_table(output, columns=["gap_count"]).column("gap_count").to_pylist())
    results["views_peak_rss_mb"] = _rss_mb()
    _report(args.out, results)

    # 2. one session: on that snapshot, and on a fresh connection that reads only what the lookup needs
    session = session_name(args.spans // SPANS_PER_SESSION // 2)
    results.update(_lookup_ms(con, session, "snapshot"))
    con.close()
    snapshot.unlink(missing_ok=True)
    results.update(_lookup_ms(open_lake(lake, **limits), session, "fresh"))
    results.update(_lookups_ms(lake, args.spans // SPANS_PER_SESSION, limits))

    # 2b. the lookups (and the export) again after `tracevals compact`: one file an hour, sorted by session
    if not args.skip_compact:
        results.update(_compacted(lake, args.out, args.spans // SPANS_PER_SESSION, args.threads, args.memory_limit))
        _report(args.out, results)

    # 3. the same reconstruction in plain Python
    if not args.skip_naive:
        started = time.perf_counter()
        naive = naive_trajectories(lake)
        results["naive_python_s"] = _since(started)
        results["naive_trajectories"] = len(naive)
        results["naive_gaps"] = sum(t["gap_count"] for t in naive.values())
        results["peak_rss_mb_after_naive"] = _rss_mb()
    for key in ("export_all_trajectories_s", "views_all_trajectories_s", "naive_python_s"):
        if key in results:
            results[key.replace("_s", "_spans_per_s")] = round(args.spans / max(results[key], 1e-9))
    _report(args.out, results)
    return 0


def _report(out: Path, results: dict[str, Any]) -> None:
    """Print (and save) the figures so far: a long run that dies late keeps what it measured."""
    (out / "queries_scale.json").write_text(json.dumps(results, indent=1))
    print("\n".join(f"{key:34s} {value}" for key, value in results.items()) + "\n", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
