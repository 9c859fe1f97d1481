"""Instrumentation overhead side by side: what tracevals', OpenInference's and OpenLLMetry's openai
instrumentors add to the same `openai` chat call against the simulated model server.

    .venv/bin/python bench/compare_instrumentation.py [--processes 3] [--rounds 20] [--calls 20] [--json FILE]

The simulated server (`python -m tracevals.simulator`, profile `bench-echo` from bench/peers/sim_profile.py:
a constant short answer, no think time) runs in its own process. Each measurement is its own process
(`bench/peers/openai_overhead.py`) in the instrumentor's environment: tracevals in the project's .venv,
the peers in bench/.venvs/openinference and bench/.venvs/openllmetry, each with the same `openai` and
OpenTelemetry SDK versions and the same SDK pipeline (batch processor, discarding exporter). A process
times plain calls, then instruments and times the same calls: added = instrumented - plain, the median
over `--processes` processes, computed from each phase's median round and from its fastest round
(load from other processes only ever adds time, so the fastest rounds are the steadier comparison on a
busy machine). CPU time (the client process's, all its threads) is steadier than wall time, which also
carries the loopback round trip's jitter. Content capture is compared both off (tracevals' default) and
on (the peers' default).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    PEERS,
    PROJECT_PYTHON,
    ROOT,
    Figure,
    PeerUnavailable,
    Section,
    distribution_versions,
    last_lines,
    peer_python,
)

PEER_DISTRIBUTIONS = {
    "openinference": ["openinference-instrumentation-openai", "openai", "opentelemetry-sdk"],
    "openllmetry": ["opentelemetry-instrumentation-openai", "openai", "opentelemetry-sdk"],
}
LABELS = {"tracevals": "tracevals", "openinference": "OpenInference", "openllmetry": "OpenLLMetry"}


def start_simulator() -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(PEERS)}
    cmd = [str(PROJECT_PYTHON), "-m", "tracevals.simulator", "--port", "0", "--load", "sim_profile"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert proc.stdout is not None
    for line in proc.stdout:
        match = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
        if match:
            return proc, match.group(1)
    raise RuntimeError("the simulated model server did not start")


def measure(python: Path, name: str, base_url: str, content: str, rounds: int, calls: int) -> dict[str, float]:
    cmd = [
        str(python),
        str(PEERS / "openai_overhead.py"),
        "--instrumentor",
        name,
        "--base-url",
        base_url,
        "--rounds",
        str(rounds),
        "--calls",
        str(calls),
        "--content",
        content,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    if done.returncode != 0:
        raise PeerUnavailable(f"{name} ({content}) exited {done.returncode}: {last_lines(done.stderr or done.stdout)}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def added(python: Path, name: str, base_url: str, content: str, args: argparse.Namespace) -> dict[str, list[float]]:
    """Per process: instrumented - plain, per call, by clock (cpu, wall) and round statistic (median, fastest)."""
    out: dict[str, list[float]] = {}
    for _ in range(args.processes):
        m = measure(python, name, base_url, content, args.rounds, args.calls)
        for clock in ("cpu", "wall"):
            for how in ("median", "fastest"):
                key = f"{clock}_{how}"
                out.setdefault(key, []).append(m[f"traced_{clock}_us_{how}"] - m[f"plain_{clock}_us_{how}"])
                out.setdefault(f"plain_{key}", []).append(m[f"plain_{clock}_us_{how}"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    cmd = (
        f".venv/bin/python bench/compare_instrumentation.py --processes {args.processes} "
        f"--rounds {args.rounds} --calls {args.calls}"
    )
    section = Section(
        "instrumentation", "Instrumentation overhead: openai chat call, tracevals vs OpenInference vs OpenLLMetry", cmd
    )
    pythons: dict[str, Path] = {"tracevals": PROJECT_PYTHON}
    for peer, names in PEER_DISTRIBUTIONS.items():
        try:
            pythons[peer] = peer_python(peer)
            section.versions.update(distribution_versions(pythons[peer], names))
        except PeerUnavailable as exc:
            section.errors.append(f"{LABELS[peer]} could not be installed: {exc}")
    server, base_url = start_simulator()
    results: dict[tuple[str, str], dict[str, list[float]]] = {}
    try:
        for content in ("off", "on"):
            for name, python in pythons.items():
                try:
                    results[(name, content)] = added(python, name, base_url, content, args)
                except (PeerUnavailable, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                    section.errors.append(f"{LABELS[name]} could not run: {exc}")
                print(f"{name} content {content}: {results.get((name, content))}", file=sys.stderr)
    finally:
        server.terminate()
        server.wait(timeout=30)
    for content in ("off", "on"):
        ours = results.get(("tracevals", content))
        if ours is None:
            continue
        for peer in PEER_DISTRIBUTIONS:
            theirs = results.get((peer, content))
            for kind, label in (
                ("cpu_median", "CPU time, median round"),
                ("cpu_fastest", "CPU time, fastest round"),
                ("wall_fastest", "wall time, fastest round"),
            ):
                section.figures.append(
                    Figure(
                        f"content {content}: µs added per call ({label}), tracevals vs {LABELS[peer]}",
                        "µs",
                        ours[kind],
                        False,
                        LABELS[peer] if theirs else None,
                        theirs[kind] if theirs else [],
                    )
                )
        plain = statistics.median(ours["plain_wall_median"])
        section.notes.append(
            f"content {content}: a plain call (no instrumentor) takes {plain:,.0f} µs wall, "
            f"{statistics.median(ours['plain_cpu_median']):,.0f} µs CPU in the client (median)."
        )
    section.notes.append(
        f"{args.processes} processes per instrumentor and content setting, {args.rounds} rounds of "
        f"{args.calls} calls each; content off = OPENINFERENCE_HIDE_INPUTS/OUTPUTS=true, "
        "TRACELOOP_TRACE_CONTENT=false, "
        "tracevals capture off; content on = the peers' defaults, tracevals capture span_only."
    )
    section.print()
    section.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
