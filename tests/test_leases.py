"""Leases in a lake (`tracevals.lake.leases`): one holder at a time, on local disk and on S3 (moto); a crashed
holder's lease expires; a paused holder finds out it lost its lease. Real processes contending through
`tracevals run` are in tests/test_run_units.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fixtures.s3 import S3, s3  # noqa: F401  (the fixture)

from tracevals.lake.lake import Lake
from tracevals.lake.leases import Lease, LeaseBusy


def _round(lake: str, name: str, contenders: int) -> int:
    """`contenders` threads try to take one lease at the same moment; each winner holds it a moment. Returns
    how many held it at once at most (the mutual exclusion: 1)."""
    barrier = threading.Barrier(contenders)
    holding, peak, lock = [0], [0], threading.Lock()

    def attempt() -> None:
        lease = Lease(Lake.open(lake), "runs", name, "test", ttl=30)
        barrier.wait()
        try:
            lease.acquire()
        except LeaseBusy:
            return
        with lock:
            holding[0] += 1
            peak[0] = max(peak[0], holding[0])
        time.sleep(0.3)  # long enough for every loser to list and see the holder
        with lock:
            holding[0] -= 1
        lease.release()

    threads = [threading.Thread(target=attempt) for _ in range(contenders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return peak[0]


def _contend(lake: str, contenders: int, rounds: int) -> list[int]:
    return [_round(lake, f"race-{r}", contenders) for r in range(rounds)]


def test_one_holder_at_a_time_on_local_disk(tmp_path: Path) -> None:
    assert _contend(str(tmp_path / "lake"), contenders=4, rounds=8) == [1] * 8


def test_one_holder_at_a_time_on_s3(s3: S3) -> None:  # noqa: F811
    assert _contend(s3.lake("leases"), contenders=3, rounds=4) == [1] * 4
    assert not [k for k in s3.keys("leases/") if k.endswith(".json")]  # every claim given back


def test_a_held_lease_refuses_and_names_its_holder_then_waits_for_it(tmp_path: Path) -> None:
    lake = str(tmp_path / "lake")
    first = Lease(Lake.open(lake), "runs", "nightly", "tracevals run").acquire()
    with pytest.raises(LeaseBusy) as busy:
        Lease(Lake.open(lake), "runs", "nightly", "tracevals run").acquire()
    assert busy.value.holder is not None and busy.value.holder.pid == os.getpid()
    assert f"(pid {os.getpid()}) since " in busy.value.holder.describe()
    threading.Timer(0.5, first.release).start()
    told = []
    second = Lease(Lake.open(lake), "runs", "nightly", "tracevals run").acquire(wait=30, on_wait=told.append)
    assert len(told) == 1 and told[0].state == "held"  # said once that it waits, then took the lease
    second.release()


def _claims(lake: Path) -> list[Path]:
    return sorted((lake / "leases").rglob("*.json"))


def test_a_crashed_holders_lease_expires(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    # a holder on another host that stopped its heartbeat: its claim is 3 s old, the ttl 2 s
    Lease(Lake.open(lake), "runs", "r", "tracevals run", ttl=2).acquire()._stop.set()
    [claim] = _claims(lake)
    doc = json.loads(claim.read_text()) | {"host": "another-host"}
    claim.write_text(json.dumps(doc))
    with pytest.raises(LeaseBusy):
        Lease(Lake.open(lake), "runs", "r", "tracevals run", ttl=2).acquire()
    os.utime(claim, (time.time() - 3, time.time() - 3))
    taken = Lease(Lake.open(lake), "runs", "r", "tracevals run", ttl=2).acquire()
    assert not claim.exists()  # the expired claim was deleted on the way
    taken.release()


def test_a_holder_that_died_on_this_host_has_expired_at_once(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    code = (
        "import os, sys; from tracevals.lake.leases import Lease; from tracevals.lake.lake import Lake; "
        f"Lease(Lake.open({str(lake)!r}), 'runs', 'r', 'tracevals run', ttl=600).acquire(); os._exit(9)"
    )
    died = subprocess.run([sys.executable, "-c", code], timeout=60)
    assert died.returncode == 9 and len(_claims(lake)) == 1  # its claim stays, held, with a 10-minute ttl
    taken = Lease(Lake.open(lake), "runs", "r", "tracevals run", ttl=600).acquire()  # at once: its pid is gone
    taken.release()
    assert _claims(lake) == []


def test_a_paused_holder_learns_it_lost_the_lease(tmp_path: Path) -> None:
    lake = str(tmp_path / "lake")
    paused = Lease(Lake.open(lake), "runs", "r", "tracevals run", ttl=1.5).acquire()
    [claim] = _claims(tmp_path / "lake")
    claim.write_text(json.dumps(json.loads(claim.read_text()) | {"host": "another-host"}))  # not dead_here
    os.utime(claim, (time.time() - 5, time.time() - 5))  # as if its heartbeats had stopped for 5 s
    other = Lease(Lake.open(lake), "runs", "r", "tracevals run", ttl=1.5).acquire()  # expired: taken
    assert paused.lost.wait(10)  # its next heartbeat finds its claim gone
    assert "lost the lease on r" in paused.lost_reason
    other.release()
    paused.release()


def test_a_read_only_lake_is_one_line(tmp_path: Path) -> None:
    from fixtures.read_only import available, read_only

    if available():
        pytest.skip(available())
    lake = tmp_path / "lake"
    lake.mkdir()
    code = (
        "from tracevals.lake.lake import Lake\nfrom tracevals.lake.leases import Lease, LeaseError\n"
        "try:\n"
        f"    Lease(Lake.open({str(lake)!r}), 'runs', 'r', 'tracevals run').acquire()\n"
        "except LeaseError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(read_only([lake], [sys.executable, "-c", code]), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.strip().splitlines()
    assert "Read-only file system; the lake must be writable by this user" in line, line
