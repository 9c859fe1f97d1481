"""Pinning the collector to CPUs (`tracevals collect --cpus`), Linux only.

The collector's Python work runs under one interpreter lock: its threads (the receivers', the exporter's)
take turns, and when they are free to run on several cores every hand-over of the lock wakes a thread on
another core. Pinned to one core the same work costs 5-15% less CPU a span (bench/ingest.py prints both),
so the efficient deployment is one collector process per core, each pinned to its own (docs/collector.md,
"Speed").
"""

from __future__ import annotations

import os
from pathlib import Path

from tracevals.model.errors import UserError


class CpuError(UserError, ValueError):
    """A CPU list that cannot be applied here."""


def parse_cpus(text: str) -> set[int]:
    """A CPU list as `taskset -c` takes it: `0`, `0,2`, `0-3`, `0-3,8`."""
    cpus: set[int] = set()
    for part in text.replace(" ", "").split(","):
        low, dash, high = part.partition("-")
        try:
            first, last = int(low), int(high) if dash else int(low)
        except ValueError:
            raise CpuError(f"--cpus {text!r}: {part!r} is not a CPU number or a range like 0-3") from None
        if first < 0 or last < first:
            raise CpuError(f"--cpus {text!r}: {part!r} is not a CPU number or a range like 0-3")
        cpus.update(range(first, last + 1))
    return cpus


def check(cpus: set[int]) -> None:
    """Raise `CpuError` unless this process could run on `cpus`."""
    if not hasattr(os, "sched_setaffinity"):
        raise CpuError("--cpus is not supported on this platform (Linux only); use the OS's own tool")
    usable = os.sched_getaffinity(0)
    if not cpus <= usable:
        raise CpuError(f"--cpus: CPU {_listed(cpus - usable)} is not available here (available: {_listed(usable)})")


def pin(cpus: set[int]) -> None:
    """Run this process, every thread it has and every thread it starts, on `cpus` only."""
    check(cpus)
    tasks = Path("/proc/self/task")
    threads = [int(t.name) for t in tasks.iterdir()] if tasks.is_dir() else [0]
    for thread in threads:  # threads started before (a library's pool) too; new ones inherit it
        try:
            os.sched_setaffinity(thread, cpus)
        except ProcessLookupError:  # it ended meanwhile
            continue


def _listed(cpus: set[int]) -> str:
    return ",".join(map(str, sorted(cpus)))
