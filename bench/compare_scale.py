"""The scale curve: ingest, the nightly scoring job, and where its time goes, at 10^5, 10^6 and 10^7 spans.

    .venv/bin/python bench/compare_scale.py [--sizes 100000,1000000,10000000] [--workers 2] [--deadline EPOCH]
        [--identical-spans 1000000] [--baseline REV] [--json FILE]

For each size, each phase runs in its own process (or process tree), so that its memory is its own:
  ingest    the OTLP/HTTP load generator of compare_ingest.py (51 ten-span GenAI sessions per request,
            fresh ids) into a `tracevals collect` process, until a query returns every span; spans/s to
            queryable and the collector's peak RSS. Skipped above --ingest-max or when its projected time
            (linear from the size before) would end after --deadline; the results then give the projection.
  build     a lake of the same size written directly by bench/scoring.py's vectorised generator (nine
            session shapes of an order-support agent, ~7.5 spans each, with their task cases, a scoring
            config with budgets): not a figure, the input of the next phases. Then `tracevals compact
            --min-age 0 --retention 0` (every hour closed, as the hourly compaction leaves a day: one file
            an hour, and its derived tables), timed as a figure of its own.
  floor     one plain-DuckDB GROUP BY per session with the views' session key, one thread, a process of
            its own (issue 38's floor): CPU seconds.
  nightly   the nightly job as a user runs it: `tracevals score --lake L --tasks cases.jsonl --config
            scoring.json --summary --workers N` (rebuild, every built-in evaluator, scores written to
            L/scores/), a group of whole sessions at a time (`queries.selection.plan_groups`). Sessions/s
            is sessions over the command's wall time (start-up included); peak memory is the largest sum,
            sampled every 50 ms, of the proportional set sizes (PSS: a shared library page counted once)
            of the command and its worker processes, next to the largest single process's RSS; CPU seconds
            (user + system, the workers included). At --floor-spans the job runs again on one worker:
            its CPU seconds against the floor's are the ratio of issue 38's first target.
  breakdown where the time goes, on one process with one DuckDB and one Polars thread (as a worker):
            per group of the same plan, `load_batch` rebuilds each chunk's trajectories through the views
            into frames (the rebuild figure), `score_batch` scores them with trajectory_match and again
            with every built-in evaluator, and the rows are written; each step summed over the chunks.
            Run up to --breakdown-max spans.
Then, at --identical-spans (a size of --sizes), the same lake is scored again by the tree of --baseline
(a `git worktree` of that commit, first on PYTHONPATH, with its own `tracevals score`) and the two
`scores/` tables are compared row for row, every column but `scored_at` (the time of scoring):
`scores identical: yes (N rows)`, or the rows that differ, led by where they differ per evaluator: the
(trace, evaluator) verdicts (`passed`, `score`) the same, those that differ, the evaluators only one side
has, the other columns that differ (a rule changed on purpose since --baseline shows there by name). The
targets are stated last, one line each.

A size whose phases are projected (linearly, from the size before) to end after --deadline, or to need
more than 80% of the available memory, is not run, and the results say so with the projection.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PROJECT_PYTHON, ROOT, Child, Figure, Section, last_lines, run_measured

# The floor (issue 38): one plain-DuckDB GROUP BY per session, with the views' session key (a trace's
# session id, else the trace itself), on one thread, in a process of its own: its CPU seconds.
FLOOR = """
import duckdb
con = duckdb.connect()
con.execute("SET threads = 1")
con.execute(
    "WITH t AS (SELECT trace_id, coalesce(max(session_id), trace_id) AS sid, count(*) AS n, min(start_time) AS s, "
    "max(end_time) AS e, sum(input_tokens) AS i, sum(output_tokens) AS o FROM read_parquet('{files}') "
    "GROUP BY trace_id) "
    "SELECT sid, sum(n), min(s), max(e), sum(i), sum(o) FROM t GROUP BY sid"
).fetchall()
"""
TARGET_FLOOR_RATIO = 3.0  # issue 38: the nightly job at 10^6 spans, one worker, <= 3x the floor (CPU seconds)
TARGET_ONE_WORKER_MIB = 600

SPANS_PER_SESSION = 7.49  # bench/scoring.py's shapes, measured
BASELINE = "b588f12"  # main when issue 24's work on the nightly job began
TARGET_SESSIONS_PER_S = 50_000
TARGET_PEAK_MIB = 1536  # 1.5 GiB
FLAT = 1.15  # "flat": no size from 10^6 spans up peaks more than 15% above the 10^6 figure


def phase_build(lake: Path, spans: int) -> dict[str, float]:
    import scoring  # bench/scoring.py: the generator and its cases

    shutil.rmtree(lake, ignore_errors=True)
    lake.mkdir(parents=True)
    sessions = max(1, round(spans / SPANS_PER_SESSION))
    started = time.perf_counter()
    written = scoring.write_lake(lake, sessions, 7)
    return {"spans": written, "sessions": sessions, "seconds": time.perf_counter() - started}


def write_inputs(directory: Path) -> tuple[Path, Path]:
    """bench/scoring.py's task cases (JSONL) and scoring config (JSON), as `tracevals score` reads them."""
    import scoring

    cases, config = directory / "cases.jsonl", directory / "scoring.json"
    cases.write_text("".join(json.dumps(c.raw) + "\n" for c in scoring.cases()))
    config.write_text(json.dumps(scoring.CONFIG))
    return cases, config


def phase_breakdown(lake: Path) -> dict[str, float]:
    """The nightly job's steps, timed one by one on one process (a worker's threads)."""
    os.environ["POLARS_MAX_THREADS"] = "1"  # before Polars starts its pool, as in a worker
    import scoring

    from tracevals.evaluators.apply import score_batch
    from tracevals.evaluators.registry import instances
    from tracevals.evaluators.trajectory_match.evaluator import TrajectoryMatch
    from tracevals.lake.lake import Lake
    from tracevals.queries.connection import define_views
    from tracevals.queries.groups import find_crossing, plan_groups, read_group, release_group
    from tracevals.queries.selection import session_chunks
    from tracevals.queries.trajectories import load_batch
    from tracevals.scoring.cases import attach_cases
    from tracevals.scoring.config import config_from_dict
    from tracevals.scoring.groups import GROUP_CHUNK_SESSIONS, GROUP_MEMORY, GROUP_VIEWS, _group_connection, _Job
    from tracevals.scoring.job import ScoringJob
    from tracevals.scoring.store import write_score_frame

    out = dict.fromkeys(("traces", "groups", "chunks", "plan_seconds", "seconds", "match_seconds"), 0.0)
    out.update(all_seconds=0.0, write_seconds=0.0, all_scores=0.0)
    config = config_from_dict(scoring.CONFIG)
    evaluators = instances(config.evaluators)
    with tempfile.TemporaryDirectory(prefix="tracevals-breakdown-") as work:
        started = time.perf_counter()
        plan = plan_groups(Lake.open(lake))
        assert plan is not None
        find_crossing(plan, work, GROUP_MEMORY)
        out["plan_seconds"] = time.perf_counter() - started
        job = _Job(
            ScoringJob(Lake.open(lake), tasks=scoring.cases(), config=config, write=False), tuple(evaluators), False
        )
        con = _group_connection(job, 1, work)
        define_views(con, GROUP_VIEWS)  # the breakdown rebuilds every group through the views
        for group in plan.groups:
            started = time.perf_counter()
            read_group(con, plan, group, copy=True)
            out["seconds"] += time.perf_counter() - started
            for _ in session_chunks(con, GROUP_CHUNK_SESSIONS, copy=False):
                started = time.perf_counter()
                batch = load_batch(con)
                out["seconds"] += time.perf_counter() - started
                out["traces"] += len(batch)
                out["chunks"] += 1
                started = time.perf_counter()
                scope = attach_cases(batch, job.scoring.tasks, config)
                score_batch(scope, [TrajectoryMatch()])
                out["match_seconds"] += time.perf_counter() - started
                started = time.perf_counter()
                scores = score_batch(scope, evaluators)
                out["all_seconds"] += time.perf_counter() - started
                out["all_scores"] += scores.height
                started = time.perf_counter()
                write_score_frame(Lake.open(lake), scores)
                out["write_seconds"] += time.perf_counter() - started
                del batch, scope, scores
            release_group(con)
            out["groups"] += 1
        con.close()
    shutil.rmtree(lake / "scores", ignore_errors=True)
    return out


def _phase(args: list[str]) -> tuple[dict[str, float], float, float]:
    """(the phase's JSON line, its peak RSS MiB, its wall seconds as a process)."""
    done = run_measured([str(PROJECT_PYTHON), __file__, *args], timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} exited {done.returncode}: {last_lines(done.stderr)}")
    return json.loads(done.stdout.strip().splitlines()[-1]), done.peak_rss_mb, done.wall_s


# ---------------------------------------------------------------- the nightly job, as a process tree


def _children(pid: int) -> list[int]:
    found, todo = [], [pid]
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            parents.setdefault(ppid, []).append(int(entry))
    while todo:
        p = todo.pop()
        found.append(p)
        todo += parents.get(p, [])
    return found


def _memory_kib(pid: int) -> tuple[int, int]:
    """(PSS, RSS) of a live process in KiB; (0, 0) once it is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0, 0
    values = {line.split(":")[0]: int(line.split()[1]) for line in text.splitlines()[1:] if line.endswith("kB")}
    return values.get("Pss", 0), values.get("Rss", 0)


def run_tree(
    cmd: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT, interval: float = 0.05
) -> dict[str, Any]:
    """Run `cmd`; its wall time, output, and the peaks of the summed PSS and RSS of its process tree."""
    started = time.perf_counter()
    child = Child(cmd, cwd, env)  # its output read by threads of its own: only wait4 below reaps it
    proc = child.proc
    peaks = {"pss": 0, "rss": 0, "single_rss": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            pss = rss = 0
            for pid in _children(proc.pid):
                p, r = _memory_kib(pid)
                pss, rss = pss + p, rss + r
                peaks["single_rss"] = max(peaks["single_rss"], r)
            peaks["pss"], peaks["rss"] = max(peaks["pss"], pss), max(peaks["rss"], rss)
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    timer = threading.Timer(3600, proc.kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)  # the CPU time of the command and its (waited-for) workers
    finally:
        timer.cancel()
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    out, err = child.output()
    return {
        "cpu": usage.ru_utime + usage.ru_stime,
        "returncode": proc.returncode,
        "stdout": out,
        "stderr": err,
        "wall": wall,
        "pss_mb": peaks["pss"] / 1024,
        "rss_mb": peaks["rss"] / 1024,
        "single_rss_mb": peaks["single_rss"] / 1024,
    }


def nightly(lake: Path, cases: Path, config: Path, workers: int | None, tree: Path | None = None) -> dict[str, Any]:
    """`tracevals score ... --summary` on `lake` (scores written), by this tree or `tree` (PYTHONPATH)."""
    cmd = [str(PROJECT_PYTHON), "-m", "tracevals", "score", "--lake", str(lake), "--tasks", str(cases)]
    cmd += ["--config", str(config), "--summary"] + (["--workers", str(workers)] if workers else [])
    env = {**os.environ, "PYTHONPATH": str(tree)} if tree is not None else None
    if tree is not None:  # check that the tree's own code is the one that runs
        probe = [str(PROJECT_PYTHON), "-c", "import tracevals, sys; print(tracevals.__file__)"]
        where = subprocess.run(
            probe, capture_output=True, text=True, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}
        )
        if not where.stdout.strip().startswith(str(tree)):
            raise RuntimeError(f"the baseline tree {tree} would import tracevals from {where.stdout.strip()}")
    load = os.getloadavg()[0]
    # `python -m` puts the working directory first on sys.path, before PYTHONPATH: run in the tree itself
    result = run_tree(cmd, env, cwd=tree if tree is not None else ROOT)
    if result["returncode"] != 0:
        raise RuntimeError(f"tracevals score exited {result['returncode']}: {last_lines(result['stderr'])}")
    counts = next(line for line in result["stderr"].splitlines() if " sessions, " in line and " traces, " in line)
    result["sessions"] = int(counts.split()[0])
    result["sessions_per_s"] = result["sessions"] / result["wall"]
    result["load"] = (load, os.getloadavg()[0])
    return result


def ingest(spans: int) -> dict[str, float]:
    import compare_ingest

    per_request = compare_ingest.SESSIONS_PER_REQUEST * compare_ingest.SPANS_PER_SESSION
    started = time.perf_counter()
    rates = compare_ingest.run_tracevals(max(1, round(spans / per_request)), first=5_000_000)
    return {
        "ingest_spans_per_s": rates["queryable_per_s"],
        "ingest_seconds": rates["spans"] / rates["queryable_per_s"],
        "ingest_rss_mb": rates["peak_rss_mb"],
        "ingest_wall": time.perf_counter() - started,
    }


# ---------------------------------------------------------------- scores before and after


def score_rows(lake: Path) -> Any:
    """Every row of `lake/scores/` but its time of scoring, sorted on every column."""
    import polars as pl

    rows = pl.read_parquet(str(lake / "scores" / "*.parquet")).drop("scored_at")
    return rows.sort(rows.columns, nulls_last=True)


def identical(base_lake: Path, lake: Path) -> tuple[bool, str]:
    """Whether the two lakes' score rows are the same; the line that says so (or the rows that differ)."""
    import polars as pl

    before, after = score_rows(base_lake), score_rows(lake)
    if before.equals(after):
        return True, f"scores identical: yes ({after.height:,} rows, every column but scored_at)"
    only_before = before.join(after, on=before.columns, how="anti", nulls_equal=True)
    only_after = after.join(before, on=after.columns, how="anti", nulls_equal=True)
    with pl.Config(tbl_rows=10, tbl_cols=-1, fmt_str_lengths=60):
        return False, (
            f"scores identical: NO ({before.height:,} rows before, {after.height:,} after; "
            f"{only_before.height:,} only before, {only_after.height:,} only after) — "
            f"{verdict_changes(before, after)}\n"
            f"only before:\n{only_before.head(10)}\nonly after:\n{only_after.head(10)}"
        )


def verdict_changes(before: Any, after: Any) -> str:
    """Where two sets of score rows differ, per evaluator: the (trace, evaluator) verdicts (`passed`, `score`)
    that are the same, that differ, that only one side has; and the other columns that differ on rows both
    have (a rule changed on purpose shows as one evaluator's verdicts, a new evaluator as rows only after)."""
    import polars as pl

    key, verdict = ["trace_id", "evaluator"], ["passed", "score"]
    rest = [c for c in before.columns if c in after.columns and c not in key]
    both = before.join(after, on=key, how="inner", suffix="_after", nulls_equal=True)

    def differs(column: str) -> Any:
        return pl.col(column).ne_missing(pl.col(f"{column}_after"))

    changed = both.with_columns(changed=pl.any_horizontal([differs(c) for c in verdict]))
    per = changed.group_by("evaluator").agg(rows=pl.len(), changed=pl.col("changed").sum()).sort("evaluator")
    same = per.filter(pl.col("changed") == 0)
    parts = [f"verdicts (passed, score) the same on {int(same['rows'].sum()):,} rows of {same.height} evaluators"]
    differ = per.filter(pl.col("changed") > 0)
    if differ.height:
        parts.append("differ: " + ", ".join(f"{e} {c:,} of {n:,}" for e, n, c in differ.iter_rows()))
    for name, side, other in (("only before", before, after), ("only after", after, before)):
        alone = side.join(other, on=key, how="anti", nulls_equal=True).group_by("evaluator").len().sort("evaluator")
        if alone.height:
            parts.append(f"{name}: " + ", ".join(f"{e} {n:,}" for e, n in alone.iter_rows()))
    others = [c for c in rest if c not in verdict and both.select(differs(c).any()).item()]
    if others:
        parts.append("other columns that differ: " + ", ".join(others))
    return "; ".join(parts)


def worktree(rev: str, into: Path) -> Path:
    path = into / f"tracevals-{rev}"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(path), rev], check=True,
                   capture_output=True)  # fmt: skip
    return path


def drop_worktree(path: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], capture_output=True)


# ---------------------------------------------------------------- the curve


def lake_phases(spans: int, work: Path, args: argparse.Namespace, inputs: tuple[Path, Path]) -> dict[str, Any]:
    lake = work / "lake"
    built, _, w1 = _phase(["--phase", "build", "--lake", str(lake), "--spans", str(spans)])
    row: dict[str, Any] = {"size": spans, "spans": built["spans"], "sessions": built["sessions"]}
    row.update(build_seconds=built["seconds"], build_wall=w1)
    compacted = run_measured(
        [str(PROJECT_PYTHON), "-m", "tracevals", "compact", "--lake", str(lake), "--min-age", "0", "--retention", "0"],
        timeout=3600,
    )  # fmt: skip
    if compacted.returncode != 0 or "derived the frames" not in compacted.stderr + compacted.stdout:
        raise RuntimeError(f"tracevals compact exited {compacted.returncode}: {last_lines(compacted.stderr)}")
    row.update(compact_seconds=compacted.wall_s, compact_cpu=compacted.cpu_s, compact_rss_mb=compacted.peak_rss_mb)
    floor = run_measured([str(PROJECT_PYTHON), "-c", FLOOR.format(files=f"{lake}/spans/**/*.parquet")], timeout=3600)
    if floor.returncode != 0:
        raise RuntimeError(f"the plain-DuckDB floor exited {floor.returncode}: {last_lines(floor.stderr)}")
    row.update(floor_cpu=floor.cpu_s, floor_seconds=floor.wall_s)
    job = nightly(lake, *inputs, args.workers)
    row.update(
        nightly_seconds=job["wall"],
        nightly_sessions_per_s=job["sessions_per_s"],
        nightly_pss_mb=job["pss_mb"],
        nightly_rss_mb=job["rss_mb"],
        nightly_single_rss_mb=job["single_rss_mb"],
        nightly_load=job["load"],
        scored_sessions=job["sessions"],
        nightly_cpu=job["cpu"],
    )
    if spans == args.floor_spans:  # the floor's comparison: one worker, as the floor runs on one thread
        shutil.rmtree(lake / "scores", ignore_errors=True)
        one = nightly(lake, *inputs, 1)
        row.update(one_worker_cpu=one["cpu"], one_worker_seconds=one["wall"], one_worker_pss_mb=one["pss_mb"])
    print(f"{spans:,} spans: nightly {job['wall']:.1f}s, {job['sessions_per_s']:,.0f} sessions/s, "
          f"peak PSS {job['pss_mb']:,.0f} MiB", file=sys.stderr)  # fmt: skip
    if spans == args.identical_spans:
        compared = time.perf_counter()
        row["identical"] = compare_with_baseline(lake, work, args, inputs)
        row["identical_wall"] = time.perf_counter() - compared
    shutil.rmtree(lake / "scores", ignore_errors=True)
    if spans <= args.breakdown_max:
        parts, rss, w2 = _phase(["--phase", "breakdown", "--lake", str(lake)])
        row.update(
            rebuild_seconds=parts["seconds"] + parts["plan_seconds"],
            groups=parts["groups"],
            chunks=parts["chunks"],
            match_seconds=parts["match_seconds"],
            all_seconds=parts["all_seconds"],
            write_seconds=parts["write_seconds"],
            breakdown_rss_mb=rss,
            breakdown_wall=w2,
        )
    shutil.rmtree(lake, ignore_errors=True)
    return row


def projected_seconds(prev: dict[str, Any], spans: int, args: argparse.Namespace) -> float:
    """Wall seconds of the phases that run at `spans`, projected linearly from `prev` (the size before): the
    lake's build, its compaction, the floor and the nightly job, each as measured there; the one-worker run, the
    baseline's scores and the breakdown only when they run at `spans` (`--floor-spans`, `--identical-spans`,
    `--breakdown-max`), as measured there, or as the nightly job if they did not run there. A phase that runs
    at the size before and not at this one is not counted: counted, the 10^6 size's breakdown, one-worker run and
    baseline comparison made 10^7 look twice as long as it is, and `make bench` skipped a size it had time for."""
    phases = [prev["build_wall"], prev["compact_seconds"], prev["floor_seconds"], prev["nightly_seconds"]]
    for key, runs in (
        ("one_worker_seconds", spans == args.floor_spans),
        ("identical_wall", spans == args.identical_spans),
        ("breakdown_wall", spans <= args.breakdown_max),
    ):
        if runs:
            phases.append(prev.get(key, prev["nightly_seconds"]))
    return sum(phases) * spans / prev["size"]


def compare_with_baseline(
    lake: Path, work: Path, args: argparse.Namespace, inputs: tuple[Path, Path]
) -> dict[str, Any]:
    """The lake (already scored by this tree) scored again by --baseline's tree, on a copy; the two compared."""
    tree = worktree(args.baseline, work)
    base_lake = work / "baseline-lake"
    try:
        shutil.copytree(lake, base_lake, ignore=shutil.ignore_patterns("scores"))
        before = nightly(base_lake, *inputs, None, tree=tree)
        same, line = identical(base_lake, lake)
    finally:
        drop_worktree(tree)
        shutil.rmtree(base_lake, ignore_errors=True)
    print(line)
    return {
        "same": same,
        "line": line.splitlines()[0],
        "baseline_seconds": before["wall"],
        "baseline_sessions_per_s": before["sessions_per_s"],
        "baseline_pss_mb": before["pss_mb"],
        "baseline_single_rss_mb": before["single_rss_mb"],
    }


def memory_available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return float("inf")


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| spans | sessions | ingest s (spans/s) | collector peak MiB | nightly s | nightly sessions/s | "
        "nightly peak PSS MiB (largest process RSS) | groups | rebuild s | trajectory_match s | "
        "all evaluators s | write s |"
    )
    out = [head, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ingest = f"{r['ingest_seconds']:.1f} ({r['ingest_spans_per_s']:,.0f})" if "ingest_seconds" in r else "not run"
        rss = f"{r['ingest_rss_mb']:,.0f}" if "ingest_rss_mb" in r else "—"
        parts = (
            f"{r['groups']:.0f} | {r['rebuild_seconds']:.1f} | {r['match_seconds']:.2f} | {r['all_seconds']:.1f} | "
            f"{r['write_seconds']:.1f}"
            if "rebuild_seconds" in r
            else "— | — | — | — | —"
        )
        out.append(
            f"| {r['spans']:,} | {r['sessions']:,} | {ingest} | {rss} | {r['nightly_seconds']:.1f} | "
            f"{r['nightly_sessions_per_s']:,.0f} | {r['nightly_pss_mb']:,.0f} ({r['nightly_single_rss_mb']:,.0f}) | "
            f"{parts} |"
        )
    return "\n".join(out)


def verdicts(rows: list[dict[str, Any]], sizes: list[int]) -> list[str]:
    """The two target lines of the nightly job (measured at the largest size run)."""
    lines = []
    if rows:
        top = rows[-1]
        rate = top["nightly_sessions_per_s"]
        at = f" at {top['spans']:,} spans" if top["size"] != 10_000_000 else ""
        met = rate >= TARGET_SESSIONS_PER_S and top["size"] >= 10_000_000
        lines.append(
            f"target nightly scoring >= {TARGET_SESSIONS_PER_S} sessions/s: {rate:,.0f} sessions/s{at} -- "
            f"{'met' if met else 'NOT MET'}"
        )
        figures = ", ".join(f"{r['nightly_pss_mb']:,.0f} MiB at {r['spans']:,} spans" for r in rows)
        from_million = [r["nightly_pss_mb"] for r in rows if r["size"] >= 1_000_000]
        at_top = next((r["nightly_pss_mb"] for r in rows if r["size"] == 10_000_000), None)
        flat = len(from_million) >= 2 and max(from_million) <= FLAT * from_million[0]
        ran = "" if at_top is not None else " (10^7 spans not run)"
        met = at_top is not None and at_top <= TARGET_PEAK_MIB and flat
        lines.append(
            f"target nightly peak memory <= 1.5 GB at 10^7 spans and flat: {figures}{ran} -- "
            f"{'met' if met else 'NOT MET'}"
        )
        one = next((r for r in rows if "one_worker_cpu" in r), None)
        if one is not None:
            ratio = one["one_worker_cpu"] / one["floor_cpu"]
            lines.append(
                f"target nightly at {one['spans']:,} spans, 1 worker, <= {TARGET_FLOOR_RATIO:.0f}x the plain-DuckDB "
                f"floor: {one['one_worker_cpu']:.1f} CPU-s against {one['floor_cpu']:.2f} CPU-s, {ratio:.1f}x -- "
                f"{'met' if ratio <= TARGET_FLOOR_RATIO else 'NOT MET'}"
            )
            lines.append(
                f"target nightly at {one['spans']:,} spans, 1 worker, peak <= {TARGET_ONE_WORKER_MIB} MiB: "
                f"{one['one_worker_pss_mb']:,.0f} MiB PSS -- "
                f"{'met' if one['one_worker_pss_mb'] <= TARGET_ONE_WORKER_MIB else 'NOT MET'}"
            )
        else:
            lines.append("target nightly <= 3x the plain-DuckDB floor: --floor-spans not run -- NOT MET")
    else:
        lines.append(f"target nightly scoring >= {TARGET_SESSIONS_PER_S} sessions/s: no size run -- NOT MET")
        lines.append("target nightly peak memory <= 1.5 GB at 10^7 spans and flat: no size run -- NOT MET")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,10000000", help="lake sizes in spans, comma-separated")
    parser.add_argument("--ingest-max", type=int, default=10_000_000, help="largest size sent through the collector")
    parser.add_argument("--workers", type=int, default=2, help="`tracevals score --workers` (the target: 2 cores)")
    parser.add_argument("--breakdown-max", type=int, default=1_000_000, help="largest size timed step by step")
    parser.add_argument("--floor-spans", type=int, default=1_000_000, help="the size scored again on one worker")
    parser.add_argument("--identical-spans", type=int, default=1_000_000, help="the size scored by both trees")
    parser.add_argument("--baseline", default=BASELINE, help="the commit whose scores must be the same")
    parser.add_argument("--deadline", type=float, help="epoch seconds: skip what is projected to end later")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--phase", choices=["build", "breakdown"], help=argparse.SUPPRESS)
    parser.add_argument("--lake", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--spans", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:  # a child process: one phase, its figures as one JSON line
        result = phase_build(args.lake, args.spans) if args.phase == "build" else phase_breakdown(args.lake)
        print(json.dumps(result))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    cmd = (
        f".venv/bin/python bench/compare_scale.py --sizes {args.sizes} --ingest-max {args.ingest_max} "
        f"--workers {args.workers}"
    )
    section = Section("scale", "Scale curve: ingest, the nightly scoring job and where its time goes", cmd)
    rows: list[dict[str, Any]] = []
    work = Path(tempfile.mkdtemp(prefix="tracevals-scale-"))
    try:
        inputs = write_inputs(work)
        for n in sizes:
            prev = rows[-1] if rows else None
            grow = n / prev["size"] if prev else 1.0
            left = (args.deadline - time.time()) if args.deadline else float("inf")
            lake_s = projected_seconds(prev, n, args) if prev else 0.0
            # the nightly job reads a group of sessions at a time: memory follows the group, not the lake
            peak = prev["nightly_pss_mb"] if prev else 0.0
            if prev is None and left <= 0:
                section.notes.append(f"{n:,} spans: not run — no time left of the budget.")
                break
            if prev is not None and (lake_s > left or peak > 0.8 * memory_available_mb()):
                section.notes.append(
                    f"{n:,} spans: not run — projected from {prev['spans']:,} spans (linear): the phases that "
                    f"run at this size {lake_s / 60:.1f} min and {peak / 1024:.1f} GiB peak, against "
                    f"{max(left, 0) / 60:.1f} min left of the budget and {memory_available_mb() / 1024:.1f} GiB "
                    "available."
                )
                break
            row: dict[str, Any] = {}
            ingest_s = prev["ingest_wall"] * grow if prev and "ingest_wall" in prev else 0.0
            if n > args.ingest_max or lake_s + ingest_s > left:
                why = f"above --ingest-max {args.ingest_max:,}" if n > args.ingest_max else "over the time budget"
                rate = (
                    f"; projected {ingest_s / 60:.1f} min at {prev['ingest_spans_per_s']:,.0f} spans/s"
                    if prev and "ingest_wall" in prev
                    else ""
                )
                section.notes.append(f"{n:,} spans: ingest not run ({why}){rate}.")
            else:
                row.update(ingest(n))
            row.update(lake_phases(n, work, args, inputs))
            rows.append(row)
            print(f"{n}: {row}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for key, name, unit, higher in (
        ("ingest_spans_per_s", "ingest to queryable", "spans/s", True),
        ("nightly_sessions_per_s", "nightly scoring (rebuild + every evaluator + write)", "sessions/s", True),
        ("nightly_pss_mb", "nightly scoring peak memory (PSS, all processes)", "MiB", False),
        ("nightly_cpu", "nightly scoring CPU time (all processes)", "CPU-s", False),
        ("one_worker_cpu", "nightly scoring CPU time, 1 worker", "CPU-s", False),
        ("floor_cpu", "plain-DuckDB floor (GROUP BY per session, 1 thread)", "CPU-s", False),
        ("compact_seconds", "hourly compaction + derived tables, every hour at once", "s", False),
        ("rebuild_seconds", "trajectory rebuild (load_batch, one process)", "s", False),
        ("match_seconds", "scoring: trajectory_match", "s", False),
        ("all_seconds", "scoring: every built-in evaluator", "s", False),
    ):
        for r in rows:
            if key in r:
                section.figures.append(Figure(f"{r['spans']:,} spans: {name}", unit, [r[key]], higher))
    section.tables.append(table(rows))
    for r in rows:
        load = r["nightly_load"]
        section.notes.append(
            f"{r['spans']:,} spans: compaction and derived tables {r['compact_seconds']:.1f} s "
            f"({r['compact_cpu']:.1f} CPU-s, peak {r['compact_rss_mb']:,.0f} MiB RSS), paid once per closed hour "
            f"by the hourly `tracevals compact`; nightly job load average {load[0]:.1f} → {load[1]:.1f}; largest "
            "single process "
            f"{r['nightly_single_rss_mb']:,.0f} MiB RSS; summed RSS {r['nightly_rss_mb']:,.0f} MiB."
        )
        if "identical" in r:
            same = r["identical"]
            section.notes.append(
                f"{same['line']} — {args.baseline} scored the same {r['spans']:,}-span lake in "
                f"{same['baseline_seconds']:.1f} s ({same['baseline_sessions_per_s']:,.0f} sessions/s, peak "
                f"{same['baseline_pss_mb']:,.0f} MiB PSS) with its own `tracevals score`."
            )
    if args.identical_spans not in [r["size"] for r in rows]:
        print(f"scores identical: not checked ({args.identical_spans:,} spans not run)")
    if not any(n >= 10**8 for n in sizes):
        section.notes.append(
            "10^8 spans is not run: on 2 cores it would take about ten times the 10^7 figure, more than a "
            "30-minute `make bench`; memory is the group's (flat from 10^6 up), not the lake's."
        )
    section.notes.append("One run per size (a single pass of each phase): the curve is the point, not the spread.")
    section.print()
    print(section.tables[0])
    for line in verdicts(rows, sizes):
        print(line)
    section.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
