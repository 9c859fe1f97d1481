"""Issue 35, acceptance 3: an evaluator written outside the tree declares a task-file option and a finding
kind; a task file uses the option; the finding makes its task "do not ship", without touching tracevals.

The plugin is installed the way pip installs a package (a module and a dist-info with an entry point, in
a directory of its own put on PYTHONPATH; nothing is installed into the project's environment), and
`tracevals run`, `report` and `gate` run as a user runs them: separate processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN = """
from tracevals.evaluators import CaseOption, FindingKind, make_score

TOO_LONG = FindingKind(
    "reply_too_long", "hazard", "A reply longer than the channel takes (it is cut off mid-sentence).",
    hazard="truncated_reply",
)


class ReplyLength:
    name = "reply_length"
    version = 1
    options = (CaseOption("max_reply_chars", {"type": "integer", "minimum": 1}, "The longest reply it takes."),)
    findings = (TOO_LONG,)

    def evaluate(self, trajectory, case):
        limit = (case.raw if case is not None else {}).get("max_reply_chars")
        if limit is None or trajectory.output is None:
            return None
        n = len(trajectory.output)
        found = [TOO_LONG(f"{n} chars > {limit}", evidence={"chars": n, "limit": limit})] if n > limit else []
        return make_score(self, trajectory, score=min(1.0, limit / n) if n else 1.0, reason=f"{n} chars",
                          findings=found)
"""
AGENT = """
def agent(task, ctx):
    return "Done." if "short" in task else "Done. " + "Here is everything I found out about your account. " * 3
"""
TASKS = [
    {"case_id": "short", "input": "short please", "max_reply_chars": 80},
    {"case_id": "long", "input": "tell me all", "max_reply_chars": 80},
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    dist = site / "reply_length_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (site / "reply_length_plugin.py").write_text(textwrap.dedent(PLUGIN))
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: reply-length-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[tracevals.evaluators]\nreply_length = reply_length_plugin:ReplyLength\n")
    (tmp_path / "my_agent.py").write_text(AGENT)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    return tmp_path


def _tracevals(project: Path, *args: str, plugin: bool = True) -> subprocess.CompletedProcess[str]:
    path = [str(project / "site")] if plugin else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(project), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "tracevals", *args], cwd=project, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_plugin_option_and_finding_kind_make_a_task_do_not_ship(project: Path) -> None:
    # without the plugin, the field is nobody's: the task file is refused, one line
    refused = _tracevals(project, "run", "--tasks", "cases.jsonl", "--agent", "my_agent:agent", "--lake", "lake",
                         plugin=False)  # fmt: skip
    assert refused.returncode == 1
    assert "cases.jsonl:1: field 'max_reply_chars': unknown field" in refused.stderr
    ran = _tracevals(project, "run", "--tasks", "cases.jsonl", "--agent", "my_agent:agent", "--lake", "lake",
                     "-k", "2", "--run-id", "r1", "--format", "json")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    attempts = {(a["task_id"], a["attempt"]): a for a in json.loads(ran.stdout)["attempts"]}
    assert {key: (a["passed"], a["category"], a["hazards"]) for key, a in attempts.items()} == {
        ("long", 1): (False, "do_not_ship", ["truncated_reply"]),
        ("long", 2): (False, "do_not_ship", ["truncated_reply"]),
        ("short", 1): (True, "automatic", []),
        ("short", 2): (True, "automatic", []),
    }
    assert attempts[("long", 1)]["failed_by"] == ["reply_length: reply_too_long"]
    # the report on the lake says the same, and the task's reason names the plugin's hazard
    reported = _tracevals(project, "report", "--lake", "lake", "--out", "report.json")
    assert reported.returncode == 0, reported.stderr
    doc = json.loads((project / "report.json").read_text())
    long_task = {t["task_id"]: t for t in doc["variants"]["default"]["tasks"]}["long"]
    assert long_task["category"] == "do_not_ship" and long_task["hazards"] == {"truncated_reply": 2}
    assert long_task["category_reasons"][0].startswith("truncated reply in 2/2 attempts (attempt 1: ")
    # and the gate forbids it by name (a hazard the plugin declared), with no baseline yet: day one
    gated = _tracevals(project, "gate", "--lake", "lake", "--candidate", "default", "--forbid", "truncated_reply")
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert gated.stdout.splitlines()[0].startswith("FAIL: default against no baseline")
    assert "  FAIL forbid:truncated_reply: 1 task truncated reply: long (2 attempts)" in gated.stdout
