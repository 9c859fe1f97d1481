"""Scores before and after: the same lakes scored by this tree and by an earlier one, row for row.

    .venv/bin/python bench/scores_identical.py [--baseline REV] [--sessions 20000]

Two lakes: the demo's (`tracevals demo`, written once by this tree: real spans of the order-support agent
with message content, two variants, its task cases kept) and bench/scoring.py's synthetic lake of
`--sessions` sessions in nine shapes (429s, hand-offs, crashes, loops, duplicate sends) with its task
cases. Each lake is copied once per tree and scored there with `tracevals score` (every evaluator, scores
written); the two trees' `scores/` tables must then hold the same rows, every column but `scored_at`.
REV (default: the commit before issue 24's performance work) runs from a `git worktree`, first on
PYTHONPATH. The synthetic lake is compacted first by this tree (`tracevals compact --min-age 0`, as the
hourly compaction leaves a day), so this tree scores its closed hours from their derived tables and the
baseline (whose loader's SQL differs, or that has none) through the views. Prints one line per lake,
`scores identical (<lake>): yes (N rows)` or what differs, and a target line; exits 1 when they differ. A rule
changed on purpose (`ON_PURPOSE`, each printed): its rows' evaluator version is not compared, the rest of them is.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PROJECT_PYTHON, ROOT

ISSUE_24_BASE = "b588f12"  # main when issue 24's work began
# Rules changed on purpose since the baseline, by evaluator: the version their rows carry is not compared (it
# changed with the rule); every other column is, so a verdict the change moved shows as a difference still.
ON_PURPOSE = {
    "retry_discipline": "v5: calls polled until the same calls return a new outcome are no loop",
    "session_completeness": "v3: an agent that ends on its tools' results reached an answer; v4: a session-end "
    "marker with an ERROR status ends its session in error",
}


def score(tree: Path, lake: Path, tasks: Path | None) -> None:
    command = [str(PROJECT_PYTHON), "-m", "tracevals", "score", "--lake", str(lake), "--summary"]
    command += ["--tasks", str(tasks)] if tasks else []
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
    if done.returncode != 0:
        raise SystemExit(f"tracevals score ({tree.name}) on {lake.name} failed: {done.stderr[-600:]}")


def score_rows(lake: Path) -> list[tuple[str, ...]]:
    import duckdb

    source = f"read_parquet('{lake}/scores/**/*.parquet', union_by_name = true)"
    con = duckdb.connect()
    columns = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall() if r[0] != "scored_at"]
    listed = ", ".join(f'"{c}"' for c in columns)
    rows = con.execute(f"SELECT {listed} FROM {source}").fetchall()
    evaluator, version = columns.index("evaluator"), columns.index("evaluator_version")
    return sorted(
        tuple(
            "(changed on purpose)" if i == version and row[evaluator] in ON_PURPOSE else str(v)
            for i, v in enumerate(row)
        )
        for row in rows
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default=ISSUE_24_BASE)
    parser.add_argument("--sessions", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tracevals-scores-") as tmp:
        work = Path(tmp)
        demo = work / "demo"
        done = subprocess.run([str(PROJECT_PYTHON), "-m", "tracevals", "demo", "--out", str(demo)], cwd=work,
                              capture_output=True, text=True)  # fmt: skip
        if done.returncode not in (0, 1):
            raise SystemExit(f"tracevals demo failed: {done.stderr[-600:]}")
        sys.path.insert(0, str(ROOT))
        import scoring as synthetic

        synth = work / "synthetic"
        spans = synthetic.write_lake(synth, args.sessions, seed=7)
        compact = [str(PROJECT_PYTHON), "-m", "tracevals", "compact", "--lake", str(synth), "--min-age", "0"]
        done = subprocess.run([*compact, "--retention", "0"], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"tracevals compact failed: {done.stderr[-600:]}")
        tasks = work / "cases.jsonl"
        tasks.write_text("".join(json.dumps(c.raw) + "\n" for c in synthetic.cases()), encoding="utf-8")
        old = work / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", str(old), args.baseline], cwd=ROOT, check=True,
                       capture_output=True)  # fmt: skip
        differ = 0
        try:
            for name, lake, cases in (("demo", demo / "lake", None), (f"synthetic, {spans:,} spans", synth, tasks)):
                rows = {}
                for label, tree in (("now", ROOT), ("before", old)):
                    copy = work / f"{lake.name}-{label}"
                    shutil.copytree(lake, copy)
                    score(tree, copy, cases)
                    rows[label] = score_rows(copy)
                if rows["now"] == rows["before"]:
                    print(f"scores identical ({name}): yes ({len(rows['now']):,} rows)")
                else:
                    differ += 1
                    now, before = set(rows["now"]), set(rows["before"])
                    print(f"scores identical ({name}): NO: {len(now - before)} rows only now, "
                          f"{len(before - now)} only before; e.g. {sorted(now ^ before)[:2]}")  # fmt: skip
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, check=False,
                           capture_output=True)  # fmt: skip
        for evaluator, why in ON_PURPOSE.items():
            print(f"changed on purpose: {evaluator} ({why}): its version not compared, its verdicts are")
        verdict = "met" if not differ else "NOT MET"
        print(f"target scores identical before ({args.baseline}) and after: {2 - differ} of 2 lakes -- {verdict}")
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
