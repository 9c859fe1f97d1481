"""Run every benchmark, ours and the comparisons with the tools users would otherwise pick, and write
bench/RESULTS.md: the machine, the versions, and per figure the median of the runs, the ratio to its
comparison, and the command that produced it.

    .venv/bin/python bench/run_all.py                 # what `make bench` runs
    .venv/bin/python bench/run_all.py --setup-only    # install the peers into bench/.venvs/ and stop
    .venv/bin/python bench/run_all.py --only scoring,instrumentation --budget-min 10
    .venv/bin/python bench/run_all.py --render        # rewrite RESULTS.md from the last run's bench/out/run.json

The peers are installed first (in parallel, each into its own bench/.venvs/<peer>/ from
bench/peers/<peer>.txt; an unchanged one is skipped). A peer that cannot be installed or run is
reported in RESULTS.md with its error, and everything else still runs. `--budget-min` (28 by default,
so that `make bench` stays under 30 minutes on a 2-core machine) is passed on as a deadline: the
largest sizes (10^5 sessions end to end, 10^7 spans on the scale curve) run only when their time,
projected from the size below, fits in what is left; otherwise RESULTS.md gives the projection.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    BENCH,
    OUT,
    PROJECT_PYTHON,
    ROOT,
    PeerUnavailable,
    distribution_versions,
    fmt,
    last_lines,
    machine,
    peer_python,
    tracevals_commit,
)

RESULTS = BENCH / "RESULTS.md"
WHOLE_RUN_MIN = 30.0  # `make bench`, every benchmark, on a 2-core machine
PY = ".venv/bin/python"
# (key, script, arguments): the comparisons, cheapest first; e2e and scale get the deadline
COMPARISONS = [
    ("startup", "startup.py", ["--runs", "7"]),  # this tree against the one before the redesign (issue 18)
    ("ingest", "compare_ingest.py", ["--spans", "102000", "--phoenix-spans", "2550", "--runs", "3"]),
    ("scoring", "compare_scoring.py", ["--per-mode", "3000", "--repeat", "3"]),
    ("instrumentation", "compare_instrumentation.py", ["--processes", "3", "--rounds", "20", "--calls", "20"]),
    ("e2e", "compare_e2e.py", ["--sizes", "1000,10000,100000", "--runs", "3", "--peer-runs", "1"]),
    # the collector's ingest up to 10^6 spans: at 10^7 it takes 3.5 min of the 30 (no target reads it, the
    # ingest targets have sections of their own), and the deadline projects only the comparisons, not
    # tracevals' own benchmarks after them (~11 min): run by hand with `--ingest-max 10000000`
    ("scale", "compare_scale.py", ["--sizes", "100000,1000000,10000000", "--ingest-max", "1000000"]),
]
# tracevals' own benchmarks (other files in bench/), each run `runs` times; `figures` are regexes over
# their output whose first group is a number (the median over the runs is reported)
OURS: list[dict[str, Any]] = [
    {
        "key": "own-ingest",
        "script": "ingest.py",
        "args": ["--seconds", "10"],  # as docs/collector.md runs it (a run's fixed costs weigh half of 5 s)
        "runs": 3,
        "figures": {
            "ingest to committed Parquet, collector on one core (spans/s per core)": (
                r"committed Parquet:\s*([\d,.]+) spans/s per core"
            ),
            "ingest to committed Parquet, collector on one core (spans/s wall)": (
                r"committed Parquet:.*?spans/s per core \(([\d,.]+) spans/s wall\)"
            ),
            "ingest, collector free on every core (spans/s per core)": (
                r"collector free:\s*([\d,.]+) spans/s per core"
            ),
            "raw protobuf decode floor (spans/s per core)": r"decode floor:\s*([\d,.]+)",
        },
    },
    {
        "key": "own-instrumentation",
        "script": "instrumentation_overhead.py",
        "args": ["--rounds", "60"],
        "runs": 3,
        "figures": {
            "@tool: µs added per tool span (CPU)": r"@tool \(traced\):.*?overhead\s+([\d.]+) µs",
            "ToolSet.call: µs added per tool span (CPU)": r"ToolSet\.call \(traced\):.*?overhead\s+([\d.]+) µs",
        },
    },
    {
        "key": "own-small-lake",
        "script": "small_lake.py",
        # the targets are against plain DuckDB in the same run; the tree before issue 24 (the script's default
        # baseline) took 28 to 58 s a command, 18 of `make bench`'s 35 minutes: `bench/scores_identical.py`
        # compares the verdicts with it
        "args": ["--runs", "50", "--attempts", "25", "--repeat", "3", "--baseline", "none"],
        "runs": 1,
        "figures": {
            f"{name} on a lake of 50 runs x 25 attempts, wall (s)": rf"(?m)^{name}\s+now median ([\d.]+) s"
            for name in ("startup", "duckdb", "sql select 1", "sql sessions", "score", "report", "gate")
        },
    },
    {
        "key": "own-wal-replay",
        "script": "wal_replay.py",
        "args": ["--spans", "500000"],
        "runs": 1,
        "figures": {
            "WAL replay, start to every span committed (spans/s wall)": (
                r"start to every span committed:\s*([\d,]+) spans/s wall"
            ),
            "WAL replay, start to every span committed (spans/s per collector CPU-second)": (
                r"start to every span committed:.*?wall, ([\d,]+) spans/s per"
            ),
            "live ingest of the same spans, same run (spans/s wall)": r"baseline ingest .*?: ([\d,]+) spans/s wall",
            "receivers accepting after the start (s)": r"a request acknowledged after ([\d.]+) s",
        },
    },
    {
        "key": "own-live-scoring",
        "script": "live_scoring.py",
        "args": ["--sizes", "20000,100000"],
        "runs": 1,
        "figures": {
            "live scoring, 100,000 sessions (sessions/s)": r"target live scoring >= 10000 sessions/s: (\d+) sessions/s"
        },
    },
    {
        "key": "own-ingest-json",
        "script": "ingest_json.py",
        "args": [],
        "runs": 1,
        "figures": {
            "ingest OTLP/JSON (spans/s per core)": (
                r"target ingest OTLP/JSON >= 100000 spans/s per core:\s*([\d,]+) spans/s per core"
            ),
            "OTLP/JSON / protobuf files, same spans": r"protobuf files' rate:\s*([\d.]+)x",
        },
    },
    {
        # the nightly job on Ray Data and Spark beside one process (docs/scale.md): about 12 minutes on 2 cores
        # for 10^6 spans, so only when asked: TRACEVALS_BENCH_ENGINES=1 make bench
        "key": "own-engines",
        "script": "engines.py",
        "args": ["--spans", "1000000"],
        "runs": 1,
        "optional": "TRACEVALS_BENCH_ENGINES",
        "figures": {
            f"nightly job, {engine}, {w} workers, 10^6 spans (CPU s, process tree)": (
                rf"(?m)^{engine}\s+{w}\s+[\d.]+\s+([\d.]+)\s"
            )
            for engine in ("local", "ray", "spark")
            for w in (1, 2)
        },
    },
    {"key": "own-scores-identical", "script": "scores_identical.py", "args": [], "runs": 1, "figures": {}},
    {"key": "own-queries", "script": "queries_scale.py", "args": ["--spans", "1000000"], "runs": 1, "figures": {}},
    {
        "key": "own-faults",
        "script": "faults.py",
        "args": [],
        "runs": 1,
        "figures": {
            "acknowledged spans lost, every fault scenario (target 0)": r"lost in every scenario:\s*(\d+)",
            "SIGKILLs survived (send, replay, compaction)": r"(?m)^kills:\s*(\d+)",
            "peak RSS under compressed overload, limit_mib 512 (MiB)": r"compressed overload:\s*(\d+) MiB",
        },
    },
    {
        "key": "own-scoring",
        "script": "scoring.py",
        "args": ["--sessions", "100000", "--loop-sessions", "10000"],
        "runs": 1,
        "figures": {},
    },
]
PEER_ENVS = ["phoenix", "agentevals", "pydantic_evals", "openinference", "openllmetry", "agentevals_cli"]


def setup(peers: list[str]) -> dict[str, dict[str, Any]]:
    """Install every peer in parallel (network-bound); per peer: seconds and an error, if any."""

    def one(peer: str) -> tuple[str, dict[str, Any]]:
        started = time.perf_counter()
        try:
            peer_python(peer)
            return peer, {"seconds": time.perf_counter() - started, "error": None}
        except (PeerUnavailable, OSError, subprocess.TimeoutExpired) as exc:
            return peer, {"seconds": time.perf_counter() - started, "error": str(exc)}

    with ThreadPoolExecutor(max_workers=len(peers)) as pool:
        return dict(pool.map(one, peers))


def run_comparison(key: str, script: str, args: list[str], deadline: float) -> dict[str, Any]:
    out = OUT / f"{key}.json"
    out.unlink(missing_ok=True)
    extra = ["--deadline", f"{deadline:.0f}"] if key in ("e2e", "scale") else []
    cmd = [str(PROJECT_PYTHON), str(BENCH / script), *args, *extra, "--json", str(out)]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    (OUT / f"{key}.log").write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    if done.returncode != 0 or not out.exists():
        return {
            "key": key,
            "title": key,
            "command": " ".join([PY, f"bench/{script}", *args]),
            "figures": [],
            "tables": [],
            "notes": [],
            "versions": {},
            "seconds": seconds,
            "load": (load, os.getloadavg()[0]),
            "errors": [f"`bench/{script}` failed (exit {done.returncode}): {last_lines(done.stderr, 4)}"],
            "targets": verdicts(done.stdout),
        }
    section: dict[str, Any] = json.loads(out.read_text())
    section.update(seconds=seconds, load=(load, os.getloadavg()[0]), targets=verdicts(done.stdout))
    return section


def run_ours(spec: dict[str, Any]) -> dict[str, Any]:
    script = BENCH / spec["script"]
    command = " ".join([PY, f"bench/{spec['script']}", *spec["args"]])
    result: dict[str, Any] = {"key": spec["key"], "command": command, "figures": {}, "output": "", "error": None}
    if not script.exists():
        result["error"] = f"bench/{spec['script']} is not there"
        return result
    values: dict[str, list[float]] = {name: [] for name in spec["figures"]}
    started = time.perf_counter()
    for _ in range(spec["runs"]):
        done = subprocess.run(
            [str(PROJECT_PYTHON), str(script), *spec["args"]], capture_output=True, text=True, cwd=ROOT, timeout=1800
        )
        result["output"] = done.stdout.strip()
        if done.returncode not in (0, 1):  # 1: a target not met, which the output says
            result["error"] = f"exit {done.returncode}: {last_lines(done.stderr, 4)}"
            break
        if not result["output"]:
            result["error"] = "it printed nothing (exit 0): no figures to report"
            break
        for name, pattern in spec["figures"].items():
            match = re.search(pattern, done.stdout)
            if match:
                values[name].append(float(match.group(1).replace(",", "")))
    result["seconds"] = time.perf_counter() - started
    result["figures"] = {name: v for name, v in values.items() if v}
    result["targets"] = verdicts(result["output"])
    return result


# A benchmark states each target it measures on one line: `target <what>: <figure> -- met` (or `NOT MET`)
_VERDICT = re.compile(r"(?m)^target (.+?): (.+) -- (met|NOT MET)\s*$")


def verdicts(output: str) -> list[dict[str, str]]:
    """The target lines of a benchmark's output, as printed (the last run's, for one run several times)."""
    return [{"target": m[0], "figure": m[1], "verdict": m[2]} for m in _VERDICT.findall(output)]


# ---------------------------------------------------------------- RESULTS.md


def winner(f: dict[str, Any]) -> str:
    ratio = f.get("ratio")
    if not f.get("peer") or ratio is None:
        return "—" if f.get("peer") else ""
    if ratio >= 1.05:
        return "tracevals"
    if ratio <= 0.95:
        return f"**{f['peer']}**"
    return "tie (within 5%)"


def figure_rows(section: dict[str, Any]) -> list[str]:
    rows = [
        "| figure | tracevals (median) | runs | comparison | comparison (median) | advantage | better |",
        "|---|---:|---:|---|---:|---:|---|",
    ]
    for f in section["figures"]:
        runs = ", ".join(fmt(x) for x in f["runs"])
        peer = f.get("peer") or ""
        peer_median = fmt(f["peer_median"]) if peer else ""
        ratio = f"{f['ratio']:.2f}×" if f.get("ratio") is not None else ("n/a" if peer else "")
        rows.append(
            f"| {f['name']} | {fmt(f['median'])} {f['unit']} | {runs} | {peer} | {peer_median} | {ratio} "
            f"| {winner(f)} |"
        )
    return rows


def render(info: dict[str, Any], sections: list[dict[str, Any]], ours: list[dict[str, Any]]) -> str:
    lines = [
        "# Benchmark results",
        "",
        f"Generated by `make bench` (`{PY} bench/run_all.py`) on {info['date']} in {info['minutes']:.1f} min "
        f"(budget {info['budget']} min). Do not edit: rerun. "
        "How to read it: [docs/benchmarks.md](../docs/benchmarks.md).",
        "",
        "**advantage** is tracevals ÷ comparison for rates and comparison ÷ tracevals for times and memory: "
        "above 1× tracevals is better, below 1× the comparison is (**bold** in *better*). Every figure is the "
        "median of the runs listed beside it; each section names the command that produced it.",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v} |" for k, v in info["machine"].items()]
    lines += [f"| load average (1 min) at start / end | {info['load'][0]:.2f} / {info['load'][1]:.2f} |", ""]
    if max(info["load"]) > 1.5 * (os.cpu_count() or 1):
        lines += [
            "The machine was shared with other work while this ran (load average above the core count): "
            "wall-clock figures carry that load, CPU-time figures much less.",
            "",
        ]
    lines += ["## Versions", "", "| | |", "|---|---|"]
    versions = dict(info["versions"])
    for s in sections:  # a peer environment's copy of a shared package is listed only if it differs
        for k, v in s.get("versions", {}).items():
            versions.setdefault(k if versions.get(k, v) == v else f"{k} ({s['key']})", v)
    lines += [f"| {k} | {v} |" for k, v in versions.items()]
    lines += ["", "## Targets", ""]
    targets = [(s["command"], t) for s in sections for t in s.get("targets", [])]
    targets += [(o["command"], t) for o in ours for t in o.get("targets", [])]
    if info.get("whole"):  # a whole `make bench`: its own duration is a target (issue 24)
        took = info["minutes"]
        verdict = "met" if took <= WHOLE_RUN_MIN else "NOT MET"
        targets.append(
            (
                "make bench",
                {"target": f"make bench <= {WHOLE_RUN_MIN:.0f} min", "figure": f"{took:.1f} min", "verdict": verdict},
            )
        )
    if targets:
        lines += ["| target | figure | verdict | command |", "|---|---|---|---|"]
        lines += [
            f"| {t['target']} | {t['figure']} | {'met' if t['verdict'] == 'met' else '**NOT MET**'} | `{cmd}` |"
            for cmd, t in targets
        ]
        missed = sum(t["verdict"] != "met" for _, t in targets)
        lines += ["", f"{len(targets) - missed} of {len(targets)} targets met in this run."]
    else:
        lines.append("- No benchmark printed a target line.")
    lines += ["", "## Where a peer wins", ""]
    wins = [
        (s, f)
        for s in sections
        for f in s["figures"]
        if f.get("peer") and f.get("ratio") is not None and f["ratio"] <= 0.95
    ]
    if wins:
        lines += [
            f"- {s['title'].split(':')[0]}: **{f['peer']}** beats tracevals on *{f['name']}* "
            f"({fmt(f['peer_median'])} vs {fmt(f['median'])} {f['unit']}, {f['ratio']:.2f}×)."
            for s, f in wins
        ]
    else:
        lines.append("- Nowhere in this run.")
    lines += [
        "",
        "What would close each gap is tracked on issue 9 and in [docs/benchmarks.md](../docs/benchmarks.md#gaps).",
        "",
    ]
    for s in sections:
        lines += [
            f"## {s['title']}",
            "",
            f"Command: `{s['command']}` ({s['seconds']:.0f} s; load average {s['load'][0]:.1f} → {s['load'][1]:.1f})",
            "",
        ]
        lines += [f"- **not run / error**: {e}" for e in s.get("errors", [])]
        if s.get("errors"):
            lines.append("")
        if s["figures"]:
            lines += [*figure_rows(s), ""]
        for table in s.get("tables", []):
            lines += [table, ""]
        lines += [f"- {n}" for n in s.get("notes", [])]
        lines.append("")
    lines += [
        "## tracevals' own benchmarks",
        "",
        "The benchmarks beside the comparisons in bench/, run as their docs describe (smaller sizes where "
        "noted), their output kept as printed.",
        "",
    ]
    for o in ours:
        took = f" ({o['seconds']:.0f} s)" if "seconds" in o else ""
        lines += [f"### `{o['command']}`{took}", ""]
        if o.get("error"):
            lines += [f"- **not run / error**: {o['error']}", ""]
        for name, values in o["figures"].items():
            lines.append(
                f"- {name}: **{fmt(statistics.median(values))}** (median of {', '.join(fmt(v) for v in values)})"
            )
        if o["output"]:
            lines += ["", "```", o["output"][-3000:], "```"]
        lines.append("")
    lines += ["## Peer set-up", "", "| peer environment | requirements | install | result |", "|---|---|---:|---|"]
    for peer, r in info["setup"].items():
        result = "ok" if not r["error"] else f"**failed**: {r['error']}"
        lines.append(f"| bench/.venvs/{peer} | bench/peers/{peer}.txt | {r['seconds']:.0f} s | {result} |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-min", type=float, default=28.0, help="the whole run's budget, minutes")
    parser.add_argument("--only", help="comma-separated: ingest,scoring,instrumentation,e2e,scale,ours")
    parser.add_argument("--setup-only", action="store_true", help="install the peers and stop")
    parser.add_argument("--render", action="store_true", help="rewrite the results from bench/out/run.json")
    args = parser.parse_args(argv)
    saved = OUT / "run.json"
    if args.render:  # after a change to the layout: no benchmark runs
        run = json.loads(saved.read_text())
        target = RESULTS if not run["partial"] else OUT / "RESULTS.partial.md"
        target.write_text(render(run["info"], run["sections"], run["ours"]))
        print(f"wrote {target.relative_to(ROOT)} from {saved.relative_to(ROOT)}")
        return 0
    started = time.time()
    deadline = started + args.budget_min * 60
    OUT.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()[0]
    print("setting up the peers' environments (bench/.venvs/) ...", flush=True)
    installed = setup(PEER_ENVS)
    for peer, r in installed.items():
        print(f"  {peer}: {'ok' if not r['error'] else r['error']} ({r['seconds']:.0f} s)", flush=True)
    if args.setup_only:
        return 0 if all(not r["error"] for r in installed.values()) else 1
    chosen = set(args.only.split(",")) if args.only else None
    # The comparisons first: the end-to-end and scale ones carry the targets users compare, and they take
    # the deadline (a size projected past it is skipped and said); then tracevals' own benchmarks.
    sections = []
    for key, script, script_args in COMPARISONS:
        if chosen is not None and key not in chosen:
            continue
        print(f"running bench/{script} ...", flush=True)
        sections.append(run_comparison(key, script, script_args, deadline))
        print(f"  done in {sections[-1]['seconds']:.0f} s", flush=True)
    ours: list[dict[str, Any]] = []
    if chosen is None or "ours" in chosen:
        for spec in OURS:
            if spec.get("optional") and not os.environ.get(spec["optional"]):
                print(f"skipping bench/{spec['script']} (optional: set {spec['optional']}=1 to run it)", flush=True)
                continue
            print(f"running bench/{spec['script']} ...", flush=True)
            ours.append(run_ours(spec))
            print(f"  done in {ours[-1].get('seconds', 0):.0f} s", flush=True)
    versions = {"python": platform.python_version(), "tracevals": f"{_version()} (commit {tracevals_commit()})"}
    versions.update(
        distribution_versions(
            PROJECT_PYTHON, ["duckdb", "pyarrow", "polars", "protobuf", "opentelemetry-sdk", "openai"]
        )
    )
    info = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "minutes": (time.time() - started) / 60,
        "budget": args.budget_min,
        "whole": chosen is None,
        "machine": machine(),
        "versions": versions,
        "load": (load0, os.getloadavg()[0]),
        "setup": installed,
    }
    target = RESULTS if chosen is None else OUT / "RESULTS.partial.md"  # a partial run never replaces the table
    saved.write_text(json.dumps({"partial": chosen is not None, "info": info, "sections": sections, "ours": ours}))
    target.write_text(render(info, sections, ours))
    print(f"wrote {target.relative_to(ROOT)} in {info['minutes']:.1f} min", flush=True)
    return 0


def _version() -> str:
    done = subprocess.run(
        [str(PROJECT_PYTHON), "-c", "import tracevals; print(tracevals.__version__)"], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


if __name__ == "__main__":
    sys.exit(main())
