"""`tracevals collect --cpus`: the collector and every thread of it pinned to the CPUs given, taskset's list
syntax, and a bad or unavailable list a one-line error."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tracevals.cli import main
from tracevals.collector.cpus import CpuError, parse_cpus
from tracevals.collector.testing import config_document

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux only")


@pytest.mark.parametrize(
    ("text", "cpus"), [("0", {0}), ("0,2", {0, 2}), ("1-3", {1, 2, 3}), ("0-1, 4", {0, 1, 4}), ("3-3", {3})]
)
def test_cpu_lists_are_read_as_taskset_writes_them(text: str, cpus: set[int]) -> None:
    assert parse_cpus(text) == cpus


@pytest.mark.parametrize("text", ["", "x", "1-", "3-1", "-1", "0,,1", "1.5"])
def test_a_bad_cpu_list_is_refused(text: str) -> None:
    with pytest.raises(CpuError, match="is not a CPU number or a range like 0-3"):
        parse_cpus(text)


def test_the_cli_names_a_bad_or_missing_cpu(tmp_path: Path) -> None:
    config = tmp_path / "otel-config.yaml"
    config.write_text(yaml.safe_dump(config_document(tmp_path / "lake")))
    runner = CliRunner()
    bad = runner.invoke(main, ["collect", "--config", str(config), "--cpus", "two", "--validate"])
    assert bad.exit_code != 0 and "--cpus 'two'" in bad.output
    absent = max(os.sched_getaffinity(0)) + 1
    missing = runner.invoke(main, ["collect", "--config", str(config), "--cpus", str(absent), "--validate"])
    assert missing.exit_code != 0 and f"CPU {absent} is not available here" in missing.output
    good = runner.invoke(main, ["collect", "--config", str(config), "--cpus", "0-" + str(absent - 1), "--validate"])
    assert good.exit_code == 0, good.output


def _allowed(pid: int) -> dict[int, str]:
    """Each thread of `pid`: its Cpus_allowed_list."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        match = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.MULTILINE)
        assert match is not None
        out[int(task.name)] = match.group(1)
    return out


def test_every_thread_of_a_pinned_collector_runs_on_the_cpu_given(tmp_path: Path) -> None:
    cpu = max(os.sched_getaffinity(0))
    config = tmp_path / "otel-config.yaml"
    config.write_text(yaml.safe_dump(config_document(tmp_path / "lake")))
    cmd = [sys.executable, "-c", "from tracevals.cli import main; main()", "collect", "--config", str(config)]
    proc = subprocess.Popen([*cmd, "--cpus", str(cpu)], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        deadline, line = time.monotonic() + 90, ""
        for line in proc.stderr:
            if "listening" in line or time.monotonic() > deadline:
                break
        assert "listening" in line, line
        threads = _allowed(proc.pid)
        # the receivers', the exporter's, the memory limiter's and the libraries' own threads
        assert len(threads) >= 4 and set(threads.values()) == {str(cpu)}
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
