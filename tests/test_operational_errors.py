"""One line for every operational error: a read-only lake (`score`, `compact`, `ingest`, `run`), missing
permissions, a busy lake. The read-only lake is a read-only bind mount in a private namespace
(tests/fixtures/read_only.py), so the tests hold when they run as root, where `chmod` denies nothing; what
only reads (`score --no-write`, `sql`, `report --out` elsewhere) still works there."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures.read_only import available, read_only

from tracevals.cli import main
from tracevals.lake.writer import LakeWriter

OTLP = Path(__file__).parent / "fixtures" / "otlp" / "genai_current.json"


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if available():
        pytest.skip(available())
    root = tmp_path_factory.mktemp("ro")
    start = time.time_ns() - 3 * 3600 * 10**9
    rows = [{"trace_id": f"{t:032x}", "span_id": f"{s:016x}", "parent_span_id": None if s == 1 else f"{1:016x}",
             "name": "turn", "kind": "llm", "session_id": f"s{t}", "start_time": start + s, "end_time": start + 99}
            for t in (1, 2) for s in (1, 2)]  # fmt: skip
    LakeWriter(root / "lake").write_rows(rows)
    (root / "my_agent.py").write_text("def agent(text, ctx):\n    return 'ok'\n")
    (root / "cases.jsonl").write_text(json.dumps({"case_id": "t1", "input": "q"}) + "\n")
    return root / "lake"


def _in_read_only(lake: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tracevals", *args]
    return subprocess.run(read_only([lake], command), cwd=lake.parent, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["score", "--lake", "{lake}"], "score --no-write prints the scores without storing them"),
        (["compact", "--lake", "{lake}", "--min-age", "0"], "the lake must be writable by this user"),
        (["ingest", "--lake", "{lake}", str(OTLP)], "point --lake (or --out) at a writable place"),
        (["run", "--tasks", "cases.jsonl", "--agent", "my_agent:agent", "--lake", "{lake}", "-k", "1"],
         "the lake must be writable by this user"),
    ],
    ids=["score", "compact", "ingest", "run"],
)  # fmt: skip
def test_a_command_that_writes_a_read_only_lake_says_so_in_one_line(lake: Path, args: list[str], hint: str) -> None:
    result = _in_read_only(lake, *[a.format(lake=lake) for a in args])
    assert result.returncode == 1, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("Error: ") and "Read-only file system" in line and hint in line, line
    assert "Traceback" not in result.stderr


def test_what_only_reads_works_on_a_read_only_lake(lake: Path, tmp_path: Path) -> None:
    scored = _in_read_only(lake, "score", "--lake", str(lake), "--no-write", "--format", "json")
    assert scored.returncode == 0, scored.stderr
    assert {r["session_id"] for r in json.loads(scored.stdout)} == {"s1", "s2"}
    queried = _in_read_only(lake, "sql", "--lake", str(lake), "--format", "json", "select count(*) n from spans")
    assert queried.returncode == 0 and json.loads(queried.stdout) == [{"n": 4}], queried.stderr


def test_missing_permissions_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # as root no folder refuses, so the error is raised where the lake's files are written
    import tracevals.lake.writer as writer

    def denied(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(tmp_path / "lake" / "spans"))

    monkeypatch.setattr(writer, "write_table_atomically", denied)  # a table written at once
    monkeypatch.setattr(writer, "write_tables_atomically", denied)  # tables streamed into one file (ingest)
    result = CliRunner().invoke(main, ["ingest", "--lake", str(tmp_path / "lake"), str(OTLP)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: cannot use {tmp_path / 'lake' / 'spans'}: Permission denied; this user may not: fix the "
        "folder's permissions, or run as a user who may"
    ]
