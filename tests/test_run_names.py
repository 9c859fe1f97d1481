"""Names that become paths (`tracevals.lake.names`): a hostile run id, variant or task id never writes
outside the lake or `--out`, and a name that cannot be one is refused in one line before any attempt runs.

`--attribute-variance` used to keep its cassettes in `Path(lake) / "variance" / run_id`: `../../x` and an
absolute id wrote files outside the lake (one overwrote an existing file), a 10 kB id crashed after 24
attempts were written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracevals.cli import main
from tracevals.harness.cassettes import cassette_name
from tracevals.lake.names import BadName, check_name, path_segment, under

AGENT = textwrap.dedent(
    """
    import os
    import tracevals

    @tracevals.tool(effect="read")
    def lookup(key):
        return {"key": key, "value": 42}

    def agent(text, ctx):
        with open(os.environ["AGENT_LOG"], "a") as fh:
            fh.write(f"{ctx.task_id}:{ctx.attempt}\\n")
        return f"{text}: {lookup(key=text)['value']}"
    """
)


def _tree(root: Path, skip: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and skip not in p.parents and p.name != "calls.log"
    }


def _run(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENT_LOG": str(work / "project" / "calls.log")}
    command = [sys.executable, "-m", "tracevals", "run", "--tasks", "cases.jsonl", "--agent", "my_agent:agent"]
    return subprocess.run(
        [*command, "--lake", "lake", "--concurrency", "1", *args],
        cwd=work / "project",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_agent.py").write_text(AGENT)
    case = {"case_id": "../../t1", "input": "q1", "success_criteria": {"must_include": ["42"]}}
    (project / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (tmp_path / "x").write_text("an existing file next to the project")  # what `../../x` overwrote
    return tmp_path


@pytest.mark.parametrize("run_id", ["../../x", "/tmp/tracevals-hostile-run-id"])  # "..", "." and more: below
def test_a_hostile_run_id_writes_nothing_outside_the_lake(work: Path, run_id: str) -> None:
    before = _tree(work, work / "project" / "lake")
    absolute = Path("/tmp/tracevals-hostile-run-id")
    existed = absolute.exists()
    result = _run(work, "-k", "2", "--run-id", run_id, "--attribute-variance", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["run_id"] == run_id  # the id is kept as given, only its path is encoded
    assert _tree(work, work / "project" / "lake") == before  # nothing new or changed outside the lake
    assert absolute.exists() == existed
    variance = work / "project" / "lake" / "variance"
    [folder] = list(variance.iterdir())
    assert folder.name == path_segment(run_id) and folder.resolve().parent == variance.resolve()


@pytest.mark.parametrize(
    ("run_id", "why"),
    [
        ("r" * 10_000, "--run-id is 10,000 characters long"),
        ("nightly\n42 PASS", "--run-id 'nightly\\n42 PASS' holds a control character ('\\n' at position 7)"),
        ("  ", "--run-id is empty"),
    ],
)
def test_a_name_that_cannot_be_one_is_one_line_before_any_attempt(
    work: Path, run_id: str, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(work / "project")
    monkeypatch.setenv("AGENT_LOG", str(work / "project" / "calls.log"))
    args = ["run", "--tasks", "cases.jsonl", "--agent", "my_agent:agent", "--lake", "lake", "-k", "2"]
    result = CliRunner().invoke(main, [*args, "--run-id", run_id, "--attribute-variance"])
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {why}") and len(line) < 200
    assert not (work / "project" / "calls.log").exists()  # no attempt ran
    assert not (work / "project" / "lake").exists()  # nothing was written


def test_a_bad_variant_is_one_line_too(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(work / "project")
    args = ["run", "--tasks", "cases.jsonl", "--agent", "my_agent:agent", "--lake", "lake", "-k", "1"]
    result = CliRunner().invoke(main, [*args, "--variant", "v" * 300])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        "Error: --variant is 300 characters long ('" + "v" * 40 + "…'); use at most 256"
    ]


def test_every_name_is_one_segment_under_its_root(tmp_path: Path) -> None:
    names = ["../../x", "/etc/passwd", "a/b", "a_b", "..", ".", "", "x" * 10_000, "nul\x00byte", "é/ü", "C:\\x"]
    segments = [path_segment(n) for n in names]
    assert len(set(segments)) == len(names)  # two names never share a file
    for name, segment in zip(names, segments, strict=True):
        assert "/" not in segment and "\x00" not in segment and segment not in ("", ".", "..")
        assert len(segment.encode()) <= 100
        path = under(tmp_path, name)
        assert path.parent == tmp_path
    assert path_segment("nightly-42") == "nightly-42"  # a plain name stays readable
    assert cassette_name("../../t1") == path_segment("../../t1") + ".json"  # the cassettes' rule is this one
    with pytest.raises(BadName, match="holds a control character"):
        check_name("--variant", "a\x1b[2Jb")
