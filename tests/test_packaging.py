"""What a user installs: one top-level package, the data files it needs, a working console script."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from click.testing import CliRunner

from tracevals.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_installs_only_the_tracevals_package(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("tracevals-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {
        "tracevals",
        wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info",
    }
    for data in (
        "tracevals/queries/views/00_spans.sql",
        "tracevals/demo/tasks.jsonl",
        "tracevals/schemas/task_case.schema.json",
    ):
        assert data in names
    for stage in ("instrumentation", "collector", "queries", "evaluators"):
        assert f"tracevals/{stage}/__init__.py" in names


def test_every_command_has_help_with_examples() -> None:
    for name in COMMANDS:
        result = CliRunner().invoke(main, [name, "--help"])
        assert result.exit_code == 0, result.output
        assert "Examples:" in result.output, name
