"""The scale curve: ingest, trajectory rebuild and scoring at 10^5, 10^6 (and 10^7) spans, with peak memory.

    .venv/bin/python bench/compare_scale.py [--sizes 100000,1000000,10000000] [--deadline EPOCH] [--json FILE]

For each size, every phase runs in its own process, so that its peak RSS (the kernel's accounting) is
its own:
  ingest   the OTLP/HTTP load generator of compare_ingest.py (51 ten-span GenAI sessions per request,
           fresh ids) into a `tracevals collect` process, until a query returns every span; spans/s to
           queryable and the collector's peak RSS. Skipped above --ingest-max or when its projected time
           (linear from the size before) would end after --deadline; the results then give the projection.
  build    a lake of the same size written directly by bench/scoring.py's vectorised generator (nine
           session shapes of an order-support agent, ~7.5 spans each, with their task cases): not a
           figure, the input of the next two.
  score    open_lake, then a chunk of at most 100,000 whole sessions at a time (`session_chunks`, as
           `tracevals score` reads a lake): `load_batch` rebuilds its trajectories through the views
           into frames (the rebuild figure), `score_batch` scores them with trajectory_match (the
           cases of bench/scoring.py) and again with every built-in evaluator (the scoring figures);
           each step's time is summed over the chunks, the peak RSS is the process's.
The comparison is size to size: how time and memory grow with 10x more spans. A size whose rebuild
and scoring are projected (linearly, from the size before) to end after --deadline, or to need more than
80% of the available memory, is not run, and the results say so with the projection.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PROJECT_PYTHON, Figure, Section, last_lines, run_measured

SPANS_PER_SESSION = 7.49  # bench/scoring.py's shapes, measured


def phase_build(lake: Path, spans: int) -> dict[str, float]:
    import scoring  # bench/scoring.py: the generator and its cases

    shutil.rmtree(lake, ignore_errors=True)
    lake.mkdir(parents=True)
    sessions = max(1, round(spans / SPANS_PER_SESSION))
    started = time.perf_counter()
    written = scoring.write_lake(lake, sessions, 7)
    return {"spans": written, "sessions": sessions, "seconds": time.perf_counter() - started}


def phase_score(lake: Path) -> dict[str, float]:
    """Rebuild and score the lake a chunk of whole sessions at a time (as `tracevals score` does), so
    that memory stays bounded by the chunk; each step is timed on its own and summed over the chunks."""
    import scoring

    from tracevals.evaluators import default_evaluators
    from tracevals.evaluators.batch_scoring import score_batch
    from tracevals.evaluators.trajectory_match.evaluator import TrajectoryMatch
    from tracevals.queries import open_lake
    from tracevals.queries.selection import session_chunks
    from tracevals.queries.trajectories import load_batch
    from tracevals.scoring.cases import attach_cases
    from tracevals.scoring.offline import CHUNK_SESSIONS

    out = dict.fromkeys(("traces", "chunks", "seconds", "match_scores", "match_seconds", "all_scores"), 0.0)
    out["all_seconds"] = 0.0
    con = open_lake(lake)
    started = time.perf_counter()
    for _ in session_chunks(con, CHUNK_SESSIONS):
        batch = load_batch(con)
        out["seconds"] += time.perf_counter() - started
        out["traces"] += len(batch)
        out["chunks"] += 1
        started = time.perf_counter()
        scope = attach_cases(batch, scoring.cases())
        out["match_scores"] += score_batch(scope, [TrajectoryMatch()]).height
        out["match_seconds"] += time.perf_counter() - started
        started = time.perf_counter()
        out["all_scores"] += score_batch(scope, default_evaluators()).height
        out["all_seconds"] += time.perf_counter() - started
        del batch, scope
        started = time.perf_counter()
    out["seconds"] += time.perf_counter() - started  # the last chunk's clean-up
    return out


def _phase(args: list[str]) -> tuple[dict[str, float], float, float]:
    """(the phase's JSON line, its peak RSS MiB, its wall seconds as a process)."""
    done = run_measured([str(PROJECT_PYTHON), __file__, *args], timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} exited {done.returncode}: {last_lines(done.stderr)}")
    return json.loads(done.stdout.strip().splitlines()[-1]), done.peak_rss_mb, done.wall_s


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


def lake_phases(spans: int, work: Path) -> dict[str, float]:
    lake = work / "lake"
    built, _, w1 = _phase(["--phase", "build", "--lake", str(lake), "--spans", str(spans)])
    scored, score_rss, w2 = _phase(["--phase", "score", "--lake", str(lake)])
    shutil.rmtree(lake, ignore_errors=True)
    return {
        "size": spans,
        "spans": built["spans"],
        "sessions": built["sessions"],
        "build_seconds": built["seconds"],
        "rebuild_seconds": scored["seconds"],
        "chunks": scored["chunks"],
        "match_seconds": scored["match_seconds"],
        "all_seconds": scored["all_seconds"],
        "score_rss_mb": score_rss,
        "scores": scored["all_scores"],
        "lake_wall": w1 + w2,
    }


def memory_available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return float("inf")


def table(rows: list[dict[str, float]]) -> str:
    head = (
        "| spans | sessions | ingest s (spans/s) | collector peak MiB | chunks | rebuild s | "
        "trajectory_match s | all evaluators s | rebuild + scoring peak MiB |"
    )
    out = [head, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ingest = f"{r['ingest_seconds']:.1f} ({r['ingest_spans_per_s']:,.0f})" if "ingest_seconds" in r else "not run"
        rss = f"{r['ingest_rss_mb']:,.0f}" if "ingest_rss_mb" in r else "—"
        out.append(
            f"| {r['spans']:,} | {r['sessions']:,} | {ingest} | {rss} | {r['chunks']:.0f} | "
            f"{r['rebuild_seconds']:.1f} | {r['match_seconds']:.2f} | {r['all_seconds']:.1f} "
            f"| {r['score_rss_mb']:,.0f} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,10000000", help="lake sizes in spans, comma-separated")
    parser.add_argument("--ingest-max", type=int, default=10_000_000, help="largest size sent through the collector")
    parser.add_argument("--deadline", type=float, help="epoch seconds: skip what is projected to end later")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--phase", choices=["build", "score"], help=argparse.SUPPRESS)
    parser.add_argument("--lake", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--spans", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:  # a child process: one phase, its figures as one JSON line
        result = phase_build(args.lake, args.spans) if args.phase == "build" else phase_score(args.lake)
        print(json.dumps(result))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    cmd = f".venv/bin/python bench/compare_scale.py --sizes {args.sizes} --ingest-max {args.ingest_max}"
    section = Section("scale", "Scale curve: ingest, trajectory rebuild and scoring by lake size", cmd)
    rows: list[dict[str, float]] = []
    work = Path(tempfile.mkdtemp(prefix="tracevals-scale-"))
    try:
        for n in sizes:
            prev = rows[-1] if rows else None
            grow = n / prev["size"] if prev else 1.0
            left = (args.deadline - time.time()) if args.deadline else float("inf")
            lake_s = prev["lake_wall"] * grow if prev else 0.0
            # scoring reads a chunk of sessions at a time: memory grows with the lake only up to one chunk
            chunks = prev["chunks"] if prev else 1.0
            peak = prev["score_rss_mb"] * (grow if chunks <= 1 else 1.0) if prev else 0.0
            if lake_s > left or peak > 0.8 * memory_available_mb():
                section.notes.append(
                    f"{n:,} spans: not run — projected from {prev['spans']:,} spans (linear): rebuild + scoring "  # type: ignore[index]
                    f"{lake_s / 60:.1f} min and {peak / 1024:.1f} GiB peak, against "
                    f"{max(left, 0) / 60:.1f} min left of "
                    f"the budget and {memory_available_mb() / 1024:.1f} GiB available."
                )
                break
            row: dict[str, float] = {}
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
            row.update(lake_phases(n, work))
            rows.append(row)
            print(f"{n}: {row}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for key, name, unit, higher in (
        ("ingest_spans_per_s", "ingest to queryable", "spans/s", True),
        ("rebuild_seconds", "trajectory rebuild (load_batch)", "s", False),
        ("match_seconds", "scoring: trajectory_match", "s", False),
        ("all_seconds", "scoring: every built-in evaluator", "s", False),
        ("score_rss_mb", "rebuild + scoring peak RSS", "MiB", False),
    ):
        for r in rows:
            if key in r:
                section.figures.append(Figure(f"{r['spans']:,} spans: {name}", unit, [r[key]], higher))
    section.tables.append(table(rows))
    section.notes.append("One run per size (a single pass of each phase): the curve is the point, not the spread.")
    section.print()
    print(section.tables[0])
    section.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
