"""Benchmark: score a synthetic lake of N sessions with every built-in evaluator, set-at-a-time, next
to a straightforward per-session Python loop over the same data, in one run.

    .venv/bin/python bench/scoring.py                                   # 1,000,000 sessions, ~10M spans
    .venv/bin/python bench/scoring.py --sessions 100000 --loop-sessions 20000 --keep /tmp/bench-lake

The lake is written first (real span schema, Parquet, hive partitions over one day). Then, timed:

  load   lake -> frames: DuckDB over the views (`queries.trajectories.load_batch`)
  score  frames -> score rows, every built-in evaluator (`evaluators.apply.score_batch`)
  write  score rows -> LAKE/scores (`evaluators.store.write_score_frame`)
  loop   the same evaluators as `evaluate(trajectory, case)`, one session at a time, over the first
         --loop-sessions sessions of the same frames (building the Trajectory objects included)
  nightly the same lake scored as `tracevals score --summary --workers N` scores it (`score_lake`: a group
         of whole sessions at a time, each rebuilt, scored and written, N groups at once; only counts
         per evaluator kept), start-up of the worker processes included; its CPU seconds are this
         process's and its workers'

Sessions follow nine shapes an order-support agent takes (clean lookups, sends, a 429 retried after
its retry-after and one retried at once, an ambiguous delete, a hand-off, a crash, a loop, a duplicate
send) with random customers and orders, each with its task case; a scoring config adds budgets.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl

from tracevals.evaluators import default_evaluators
from tracevals.evaluators.apply import evaluate_safely, score_batch
from tracevals.lake.lake import Lake
from tracevals.model.tasks import case_from_dict
from tracevals.queries import open_lake
from tracevals.queries.trajectories import load_batch
from tracevals.scoring.cases import attach_cases
from tracevals.scoring.config import config_from_dict
from tracevals.scoring.offline import score_lake
from tracevals.scoring.store import write_score_frame

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import MODEL, SHAPES, T0_MS, shape_rows, write_lake

__all__ = ["CONFIG", "MODEL", "SHAPES", "T0_MS", "cases", "shape_rows", "write_lake"]


EXPECTED = {
    "lookup": ["search_customer", "get_orders"],
    "send": ["send_message"],
    "backoff": ["send_message", "send_message"],
    "blind": ["send_message"],
    "ambiguous": ["get_orders", "handoff_to_human"],
    "handoff": ["get_orders", "handoff_to_human"],
    "crash": ["search_customer", "get_orders"],
    "loop": ["get_orders"],
    "duplicate": ["send_message"],
}
CONFIG = {"budgets": {"max_steps": 12, "max_tokens": 20000, "max_cost_usd": 0.05}, "forbidden_actions": ["drop_table"]}


def cases() -> list[Any]:
    """One task case per shape; the 429 shapes declare their fault, the delete needs a confirmation."""
    extra: dict[str, dict[str, Any]] = {
        "backoff": {"faults": [{"tool": "send_message", "call": 1, "type": "429"}]},
        "blind": {"faults": [{"tool": "send_message", "call": 1, "type": "429"}]},
        "ambiguous": {"requires_confirmation": True},
    }
    return [
        case_from_dict(
            {
                "case_id": name,
                "input": f"bench {name}",
                "expected_steps": steps,
                "max_retries": 2,
                "success_criteria": {"must_include": [SHAPES[name][2].split(" ")[0] or "?"]},
                **extra.get(name, {}),
            }
        )
        for name, steps in EXPECTED.items()
    ]


class Clock:
    """Wall and CPU time (all threads of the process) since the last lap."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        out = (wall - self.wall, cpu - self.cpu)
        self.wall, self.cpu = wall, cpu
        return out


def loop_baseline(scope: Any, evaluators: list[Any], limit: int) -> tuple[int, int]:
    """The straightforward way: per session, build its Trajectory and call every evaluate()."""
    from tracevals.model.batch import Batch

    traces = scope.batch.traces.head(limit)
    chosen = Batch(
        traces, scope.batch.calls.filter(pl.col("trace_id").is_in(traces["trace_id"].implode())), scope.batch.handoffs
    )
    keys = dict(traces.select("trace_id", "case_key").iter_rows())
    scores = 0
    for trajectory in chosen.trajectories():
        case = scope.case(keys[trajectory.trace_id])
        for evaluator in evaluators:
            scores += evaluate_safely(evaluator, trajectory, case) is not None
    return traces.height, scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--sessions", type=int, default=1_000_000)
    parser.add_argument("--loop-sessions", type=int, default=100_000, help="sessions for the per-session loop")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="write the lake here and keep it (default: a temporary directory)")
    parser.add_argument("--reuse", action="store_true", help="with --keep: score the lake already there")
    parser.add_argument("--threads", type=int, default=2, help="DuckDB threads (the target is 2 cores)")
    parser.add_argument("--memory-limit", default="8GB", help="DuckDB memory limit")
    parser.add_argument("--workers", type=int, default=2, help="the nightly phase's worker processes")
    args = parser.parse_args(argv)
    lake = args.keep or Path(tempfile.mkdtemp(prefix="tracevals-bench-")) / "lake"
    reuse = args.reuse and (lake / "spans").is_dir()
    if lake.exists() and not reuse:
        shutil.rmtree(lake)
    lake.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(lake / "scores", ignore_errors=True)
    rows: list[tuple[str, int, float, float]] = []  # phase, sessions, wall seconds, CPU seconds
    try:
        started = time.perf_counter()
        spans = -1 if reuse else write_lake(lake, args.sessions, args.seed)
        print(
            f"lake: {args.sessions:,} sessions, {spans:,} spans in {time.perf_counter() - started:.1f}s -> {lake}",
            file=sys.stderr,
        )
        evaluators = default_evaluators()
        clock = Clock()
        con = open_lake(lake, memory_limit=args.memory_limit, threads=args.threads)
        batch = load_batch(con)
        con.close()  # DuckDB's memory back before scoring
        rows.append(("load (lake -> frames)", len(batch), *clock.lap()))
        scope = attach_cases(batch, cases(), config_from_dict(CONFIG))
        scores = score_batch(scope, evaluators)
        rows.append((f"score, set-at-a-time ({scores.height:,} scores)", len(batch), *clock.lap()))
        write_score_frame(Lake.open(lake), scores)
        rows.append(("write (scores -> lake)", len(batch), *clock.lap()))
        looped, loop_scores = loop_baseline(scope, evaluators, min(args.loop_sessions, len(batch)))
        rows.append((f"score, per-session Python loop ({loop_scores:,} scores)", looped, *clock.lap()))
        del scope
        shutil.rmtree(lake / "scores", ignore_errors=True)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        nightly = score_lake(
            lake, tasks=cases(), config=config_from_dict(CONFIG), keep_scores=False, workers=args.workers
        )
        wall, cpu = clock.lap()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu += (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
        name = f"nightly: score_lake, {nightly.groups} groups, {args.workers} workers ({nightly.score_count:,} scores)"
        rows.append((name, nightly.sessions, wall, cpu))
    finally:
        if args.keep is None:
            shutil.rmtree(lake.parent, ignore_errors=True)
    width = max(52, *(len(r[0]) for r in rows))
    print(f"{'phase':<{width}} {'sessions':>10} {'seconds':>9} {'sessions/s':>12} {'CPU s':>8}")
    for phase, n, seconds, cpu in rows:
        print(f"{phase:<{width}} {n:>10,} {seconds:>9.2f} {n / seconds:>12,.0f} {cpu:>8.2f}")
    total, total_cpu = sum(r[2] for r in rows[:3]), sum(r[3] for r in rows[:3])
    nightly_row = rows[4]
    label = "end to end (load + score + write)"
    line = f"{label:<{width}} {len(batch):>10,} {total:>9.2f} {len(batch) / total:>12,.0f}"
    print(f"{line} {total_cpu:>8.2f}")
    print(f"nightly scoring: {nightly_row[1] / nightly_row[2]:,.0f} sessions/s ({nightly_row[1]:,} sessions)")
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} at the end (other work slows wall, not CPU, time)")
    passed = (
        scores.group_by("evaluator")
        .agg(pl.len().alias("scores"), pl.col("passed").mean().round(3).alias("pass_rate"))
        .sort("evaluator")
    )
    print(passed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
