"""Benchmark: live scoring, `tracevals score --follow`, in sessions scored per second, at two sizes, beside
offline `tracevals score` of the same lake in the same run.

    .venv/bin/python bench/live_scoring.py                          # 20,000 and 100,000 sessions
    .venv/bin/python bench/live_scoring.py --sizes 5000,20000 --timeout 120 --keep /tmp/live-bench

Per size, a lake is written with the lake's own writer (`LakeWriter.write_table`: a file per hour, atomically
renamed into place) from the sessions of bench/scoring.py (its order-support shapes: lookups, sends, 429s
retried well and blindly, an ambiguous delete, a hand-off, a loop, a duplicate send; every built-in
evaluator has work), spread over the last `--hours` hours, in arrival order (end time) and cut into files of
`--file-rows` rows as a collector rotating by size leaves them, so that sessions straddle files and hours.
The shape `crash` (no root, no end marker) is left out: live scoring waits `10 x --idle` before it gives
up on such a session, a wait by design that would be timed here as if it were work.

Then, timed:

  offline   `tracevals score --lake L --summary` on a copy of the lake: the command's wall time, start-up
            included (the baseline: the same evaluators, the same rows, one batch)
  live      a real `tracevals score --follow --format json` (stdout to a file), started on an empty lake;
            once it is following (imported, its views bound: start-up, paid once by a long-running
            process), the span files are renamed into its lake (a burst: the backlog a follower meets
            after a pause, or a collector fleet at full speed), and the clock runs from the first rename
            until every session has a score in L/scores (polled with DuckDB; the time taken is the newest
            score file's mtime). Its CPU seconds over the same interval come from /proc.

Printed: per size, sessions/s (wall) and sessions per CPU second for both; the per-session cost of the
larger size over that of the smaller (1.0 = linear); and the verdict on the larger size (the sustained
rate, the follower's fixed costs per poll spread over many sessions):

    target live scoring >= 10000 sessions/s: <figure> sessions/s -- met       (or -- NOT MET; exit 1)

The machine is shared: run it under `nice`, and read the CPU figures beside the wall ones (the load
average is printed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import synthetic as sessions  # noqa: E402  (bench/synthetic.py: the session shapes and their generator)

from tracevals.lake.schema import SPAN_SCHEMA  # noqa: E402
from tracevals.lake.writer import LakeWriter  # noqa: E402

TARGET = 10_000  # sessions/s
TRACEVALS = Path(sys.executable).with_name("tracevals")
SHAPES = [name for name in sessions.SHAPES if name != "crash"]


def write_lake(lake: Path, n: int, seed: int, file_rows: int, hours: float) -> int:
    """`n` sessions of bench/scoring.py's shapes (crash excepted) ending about now, in arrival order, written by
    the lake writer `file_rows` rows at a time; returns the spans written."""
    sessions.T0_MS = int(time.time() * 1000) - int(hours * 3_600_000)  # shape_rows reads it: sessions end by now
    spread = max(1, int(n * 24 / hours))  # shape_rows spreads `n_total` sessions over a day
    weights = [sessions.SHAPES[name][0] for name in SHAPES]
    counts = [int(n * w / sum(weights)) for w in weights]
    counts[0] += n - sum(counts)
    frames, first = [], 0
    for name, count in zip(SHAPES, counts, strict=True):
        frames.append(sessions.shape_rows(name, first, count, spread, seed))
        first += count
    table = pl.concat(frames, how="diagonal_relaxed").sort(["end_time", "span_id"]).to_arrow()
    del frames
    for f in SPAN_SCHEMA:
        if f.name not in table.column_names:
            table = table.append_column(f.name, pa.nulls(table.num_rows, f.type))
    table = table.select(SPAN_SCHEMA.names).cast(SPAN_SCHEMA)
    writer = LakeWriter(lake)
    for start in range(0, table.num_rows, file_rows):
        writer.write_table(table.slice(start, file_rows))
    return table.num_rows


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process (and its waited-for children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def scored_sessions(lake: Path) -> int:
    if not any((lake / "scores").glob("*.parquet")):
        return 0
    with duckdb.connect() as con:
        [(count,)] = con.execute(
            f"SELECT count(DISTINCT session_id) FROM read_parquet('{lake}/scores/*.parquet')"
        ).fetchall()
    return int(count)


@dataclass
class Timed:
    sessions: int  # scored
    wall_s: float
    cpu_s: float
    finished: bool = True

    @property
    def rate(self) -> float:
        return self.sessions / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_rate(self) -> float:
        return self.sessions / self.cpu_s if self.cpu_s > 0 else 0.0


def offline(lake: Path, n: int, timeout: float) -> Timed:
    started = time.perf_counter()
    before = os.times()
    done = subprocess.run(
        [str(TRACEVALS), "score", "--lake", str(lake), "--summary"], capture_output=True, text=True, timeout=timeout
    )
    wall = time.perf_counter() - started
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"offline tracevals score failed: {done.stderr[-2000:]}")
    return Timed(scored_sessions(lake), wall, after.children_user + after.children_system - before.children_user
                 - before.children_system)  # fmt: skip


def live(staging: Path, lake: Path, n: int, timeout: float, interval: float, idle: float) -> Timed:
    """Start `score --follow` on an empty lake, rename the staged span files into it, time until all n are scored."""
    (lake / "spans").mkdir(parents=True)
    out = (lake.parent / "follow.jsonl").open("w")
    err = (lake.parent / "follow.err").open("w+")
    args = [str(TRACEVALS), "score", "--lake", str(lake), "--follow", "--idle", str(idle),
            "--interval", str(interval), "--format", "json"]  # fmt: skip
    process = subprocess.Popen(args, stdout=out, stderr=err, text=True)
    try:
        deadline = time.monotonic() + 60
        while "following" not in (lake.parent / "follow.err").read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"tracevals score --follow did not start: {(lake.parent / 'follow.err').read_text()}")
            time.sleep(0.05)
        files = sorted(staging.glob("spans/date=*/hour=*/*.parquet"), key=lambda p: p.name)  # in writing order
        cpu0 = cpu_seconds(process.pid)
        t0 = time.time()
        for path in files:  # as a collector commits them: a rename into place
            target = lake / path.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(path, target)
        scored, finished = 0, False
        while time.time() - t0 < timeout:
            time.sleep(0.25)
            scored = scored_sessions(lake)
            if scored >= n:
                finished = True
                break
            if process.poll() is not None:
                raise SystemExit(f"tracevals score --follow exited: {(lake.parent / 'follow.err').read_text()[-2000:]}")
        cpu = cpu_seconds(process.pid) - cpu0
        newest = max((p.stat().st_mtime for p in (lake / "scores").glob("*.parquet")), default=time.time())
        wall = (newest if finished else time.time()) - t0
        return Timed(scored, wall, cpu, finished)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        out.close()
        err.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--sizes", default="20000,100000", help="sessions per lake, comma-separated (two)")
    parser.add_argument("--file-rows", type=int, default=100_000, help="rows per span file the writer is given")
    parser.add_argument("--hours", type=float, default=2.0, help="the sessions start over the last this many hours")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--interval", type=float, default=0.2, help="--follow --interval")
    parser.add_argument("--idle", type=float, default=5.0, help="--follow --idle")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up on a size after this many seconds")
    parser.add_argument("--keep", type=Path, help="work here and keep the lakes (default: a temporary directory)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    work = args.keep or Path(tempfile.mkdtemp(prefix="tracevals-live-bench-"))
    results: list[tuple[int, int, Timed, Timed]] = []
    load_before = os.getloadavg()[0]
    try:
        for n in sizes:
            root = work / f"{n}"
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            started = time.perf_counter()
            spans = write_lake(root / "staging", n, args.seed, args.file_rows, args.hours)
            files = len(list((root / "staging").glob("spans/*/*/*.parquet")))
            print(f"lake: {n:,} sessions, {spans:,} spans in {files} files, {time.perf_counter() - started:.1f}s",
                  file=sys.stderr, flush=True)  # fmt: skip
            shutil.copytree(root / "staging", root / "offline")
            base = offline(root / "offline", n, args.timeout)
            print(f"  offline: {base.sessions:,} sessions in {base.wall_s:.2f}s", file=sys.stderr, flush=True)
            shutil.rmtree(root / "offline")
            followed = live(root / "staging", root / "lake", n, args.timeout, args.interval, args.idle)
            print(f"  live: {followed.sessions:,} sessions in {followed.wall_s:.2f}s", file=sys.stderr, flush=True)
            results.append((n, spans, base, followed))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'sessions':>9} {'spans':>10}  {'mode':<32} {'scored':>8} {'wall s':>8} {'sessions/s':>11} "
          f"{'CPU s':>7} {'sessions/CPU s':>15}")  # fmt: skip
    for n, spans, base, followed in results:
        for mode, t in (("offline `tracevals score`", base), ("live `tracevals score --follow`", followed)):
            note = "" if t.finished else "  (timed out)"
            print(f"{n:>9,} {spans:>10,}  {mode:<32} {t.sessions:>8,} {t.wall_s:>8.2f} {t.rate:>11,.0f} "
                  f"{t.cpu_s:>7.2f} {t.cpu_rate:>15,.0f}{note}")  # fmt: skip
    for n, _, base, followed in results:
        print(f"{n:,} sessions: live / offline, sessions/s: {followed.rate / base.rate:.2f}")
    if len(results) >= 2:
        (n1, _, _, small), (n2, _, _, large) = results[0], results[-1]
        if small.sessions and large.sessions:
            ratio = (large.wall_s / large.sessions) / (small.wall_s / small.sessions)
            cpu_ratio = (large.cpu_s / large.sessions) / (small.cpu_s / small.sessions) if small.cpu_s else 0.0
            print(f"linearity: per-session cost at {n2:,} / at {n1:,} sessions: {ratio:.2f} wall, {cpu_ratio:.2f} CPU "
                  "(1.0 = linear; below 1, fixed costs spread thinner)")  # fmt: skip
    print(f"machine: {os.cpu_count()} cores, load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} "
          "at the end (other work slows wall, not CPU, time)")  # fmt: skip
    n, _, _, final = results[-1]
    figure = final.rate if final.finished else 0.0
    verdict = "met" if final.finished and figure >= TARGET else "NOT MET"
    print(f"target live scoring >= {TARGET} sessions/s: {figure:.0f} sessions/s -- {verdict}")
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    sys.exit(main())
