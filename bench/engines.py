"""Benchmark: the nightly job in one process, on Ray Data and on Spark, over the same lake, with the same rows.

    .venv/bin/python bench/engines.py                          # ~10^6 spans; local, Ray, Spark; 1 and 2 workers
    .venv/bin/python bench/engines.py --spans 200000 --engines local,ray --workers 2

The lake is bench/scoring.py's (nine session shapes with their task cases, about 7.5 spans a session,
hive partitions over one day). Each configuration runs as users run it, a process of its own:
`tracevals score --lake L --tasks T --config C --summary --engine E --workers W`, and is measured from
outside: wall time; CPU seconds of its whole process tree (the command, its worker processes, and for
Ray its GCS, raylet and workers: /proc sampled every 0.5 s, each process's last utime + stime, or the
kernel's wait4 total of the reaped tree if larger); peak memory, the largest sum of the tree's PSS
(shared pages, such as Ray's object store, counted once in proportion). The scores each run wrote to
`scores/` are compared with the first run's, every column but `scored_at`.

On 2 cores an engine costs more than one process (start-up, a shuffle through the object store, the
views bound again in each worker): this measures that cost, and checks that the rows are the same.

Ray is the project's `ray` extra (in the lock). Spark is not in the project's environment: its runs get
pyspark from bench/.venvs/spark (bench/peers/spark.txt, installed on first use, ~650 MB) on PYTHONPATH
and need `java` (17) on PATH; without them the Spark lines say why they were not measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import polars as pl
from common import PROJECT_PYTHON, ROOT, Child, Figure, PeerUnavailable, Section
from scoring import CONFIG, cases, write_lake
from spark_path import spark_site_packages

COMPARED = [
    "trace_id", "session_id", "run_id", "task_id", "attempt", "variant", "evaluator", "evaluator_version", "passed",
    "score", "reason", "details",
]  # fmt: skip
SPANS_PER_SESSION = 7.5  # bench/scoring.py's shapes, about
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def _processes() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds so far) of every process on the machine."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                text = fh.read()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        found[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK)
    return found


def _pss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


@dataclass
class Measured:
    wall: float
    cpu: float
    peak_mib: float
    processes: int
    returncode: int
    stdout: str
    stderr: str


def run_tree(cmd: list[str], env: dict[str, str]) -> Measured:
    """Run `cmd`; its wall time, the CPU seconds and peak PSS of its process tree (module docstring)."""
    started = time.perf_counter()
    child = Child(cmd, ROOT, env)
    proc = child.proc
    cpu: dict[int, float] = {}
    peak = [0.0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            table = _processes()
            children: dict[int, list[int]] = {}
            for pid, (parent, _) in table.items():
                children.setdefault(parent, []).append(pid)
            tree, todo = [], [proc.pid]
            while todo:
                pid = todo.pop()
                tree.append(pid)
                todo += children.get(pid, [])
            for pid in tree:
                if pid in table:
                    cpu[pid] = max(cpu.get(pid, 0.0), table[pid][1])
            peak[0] = max(peak[0], sum(_pss_mib(pid) for pid in tree))
            done.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    reaped = usage.ru_utime + usage.ru_stime
    total = max(reaped, sum(cpu.values()))
    code = os.waitstatus_to_exitcode(status)
    return Measured(wall, total, peak[0], len(cpu), code, *child.output())


def _engine_env(engine: str, env: dict[str, str]) -> dict[str, str]:
    """The environment of an engine's runs: Spark's adds bench/.venvs/spark's site-packages (pyspark, py4j;
    bench/peers/spark.txt) to PYTHONPATH, and needs `java` on PATH."""
    if engine != "spark":
        return env
    if shutil.which("java") is None:
        raise PeerUnavailable("spark: no `java` on PATH (Spark 4 needs Java 17)")
    paths = [spark_site_packages(), *filter(None, [env.get("PYTHONPATH")])]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


def _rows(directory: Path) -> pl.DataFrame:
    return pl.read_parquet(str(directory / "*.parquet")).select(COMPARED).sort(COMPARED, nulls_last=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--spans", type=int, default=1_000_000, help="about this many spans in the lake")
    parser.add_argument("--engines", default="local,ray,spark", help="comma-separated: local, ray, spark")
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="write the lake here and keep it")
    parser.add_argument("--json", type=Path, help="write the figures as a bench section (run_all.py)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="tracevals-engines-"))
    lake = args.keep or work / "lake"
    if lake.exists():
        shutil.rmtree(lake)
    lake.mkdir(parents=True)
    results: list[tuple[str, int, Measured, str]] = []
    unavailable: list[tuple[str, str]] = []
    try:
        started = time.perf_counter()
        sessions = round(args.spans / SPANS_PER_SESSION)
        spans = write_lake(lake, sessions, args.seed)
        print(f"lake: {sessions:,} sessions, {spans:,} spans in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        tasks = work / "cases.jsonl"
        tasks.write_text("".join(json.dumps(c.raw) + "\n" for c in cases()))
        config = work / "scoring.json"
        config.write_text(json.dumps(CONFIG))
        env = {**os.environ, "RAY_DEDUP_LOGS": "0"}
        env.pop("RAY_ADDRESS", None)
        reference: pl.DataFrame | None = None
        for engine in args.engines.split(","):
            try:
                engine_env = _engine_env(engine, env)
            except PeerUnavailable as why:
                print(f"{engine}: not measured: {why}", file=sys.stderr)
                unavailable.append((engine, str(why)))
                continue
            for workers in (int(w) for w in args.workers.split(",")):
                cmd = [str(PROJECT_PYTHON), "-m", "tracevals", "score", "--lake", str(lake), "--tasks", str(tasks)]
                cmd += ["--config", str(config), "--summary", "--engine", engine, "--workers", str(workers)]
                print(f"running {engine} with {workers} workers ...", file=sys.stderr, flush=True)
                measured = run_tree(cmd, engine_env)
                if measured.returncode != 0:
                    print(f"{engine} {workers}: exit {measured.returncode}: {measured.stderr[-800:]}", file=sys.stderr)
                    results.append((engine, workers, measured, "failed"))
                    continue
                written = work / f"scores-{engine}-{workers}"
                shutil.move(str(lake / "scores"), written)
                got = _rows(written)
                if reference is None:
                    reference, same = got, f"reference ({got.height:,} rows)"
                else:
                    same = "yes" if got.equals(reference) else f"NO ({got.height:,} rows against {reference.height:,})"
                shutil.rmtree(written)
                results.append((engine, workers, measured, same))
                print(f"  {engine} {workers}: {measured.wall:.1f} s wall, {measured.cpu:.1f} CPU s, "
                      f"{measured.peak_mib:.0f} MiB, scores: {same}", file=sys.stderr, flush=True)  # fmt: skip
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'engine':<8} {'workers':>7} {'wall s':>8} {'CPU s':>8} {'peak MiB':>9} {'sessions/s':>11} "
          f"{'processes':>9}  scores identical")  # fmt: skip
    for engine, workers, m, same in results:
        rate = sessions / m.wall if m.returncode == 0 else 0.0
        print(f"{engine:<8} {workers:>7} {m.wall:>8.1f} {m.cpu:>8.1f} {m.peak_mib:>9.0f} {rate:>11,.0f} "
              f"{m.processes:>9}  {same}")  # fmt: skip
    base = next((m for e, w, m, _ in results if e == "local" and w == 1 and m.returncode == 0), None)
    figures = []
    for engine, workers, m, _ in results:
        if m.returncode != 0:
            continue
        label = f"{engine}, {workers} workers"
        if base is not None and (engine, workers) != ("local", 1):
            print(
                f"{label}: {m.cpu / base.cpu:.1f}x the CPU of local with 1 worker, {m.wall / base.wall:.1f}x its wall"
            )
        figures.append(
            Figure(f"nightly job, {label}, {spans:,} spans (sessions/s wall)", "sessions/s", [sessions / m.wall])
        )
        figures.append(Figure(f"nightly job, {label} (CPU s, process tree)", "s", [m.cpu], higher_is_better=False))
    for engine, why in unavailable:
        print(f"{engine}: not measured ({why})")
    identical = all(same != "failed" and not same.startswith("NO") for *_, same in results)
    print(f"scores identical across engines: {'yes' if identical else 'NO'}")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")
    if args.json:
        command = " ".join([".venv/bin/python", "bench/engines.py", *(argv if argv is not None else sys.argv[1:])])
        Section("engines", "The nightly job on Ray Data beside one process", command, figures).write(args.json)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
