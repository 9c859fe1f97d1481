"""What users wait for on a small lake: `sql`, `score`, `report`, `gate` on a lake as `tracevals run` leaves it.

    .venv/bin/python bench/small_lake.py [--runs 50] [--attempts 25] [--repeat 5] [--baseline REV] [--keep DIR]

The lake is real: `--runs` runs of `tracevals run` (the demo's order-support agent against the simulated
model server, the first five demo tasks x 5 attempts = 25 attempts a run, alternately two variants),
each as the command leaves it (its files merged into one per hour, its scores written, its cases kept);
the span files are counted as listed and as a reader reads them (the merged inputs a compaction keeps for
earlier readers left out).
Then each command runs as a whole process, `--repeat` times, for this tree and for REV (a `git
worktree`, default: the commit before issue 24's work; `--baseline none` skips it), pair by pair, so
both see the same machine:

  startup    `python -c "import tracevals.cli"` (what every command pays before it reads anything)
  imports    `python -c "import duckdb, pyarrow, polars, click, rich.console"`: the core dependencies
             alone, in a process of their own (the part of a command's time no change here can remove)
  sql        `tracevals sql "select count(*) from sessions"` and `sql "select 1"`
  score      `tracevals score --lake L --summary --no-write` (every attempt of the lake scored again)
  report     `tracevals report --lake L --run A --run B --out r.json` (the latest two runs)
  gate       `tracevals gate --lake L --run A --run B --baseline baseline --candidate candidate`
  duckdb     plain DuckDB in a process of its own reading the same files a reader of the lake reads
             (`count(*)` of the spans and the scores, the merged inputs a compaction keeps for earlier
             readers left out, as tracevals leaves them out): the floor the targets compare with. Until
             2026-12-07 it read every file listed, those inputs included (the run of record
             at 96bd335: 1310 span files of 290,308 rows, where the commands read 1 of 10,888), a floor
             two to three times the one it names

Targets: a start-up of <= 0.3 s, and (issue 38) each command within 2x of plain DuckDB reading the same
files, as whole processes (issue 24 asked for 3x). A verdict line per target is printed beside its
figure. The scores written by `tracevals score --lake L` (once per tree, each on its own copy of the
lake) are compared with the baseline tree's, row for row (`scores identical`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PROJECT_PYTHON, ROOT, Figure, Section

ISSUE_24_BASE = "b588f12"  # main when issue 24's work began


def _span_files(lake: Path, read: list[str]) -> str:
    """The span files listed and those a reader reads (`read`: the merged inputs kept for earlier readers left
    out), with their rows."""
    import pyarrow.parquet as pq

    sys.path.insert(0, str(ROOT))
    from tracevals.lake.lake import Lake

    every = [info.path for info in Lake.open(lake).list_parquet("spans", replaced=True)]
    rows = [sum(pq.read_metadata(path).num_rows for path in paths) for paths in (every, read)]
    return f"span files {len(every)} ({rows[0]:,} rows), of which a reader reads {len(read)} ({rows[1]:,} rows)"


def _read_files(lake: Path, sub: str) -> list[str]:
    """The files of `sub` a reader of the lake reads (`Lake.list_parquet`: the merged inputs kept for earlier
    readers left out), for the plain-DuckDB floor to read the same ones."""
    sys.path.insert(0, str(ROOT))
    from tracevals.lake.lake import Lake

    return [info.path for info in Lake.open(lake).list_parquet(sub)]


def build_lake(lake: Path, work: Path, runs: int, attempts: int) -> list[str]:
    """`runs` real `tracevals run`s into `lake`, two at a time; returns the run ids in order."""
    sys.path.insert(0, str(ROOT))
    from tracevals.demo import BASELINE, CANDIDATE  # importing it registers the demo's two model profiles
    from tracevals.simulator import SimulatedModelServer

    tasks = (ROOT / "tracevals" / "demo" / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    k = 5
    chosen = tasks[: max(1, attempts // k)]
    (work / "tasks.jsonl").write_text("\n".join(chosen) + "\n", encoding="utf-8")
    ids = [f"run-{i:03d}" for i in range(runs)]
    with SimulatedModelServer() as server:

        def one(i: int) -> None:
            variant, model = ("baseline", BASELINE) if i % 2 == 0 else ("candidate", CANDIDATE)
            command = [
                str(PROJECT_PYTHON), "-m", "tracevals", "run", "--tasks", str(work / "tasks.jsonl"),
                "--agent", "tracevals.demo.agent:order_support_agent", "-k", str(k), "--variant", variant,
                "--seed", str(i), "--setting", f"base_url={server.base_url}", "--setting", f"model={model}",
                "--lake", str(lake), "--run-id", ids[i], "--format", "json",
            ]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, cwd=work, timeout=600)
            if done.returncode not in (0, 1):  # 1: a gate-less run whose tasks failed is still a run
                raise SystemExit(f"tracevals run {ids[i]} failed ({done.returncode}): {done.stderr[-800:]}")

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(one, range(runs)))
    _check_attempts(lake)
    return ids


def _check_attempts(lake: Path) -> None:
    """Stop unless the lake's attempts reached the model and called tools: a lake of attempts that all failed
    at their first model call (a model name the simulator does not serve: 404) holds 4 spans an attempt and
    times nothing a user's lake makes the commands do."""
    import duckdb

    spans = f"read_parquet('{lake}/spans/**/*.parquet', union_by_name = true)"
    [(attempts, tools, refused)] = duckdb.sql(
        f"SELECT count(DISTINCT trace_id), count(*) FILTER (WHERE kind = 'tool'), "
        f"count(DISTINCT trace_id) FILTER (WHERE status_message LIKE '%does not exist%') FROM {spans}"
    ).fetchall()
    if not tools or refused:
        raise SystemExit(f"the lake's {attempts} attempts made {tools} tool calls and {refused} found no model: "
                         "the simulator serves none of the models asked for")  # fmt: skip


def timed(tree: Path, args: list[str], cwd: Path) -> tuple[float, int, str]:
    """(wall seconds, exit code, stderr tail) of one run of the project's Python with `tree` first on PYTHONPATH."""
    # As an installed package runs: its bytecode written once (the untimed first run) and read after; an
    # environment that forbids writing it (PYTHONDONTWRITEBYTECODE) would time compiling every module.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    started = time.perf_counter()
    done = subprocess.run([str(PROJECT_PYTHON), *args], env=env, capture_output=True, text=True, cwd=cwd)
    return time.perf_counter() - started, done.returncode, done.stderr[-400:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--attempts", type=int, default=25)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", default=ISSUE_24_BASE, help="git revision to compare with ('none': skip)")
    parser.add_argument("--keep", type=Path, default=None, help="build the lake here (reused if present)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tracevals-small-lake-") as tmp:
        work = Path(tmp)
        lake = args.keep or work / "lake"
        started = time.perf_counter()
        if args.keep is not None and (lake / "spans").is_dir():
            import duckdb

            ids = [r[0] for r in duckdb.sql(f"select distinct run_id from read_parquet('{lake}/spans/**/*.parquet') "
                                            "where run_id is not null order by 1").fetchall()]  # fmt: skip
            print(f"lake: reusing {lake}")
        else:
            ids = build_lake(lake, work, args.runs, args.attempts)
            print(f"lake: {args.runs} runs x {args.attempts} attempts built in {time.perf_counter() - started:.0f} s")
        files = sorted(lake.rglob("*.parquet"))
        size = sum(p.stat().st_size for p in files)
        print(f"lake: {len(files)} Parquet files, {size / 1e6:.1f} MB")
        read = {sub: _read_files(lake, sub) for sub in ("spans", "scores")}
        print(f"lake: {_span_files(lake, read['spans'])}")
        out = work / "out"
        out.mkdir()
        cli = ["-c", "from tracevals.cli import main; main()"]
        last, before_last = (ids[-1], ids[-2]) if len(ids) >= 2 else (ids[-1], ids[-1])
        print(f"floor: plain DuckDB over the files a reader reads: {len(read['spans'])} of spans, "
              f"{len(read['scores'])} of scores")  # fmt: skip
        plain = "import duckdb; con = duckdb.connect(); " + "; ".join(
            f"con.execute('select count(*) from read_parquet(?)', [{files!r}]).fetchall()"
            for files in read.values()
            if files
        )
        two_runs = ["--run", before_last, "--run", last]
        commands: dict[str, list[str]] = {
            "startup": ["-c", "import tracevals.cli"],
            "imports": ["-c", "import duckdb, pyarrow, polars, click, rich.console"],
            "duckdb": ["-c", plain],
            "sql select 1": [*cli, "sql", "--lake", str(lake), "select 1"],
            "sql sessions": [*cli, "sql", "--lake", str(lake), "select count(*) from sessions"],
            "score": [*cli, "score", "--lake", str(lake), "--summary", "--no-write"],
            "report": [*cli, "report", "--lake", str(lake), *two_runs, "--out", str(out / "r.json")],
            "gate": [
                *cli,
                "gate",
                "--lake",
                str(lake),
                *two_runs,
                "--baseline",
                "baseline",
                "--candidate",
                "candidate",
            ],
        }
        trees = [("now", ROOT)]
        old = work / "baseline"
        if args.baseline != "none":
            subprocess.run(["git", "worktree", "add", "--detach", str(old), args.baseline], cwd=ROOT, check=True,
                           capture_output=True)  # fmt: skip
            trees.append(("before", old))
        try:
            walls: dict[str, dict[str, list[float]]] = {name: {label: [] for label, _ in trees} for name in commands}
            for name, argv in commands.items():
                for label, tree in trees:  # once each before timing (bytecode, page cache)
                    _, code, err = timed(tree, argv, work)
                    if code not in (0, 1):
                        raise SystemExit(f"{name} ({label}) exited {code}: {err}")
                for _ in range(args.repeat):
                    for label, tree in trees:
                        wall, _, _ = timed(tree, argv, work)
                        walls[name][label].append(wall)
            section = Section(
                "small-lake", "Commands on a small lake", " ".join(["bench/small_lake.py", *sys.argv[1:]])
            )
            med = {name: {label: statistics.median(v) for label, v in runs.items()} for name, runs in walls.items()}
            for name in commands:
                now = walls[name]["now"]
                before = walls[name].get("before")
                section.figures.append(
                    Figure(f"{name} wall", "s", now, higher_is_better=False,
                           peer=f"before ({args.baseline})" if before else "", peer_runs=before or [])
                )  # fmt: skip
                ratio = f"   now/before {med[name]['now'] / med[name]['before']:.2f}" if before else ""
                was = f"   before median {med[name]['before']:.3f} s" if before else ""
                spread = f"(min {min(now):.3f}, max {max(now):.3f})"
                print(f"{name:<14} now median {med[name]['now']:.3f} s {spread}{was}{ratio}")
            startup = med["startup"]["now"]
            floor = med["duckdb"]["now"]
            verdict = "met" if startup <= 0.3 else "NOT MET"
            print(f"target start-up <= 0.3 s: {startup:.3f} s -- {verdict}")
            imports = med["imports"]["now"]
            print(
                f"the core dependencies' imports alone (duckdb, pyarrow, polars, click, rich): {imports:.3f} s, "
                f"{imports / floor:.2f}x plain DuckDB: what a command that scores (score, report, gate) pays before "
                "it reads a file"
            )
            for name in ("sql select 1", "sql sessions", "score", "report", "gate"):
                beyond = med[name]["now"] - startup
                ok = med[name]["now"] <= 2 * floor
                print(
                    f"target {name} <= 2x plain DuckDB ({floor:.3f} s): "
                    f"{beyond:.3f} s beyond, {med[name]['now'] / floor:.2f}x DuckDB -- {'met' if ok else 'NOT MET'}"
                )
            if len(trees) == 2:
                lakes = {}
                for label, tree in trees:  # `score` writes: each tree scores its own copy of the lake
                    lakes[label] = work / f"lake-{label}"
                    shutil.copytree(lake, lakes[label])
                    timed(tree, [*cli, "score", "--lake", str(lakes[label]), "--summary"], work)
                same = _scores_equal(lakes["now"], lakes["before"])
                print(f"scores identical (tracevals score, this tree vs {args.baseline}): {same}")
            section.write(args.json)
        finally:
            if len(trees) == 2:
                subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, check=False,
                               capture_output=True)  # fmt: skip


def _scores_equal(a: Path, b: Path) -> str:
    """'yes', or how the score rows of the two lakes differ (scoring times and file names aside)."""
    import duckdb

    def rows(lake: Path) -> list[tuple[object, ...]]:
        con = duckdb.connect()
        source = f"read_parquet('{lake}/scores/**/*.parquet', union_by_name=true)"
        cols = [r[0] for r in con.execute(f"describe select * from {source}").fetchall()]
        keep = [c for c in cols if c not in ("scored_at", "source_file", "filename") and not c.endswith("_at")]
        listed = ", ".join(f'"{c}"' for c in keep)
        return con.execute(f"select {listed} from {source} order by all").fetchall()

    ra, rb = rows(a), rows(b)
    if ra == rb:
        return f"yes ({len(ra)} rows)"
    only_a, only_b = ({json.dumps([str(v) for v in r]) for r in rows} for rows in (ra, rb))
    return f"NO: {len(only_a - only_b)} rows only in this tree's, {len(only_b - only_a)} only in the baseline's"


if __name__ == "__main__":
    main()
