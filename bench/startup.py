"""The CLI's start-up cost, this tree against an earlier one, in one run: what every command pays first.

    .venv/bin/python bench/startup.py [--baseline REV] [--runs 7] [--json FILE]

Times, as whole processes (wall and CPU), `tracevals sql --lake LAKE "select 1"` on a small lake (200
spans) and `python -c "import tracevals.evaluators"`, for this working tree and for REV checked out
in a temporary git worktree (default: the last commit before the redesign of issue 18), run in turn,
pair by pair, so that both see the same machine. Both use this project's virtual environment; each
tree is put first on PYTHONPATH. Prints each figure's median, min and max and the ratio of medians.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PROJECT_PYTHON, ROOT, Figure, Section

COMMANDS = {
    "sql_select_1": ["-c", "from tracevals.cli import main; main()", "sql", "--lake", "{lake}", "select 1"],
    "import_evaluators": ["-c", "import tracevals.evaluators"],
}


def default_baseline() -> str:
    """The parent of the first commit of the redesign (issue 18)."""
    first = subprocess.run(
        ["git", "log", "--reverse", "--format=%H", "--grep", "^Redesign step 1"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    if not first:
        raise SystemExit("no commit 'Redesign step 1' in this history: pass --baseline REV")
    return f"{first[0]}^"


def small_lake(path: Path) -> Path:
    """200 spans of 20 traces, written by this tree's writer (both trees read the same lake format)."""
    sys.path.insert(0, str(ROOT))
    from datetime import datetime, timedelta, timezone

    from tracevals.lake.schema import SPAN_SCHEMA
    from tracevals.lake.writer import LakeWriter

    t0 = datetime(2026, 11, 2, 9, tzinfo=timezone.utc)
    rows = []
    for t in range(20):
        for s in range(10):
            row = {f.name: None for f in SPAN_SCHEMA}
            row.update(
                trace_id=f"{t + 1:032x}", span_id=f"{s + 1:016x}", parent_span_id=None if s == 0 else f"{1:016x}",
                name="tool" if s % 2 else "llm", kind="tool" if s % 2 else "llm", tool_name="get_orders",
                start_time=t0 + timedelta(seconds=t, milliseconds=s),
                end_time=t0 + timedelta(seconds=t, milliseconds=s + 1),
                status_code="unset", attributes="{}", events="[]", links="[]", session_id=f"s-{t}",
            )  # fmt: skip
            rows.append(row)
    LakeWriter(path).write_rows(rows)
    return path


def timed(tree: Path, args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of the project's Python with `tree` first on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([str(PROJECT_PYTHON), *args], env=env, check=True, capture_output=True, cwd=tree)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default=None, help="git revision to compare with (default: before the redesign)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    baseline = args.baseline or default_baseline()
    with tempfile.TemporaryDirectory(prefix="tracevals-startup-") as tmp:
        work = Path(tmp)
        lake = small_lake(work / "lake")
        old = work / "baseline"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(old), baseline], cwd=ROOT, check=True, capture_output=True
        )
        try:
            section = Section("startup", "CLI start-up", f"bench/startup.py --baseline {baseline} --runs {args.runs}")
            for name, template in COMMANDS.items():
                argv = [a.replace("{lake}", str(lake)) for a in template]
                for tree in (ROOT, old):  # once each before timing: the first import compiles bytecode
                    timed(tree, argv)
                results: dict[str, dict[str, list[float]]] = {
                    "now": {"wall": [], "cpu": []},
                    "before": {"wall": [], "cpu": []},
                }
                for _ in range(args.runs):
                    for label, tree in (("now", ROOT), ("before", old)):
                        wall, cpu = timed(tree, argv)
                        results[label]["wall"].append(wall)
                        results[label]["cpu"].append(cpu)
                for measure in ("wall", "cpu"):
                    now, before = results["now"][measure], results["before"][measure]
                    section.figures.append(
                        Figure(
                            f"{name} {measure}",
                            "s",
                            now,
                            higher_is_better=False,
                            peer=f"before ({baseline})",
                            peer_runs=before,
                        )
                    )
                    ratio = statistics.median(now) / statistics.median(before)
                    print(
                        f"{name:<18} {measure:<4}  now median {statistics.median(now):.3f} s "
                        f"(min {min(now):.3f}, max {max(now):.3f})   before median {statistics.median(before):.3f} s "
                        f"(min {min(before):.3f}, max {max(before):.3f})   now/before {ratio:.2f}"
                    )
            section.write(args.json)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, check=False, capture_output=True
            )


if __name__ == "__main__":
    main()
