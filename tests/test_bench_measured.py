"""`bench/common.run_measured`: a command's figures are its own, not those of the process that started it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from common import run_measured


def _hiwater_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_the_peak_is_the_commands_own_not_the_parents() -> None:
    # Linux starts a spawned child's ru_maxrss at its parent's peak: without the launcher, /bin/true
    # started from this process reported this process's peak (300 MB and more here)
    held = bytearray(300 * 1024 * 1024)
    for i in range(0, len(held), 4096):
        held[i] = 1
    del held
    assert _hiwater_mb() > 300
    small = run_measured(["/bin/true"])
    assert small.returncode == 0
    assert small.peak_rss_mb < 100, small
    grows = run_measured([sys.executable, "-c", "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096])"])
    assert grows.returncode == 0, grows.stderr
    assert 200 < grows.peak_rss_mb < 300, grows
    assert grows.cpu_s > 0 and grows.wall_s > 0


def test_output_exit_code_and_a_timeout() -> None:
    done = run_measured(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    # a command that outlives its timeout is killed with the launcher (its process group), not left behind
    slow = run_measured(["sh", "-c", "sleep 30 & wait"], timeout=0.5)
    assert slow.returncode != 0 and slow.wall_s != slow.wall_s  # NaN: never measured to its end
