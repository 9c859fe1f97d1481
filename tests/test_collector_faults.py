"""The collector's fault suite: a full disk, poison payloads, slow and idle clients, compressed amplification.
Acknowledged spans lost = 0 in every scenario; legitimate clients keep being served. The scenarios are in
`fixtures/faults.py` (shared with `bench/faults.py`, which runs them longer and prints the figures); the
kills are in `test_collector_kills.py`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.faults import DiskNamespace, amplification, disk_full, leftovers, poison, slow_clients


@pytest.mark.needs("namespace")  # a tmpfs in a private mount namespace; fails in CI when it cannot be made
def test_a_full_disk_loses_nothing_acknowledged_and_the_collector_recovers(tmp_path: Path) -> None:
    """The disk fills while exporters send: refused with 503 (never acknowledged then lost); a kill -9 and a
    restart on the full disk (it starts); a SIGTERM on it (it ends, within its shutdown_timeout, leaving
    the rest in the log); space returns and everything flows again."""
    figures = disk_full(tmp_path)
    print(figures.line())
    assert figures.refused > 0, "the full disk was never felt: the scenario did not test anything"
    assert figures.lost == 0, figures.line()
    assert figures.extra["accepted after space returned"] > 0
    assert figures.extra["sigterm on a full disk (s)"] < 60  # it ends (it used to hang for ever)
    assert figures.leftovers == 0
    log = "".join(figures.logs)
    assert "could not write Parquet" in log and "write-ahead log's reserve" in log
    assert "the next start writes them" in log  # the SIGTERM on the full disk said what it left


# Inside a full disk: each of the lake's writers fails, and says so; what it left is printed.
_WRITE_ON_A_FULL_DISK = """
import sys
from pathlib import Path
import pyarrow as pa
from tracevals.lake.lake import Lake
from tracevals.lake.schema import SPAN_SCHEMA
from tracevals.lake.sink import RotatingParquetSink
from tracevals.lake.writer import write_bytes_atomically, write_table_atomically

lake = Path(sys.argv[1])
table = pa.Table.from_pylist([{"trace_id": "a" * 32, "span_id": "b" * 16, "start_time": 10**18}],
                             schema=SPAN_SCHEMA)
writes = {
    "the collector's sink": lambda: RotatingParquetSink(Lake.open(lake), owner="c1").write("spans", table),
    "write_table_atomically": lambda: write_table_atomically(table, lake / "spans" / "date=x" / "hour=0"),
    "write_bytes_atomically": lambda: write_bytes_atomically(b"x" * 65536, lake / "spans" / "blob.tmp.json"),
}
for name, write in writes.items():
    try:
        write()
        print(name, "wrote on a full disk")
    except OSError:
        pass
print("left:", sorted(str(p.relative_to(lake)) for p in lake.rglob("*") if p.is_file()))
"""


@pytest.mark.needs("namespace")
def test_a_write_that_fails_on_a_full_disk_leaves_no_temporary_file(tmp_path: Path) -> None:
    """A Parquet writer that fails at its first bytes (a full disk) had already created its file: the
    collector's sink then knew of no open file to discard, and one `.tmp` stayed in the lake until the
    next start (the flake of the full-disk scenario under load)."""
    disk = DiskNamespace(tmp_path / "disk", 4)
    try:
        lake = disk.mount / "lake"
        disk.path(lake / "spans").mkdir(parents=True)
        filler = disk.fill()
        done = subprocess.run([*disk.prefix, sys.executable, "-c", _WRITE_ON_A_FULL_DISK, str(lake)],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "wrote on a full disk" not in done.stdout, done.stdout  # the disk was full: each write failed
        assert done.stdout.strip().splitlines()[-1] == "left: []"
        assert leftovers(disk.path(lake)) == []
        filler.unlink()
    finally:
        disk.close()


def test_poison_payloads_get_their_answer_and_legitimate_clients_are_served(tmp_path: Path) -> None:
    figures = poison(tmp_path)
    print(figures.line())
    assert figures.extra["wrong answers"] == []
    assert figures.refused == 0  # no legitimate export (HTTP or gRPC) failed meanwhile
    assert figures.lost == 0 and figures.acknowledged > 0


def test_idle_and_trickling_connections_do_not_stop_anyone_else(tmp_path: Path) -> None:
    """A TLS connection that never sends a ClientHello used to block every HTTPS client; four bodies that
    trickle in used to hold the whole queue from their Content-Length and get every request refused."""
    figures = slow_clients(tmp_path)
    print(figures.line())
    assert figures.extra["legitimate exports served"] == "20/20"
    assert figures.extra["idle connection open throughout"] is True  # served while the bad ones were there
    assert figures.lost == 0


def test_compressed_bodies_are_charged_decompressed_and_memory_stays_near_the_limit(tmp_path: Path) -> None:
    """Eight clients send gzip OTLP/JSON that inflates ~20x. Documented margin (docs/collector.md): the
    limit plus one large JSON parse at a time, at most 8 x max_request_body_size (20 MiB) = 160 MiB.
    It used to reach 1,287 MiB at limit_mib 512."""
    figures = amplification(tmp_path, clients=8, seconds=8.0, limit_mib=512)
    print(figures.line())
    assert figures.extra["requests accepted"] > 0
    assert figures.extra["peak RSS MiB"] <= 512 + 8 * 20, figures.line()
    assert figures.lost == 0


def test_a_scenario_that_fails_half_way_leaves_no_collector_running(tmp_path: Path) -> None:
    """What the conftest's reaper does after every test, here on a collector left running on purpose."""
    from fixtures.faults import STARTED, CollectorProcess, reap_collectors, write_config

    keep = len(STARTED)
    left = CollectorProcess(write_config(tmp_path / "c.yaml", tmp_path / "lake"))
    assert left.proc.poll() is None
    assert reap_collectors(keep) == [left.proc.pid]
    assert left.proc.poll() is not None and len(STARTED) == keep
