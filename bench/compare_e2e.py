"""End to end against agentevals-cli: the same ADK sessions, OTLP/JSON files to in-order trajectory verdicts.

    .venv/bin/python bench/compare_e2e.py [--sizes 1000,10000,100000] [--runs 3] [--peer-max 10000] [--json FILE]
                                          [--ingest-baseline]

Sessions are real Google ADK recordings from `shared/otlp-corpus` (`v2_span_only/S2`: get_weather then
get_time; `S5`: two parallel get_weather calls), half and half, each copy given fresh trace, span and
conversation ids, written 100 sessions to an OTLP/JSON file. Both tools get the same files and the
same expectation (the tool calls, names and arguments, in order):

  agentevals   agentevals run FILES --format otlp-json --eval-set evalset.json
                 -m tool_trajectory_avg_score --trajectory-match-type IN_ORDER --output summary
  tracevals    tracevals ingest --lake LAKE FILES   (one process per 10,000 sessions' files)
               tracevals score --lake LAKE --tasks cases.jsonl --evaluators trajectory_match --summary

Each side is timed as child processes from start to exit (interpreter start-up and imports included,
the way a user runs it); sessions/s = sessions / wall seconds, peak memory = the largest child's peak
RSS. The verdicts are checked to agree (every session passes in both). agentevals-cli runs only up to
`--peer-max` sessions (its rate makes 10^5 sessions take longer than the whole `make bench` budget). With
`--ingest-baseline`, tracevals' ingest is also run with its validating OTLP/JSON path
(`TRACEVALS_INGEST_FAST=0`, what `tracevals ingest` did before its fast path) on the same files, and the
notes give both ingest times.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    PROJECT_PYTHON,
    ROOT,
    Figure,
    Measured,
    PeerUnavailable,
    Section,
    distribution_versions,
    last_lines,
    peer_python,
    run_measured,
)

CORPUS = ROOT.parent / "shared" / "otlp-corpus" / "adk_py" / "v2_span_only"
SCENARIOS = {
    "S2": (
        "What is the weather and local time in Paris?",
        [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})],
    ),
    "S5": (
        "Compare the weather in Paris and London.",
        [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"})],
    ),
}
SESSIONS_PER_FILE = 100
INGEST_CHUNK = 10_000  # sessions per `tracevals ingest` process
SPLIT: dict[int, dict[str, float]] = {}  # sessions -> the latest tracevals run's ingest / score time and memory


class Template:
    """One recording, split at its ids so that a copy with fresh ids is a string join."""

    def __init__(self, path: Path, number: int) -> None:
        doc = json.loads(path.read_text())
        spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
        ids = {s["traceId"] for s in spans} | {s["spanId"] for s in spans}
        ids |= set(re.findall(r"sess-[A-Za-z0-9_-]+", json.dumps(doc)))  # the conversation (session) id
        pattern = re.compile("(" + "|".join(map(re.escape, sorted(ids, key=len, reverse=True))) + ")")
        # the items of the two arrays, as compact JSON without the brackets, split at the ids
        self.parts = [
            pattern.split(json.dumps(doc.get(key, []), separators=(",", ":"))[1:-1])
            for key in ("resourceSpans", "resourceLogs")
        ]
        self.names = sorted(ids)
        self.number = number

    def copy(self, n: int) -> tuple[str, str]:
        """(resourceSpans items, resourceLogs items) of copy `n`, as JSON text without the brackets."""
        fresh: dict[str, str] = {}
        for k, old in enumerate(self.names):
            if old.startswith("sess-"):
                fresh[old] = f"sess-{n}"
            elif len(old) == 32:
                fresh[old] = f"{self.number:02x}{n:030x}"
            else:  # never all zero (an invalid span id, refused as the collector refuses it)
                fresh[old] = f"{n:012x}{k + 1:04x}"
        spans, logs = ("".join(fresh[p] if i % 2 else p for i, p in enumerate(parts)) for parts in self.parts)
        return spans, logs


def write_sessions(folder: Path, sessions: int) -> list[Path]:
    templates = [Template(CORPUS / f"{name}.json", i + 1) for i, name in enumerate(SCENARIOS)]
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for first in range(0, sessions, SESSIONS_PER_FILE):
        copies = [templates[n % len(templates)].copy(n) for n in range(first, min(sessions, first + SESSIONS_PER_FILE))]
        path = folder / f"sessions-{first // SESSIONS_PER_FILE:05d}.json"
        spans = ",".join(c[0] for c in copies)
        logs = ",".join(c[1] for c in copies if c[1])
        path.write_text(f'{{"resourceSpans":[{spans}],"resourceLogs":[{logs}]}}')
        files.append(path)
    return files


def write_expectations(folder: Path) -> tuple[Path, Path]:
    cases, eval_cases = [], []
    for name, (text, calls) in SCENARIOS.items():
        steps = [{"tool": tool, "args": args} for tool, args in calls]
        cases.append(
            {"case_id": name, "input": text, "expected_steps": steps, "match": {"mode": "in_order", "args": "exact"}}
        )
        eval_cases.append(
            {
                "eval_id": name,
                "conversation": [
                    {
                        "invocation_id": f"{name}-1",
                        "user_content": {"role": "user", "parts": [{"text": text}]},
                        "intermediate_data": {
                            "tool_uses": [{"name": t, "args": a} for t, a in calls],
                            "tool_responses": [],
                        },
                    }
                ],
            }
        )
    tasks = folder / "cases.jsonl"
    tasks.write_text("".join(json.dumps(c) + "\n" for c in cases))
    evalset = folder / "evalset.json"
    evalset.write_text(json.dumps({"eval_set_id": "bench", "eval_cases": eval_cases}))
    return tasks, evalset


def run_ingest(files: list[Path], lake: Path, fast: bool = True) -> list[Measured]:
    """`tracevals ingest` of the files into `lake`, `INGEST_CHUNK` sessions' files a process."""
    shutil.rmtree(lake, ignore_errors=True)
    env = None if fast else {**os.environ, "TRACEVALS_INGEST_FAST": "0"}
    tracevals = [str(PROJECT_PYTHON), "-m", "tracevals", "ingest", "--lake", str(lake), "--format", "csv"]
    per = INGEST_CHUNK // SESSIONS_PER_FILE
    return [_ok(run_measured([*tracevals, *map(str, files[i : i + per])], env=env)) for i in range(0, len(files), per)]


def run_tracevals(files: list[Path], tasks: Path, lake: Path) -> tuple[float, float, int]:
    """(wall s, peak RSS MiB, sessions passed)."""
    tracevals = [str(PROJECT_PYTHON), "-m", "tracevals"]
    steps = run_ingest(files, lake)
    score = [
        "score",
        "--lake",
        str(lake),
        "--tasks",
        str(tasks),
        "--evaluators",
        "trajectory_match",
        "--summary",
        "--format",
        "json",
    ]
    steps.append(_ok(run_measured([*tracevals, *score])))
    passed = sum(int(row["passed"]) for row in json.loads(steps[-1].stdout))
    SPLIT[len(files) * SESSIONS_PER_FILE] = {
        "ingest_s": sum(s.wall_s for s in steps[:-1]),
        "ingest_mb": max(s.peak_rss_mb for s in steps[:-1]),
        "score_s": steps[-1].wall_s,
        "score_mb": steps[-1].peak_rss_mb,
    }
    return sum(s.wall_s for s in steps), max(s.peak_rss_mb for s in steps), passed


def run_agentevals(python: Path, files: list[Path], evalset: Path) -> tuple[float, float, int]:
    cmd = [
        str(python.parent / "agentevals"),
        "run",
        *map(str, files),
        "--format",
        "otlp-json",
        "--eval-set",
        str(evalset),
        "-m",
        "tool_trajectory_avg_score",
        "--trajectory-match-type",
        "IN_ORDER",
        "--output",
        "summary",
    ]
    done = run_measured(cmd, timeout=3600)
    passed = done.stdout.count("[PASS]")
    if done.returncode not in (0, 1) or passed == 0:  # 1: some metric failed (counted below)
        raise RuntimeError(f"agentevals run exited {done.returncode}: {last_lines(done.stderr or done.stdout)}")
    return done.wall_s, done.peak_rss_mb, passed


def _fits(
    section: Section, side: str, n: int, runs: int, last: dict[str, tuple[int, float]], deadline: float | None
) -> bool:
    """Whether `runs` runs at `n` sessions, projected linearly from `side`'s latest run, end before the
    deadline; if not, the results say what was skipped and why."""
    if deadline is None or side not in last:
        return True
    done_n, seconds = last[side]
    projected = seconds * n / done_n * runs
    left = deadline - time.time()
    if projected <= left:
        return True
    section.notes.append(
        f"{side} at {n:,} sessions: not run — projected {projected / 60:.1f} min from its "
        f"{done_n:,}-session run ({done_n / seconds:,.0f} sessions/s), more than the "
        f"{max(left, 0) / 60:.1f} min left of the `make bench` budget."
    )
    return False


def _ok(done: Measured) -> Measured:
    if done.returncode != 0:
        raise RuntimeError(f"exit {done.returncode}: {last_lines(done.stderr)}")
    return done


# Issue 24's targets, at these sizes: >= 10x agentevals-cli's sessions/s, and no more peak memory than it.
TARGET_SIZES = (10_000, 100_000)
TARGET_RATIO = 10.0


def target_lines(measured: dict[int, tuple[float, float, float | None, float | None]]) -> list[str]:
    """The `target ...` lines (run_all.py's Targets table): one per target size, NOT MET when not measured."""
    lines = []
    for n in TARGET_SIZES:
        speed = f"target end to end >= {TARGET_RATIO:.0f}x agentevals-cli's sessions/s at {n:,} sessions"
        memory = f"target end to end peak memory <= agentevals-cli's at {n:,} sessions"
        got = measured.get(n)
        if got is None or got[2] is None or got[3] is None:
            why = "not measured in this run (see the notes)"
            lines += [f"{speed}: {why} -- NOT MET", f"{memory}: {why} -- NOT MET"]
            continue
        ours, ours_mb, peer, peer_mb = got
        ratio = ours / peer
        lines.append(
            f"{speed}: {ours:,.0f} vs {peer:,.0f} sessions/s, {ratio:.2f}x -- "
            f"{'met' if ratio >= TARGET_RATIO else 'NOT MET'}"
        )
        lines.append(f"{memory}: {ours_mb:,.0f} vs {peer_mb:,.0f} MiB -- {'met' if ours_mb <= peer_mb else 'NOT MET'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="session counts, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="runs per size (1 at sizes above 10,000)")
    parser.add_argument("--peer-max", type=int, default=100_000, help="largest size agentevals-cli runs at")
    parser.add_argument("--peer-runs", type=int, default=1, help="agentevals-cli runs per size")
    parser.add_argument("--deadline", type=float, help="epoch seconds: skip a size whose projected time ends later")
    parser.add_argument("--ingest-baseline", action="store_true", help="also ingest with the validating path")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    cmd = (
        f".venv/bin/python bench/compare_e2e.py --sizes {args.sizes} --runs {args.runs} "
        f"--peer-max {args.peer_max} --peer-runs {args.peer_runs}"
    )
    section = Section("e2e", "End to end: tracevals vs agentevals-cli on ADK OTLP/JSON sessions", cmd)
    try:
        python: Path | None = peer_python("agentevals_cli")
        section.versions = distribution_versions(python, ["agentevals-cli", "google-adk"])
    except PeerUnavailable as exc:
        python = None
        section.errors.append(f"agentevals-cli could not be installed: {exc}")
    rows = []
    measured: dict[int, tuple[float, float, float | None, float | None]] = {}  # n -> ours/s, MiB, peer/s, MiB
    work = Path(tempfile.mkdtemp(prefix="tracevals-e2e-"))
    try:
        tasks, evalset = write_expectations(work)
        last: dict[str, tuple[int, float]] = {}  # side -> (sessions, seconds) of its latest run
        for n in sizes:
            runs = args.runs if n <= 10_000 else 1
            if not _fits(section, "tracevals", n, runs, last, args.deadline):
                continue
            files = write_sessions(work / f"s{n}", n)
            ours = [run_tracevals(files, tasks, work / "lake") for _ in range(runs)]
            last["tracevals"] = (n, ours[-1][0])
            if args.ingest_baseline:
                slow = run_ingest(files, work / "lake-validating", fast=False)
                shutil.rmtree(work / "lake-validating", ignore_errors=True)
                fast_s, slow_s = SPLIT[n]["ingest_s"], sum(s.wall_s for s in slow)
                section.notes.append(
                    f"tracevals ingest at {n:,} sessions, same files, same run: {fast_s:.1f} s (peak "
                    f"{SPLIT[n]['ingest_mb']:,.0f} MiB) against {slow_s:.1f} s (peak "
                    f"{max(s.peak_rss_mb for s in slow):,.0f} MiB) by the validating OTLP/JSON path "
                    f"(TRACEVALS_INGEST_FAST=0): {slow_s / fast_s:.1f}x."
                )
            peer: list[tuple[float, float, int]] = []
            if n > args.peer_max:
                projected = ""
                if "agentevals-cli" in last:
                    done_n, seconds = last["agentevals-cli"]
                    projected = f"; projected {seconds * n / done_n / 60:.1f} min from its {done_n:,}-session run"
                note = f"agentevals-cli at {n:,} sessions: not run (--peer-max {args.peer_max:,}){projected}."
                section.notes.append(note)
            elif python is not None and _fits(section, "agentevals-cli", n, args.peer_runs, last, args.deadline):
                try:
                    peer = [run_agentevals(python, files, evalset) for _ in range(args.peer_runs)]
                    last["agentevals-cli"] = (n, peer[-1][0])
                except RuntimeError as exc:
                    section.errors.append(f"agentevals-cli failed at {n:,} sessions: {exc}")
            print(f"{n}: tracevals {ours} agentevals {peer}", file=sys.stderr)
            peer_name = "agentevals-cli" if peer else None
            section.figures.append(
                Figure(
                    f"{n:,} sessions: sessions per second",
                    "sessions/s",
                    [n / w for w, _, _ in ours],
                    True,
                    peer_name,
                    [n / w for w, _, _ in peer],
                )
            )
            section.figures.append(
                Figure(
                    f"{n:,} sessions: peak memory",
                    "MiB",
                    [m for _, m, _ in ours],
                    False,
                    peer_name,
                    [m for _, m, _ in peer],
                )
            )
            rows.append((n, ours[0][2], peer[0][2] if peer else None))
            measured[n] = (statistics.median(n / w for w, _, _ in ours), statistics.median(m for _, m, _ in ours),
                           statistics.median(n / w for w, _, _ in peer) if peer else None,
                           statistics.median(m for _, m, _ in peer) if peer else None)  # fmt: skip
            shutil.rmtree(work / f"s{n}", ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in target_lines(measured):
        print(line)
    table = ["| sessions | passed (tracevals) | passed (agentevals-cli) |", "|---:|---:|---:|"]
    table += [f"| {n:,} | {a:,} | {f'{b:,}' if b is not None else 'not run'} |" for n, a, b in rows]
    section.tables.append("\n".join(table))
    for n, split in SPLIT.items():
        section.notes.append(
            f"tracevals at {n:,} sessions (last run): ingest {split['ingest_s']:.1f} s, peak "
            f"{split['ingest_mb']:,.0f} MiB per process; score {split['score_s']:.1f} s, "
            f"peak {split['score_mb']:,.0f} MiB."
        )
    section.notes += [
        "Sessions: ADK 2.10 recordings S2 and S5 (v2_span_only) with fresh ids, "
        f"{SESSIONS_PER_FILE} per OTLP/JSON file; "
        "both tools read the same files and expect the same calls (names and arguments, in order).",
        f"tracevals ingests at most {INGEST_CHUNK:,} sessions' files per `tracevals ingest` process (its peak memory "
        "is per process); the time of every process is summed. agentevals-cli reads all files in one process.",
        f"agentevals-cli is run at sizes up to {args.peer_max:,} sessions, {args.peer_runs} run(s) each; "
        f"tracevals {args.runs} runs per size up to 10,000 sessions (median), 1 run above.",
    ]
    section.print()
    section.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
