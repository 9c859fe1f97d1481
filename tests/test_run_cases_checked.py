"""A kept task file that passed the schema is not run through it again (issue 38: jsonschema's import and
compilation were a visible part of a small `report`), and nothing else is taken on trust: a hand edit, an
older file, another schema (plugins) or a contradiction the schema cannot see is caught as before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tracevals.lake.lake import Lake
from tracevals.lake.paths import LakeError
from tracevals.lake.run_cases import RUN_CASES_DIR, digest, read_run_cases, write_run_cases
from tracevals.model.tasks import TaskFileError, cases_from_bytes, schema_digest
from tracevals.scoring.runs import kept_cases

ROOT = Path(__file__).resolve().parents[1]
GOOD = (
    json.dumps({"case_id": "c1", "input": "refund order 7", "expected_steps": ["lookup", "refund"]})
    + "\n"
    + json.dumps({"case_id": "c2", "input": "hello", "success_criteria": {"regex": ["hi"]}})
    + "\n"
).encode()


def _doc(lake_dir: Path) -> tuple[Path, dict[str, object]]:
    [path] = (lake_dir / RUN_CASES_DIR).glob("*.json")
    return path, json.loads(path.read_text(encoding="utf-8"))


def _rewrite(lake_dir: Path, cases: bytes, *, keep_sha: bool = False, stamp: str | None = None) -> None:
    """The kept document edited by hand: other cases; its sha256 kept (or made to match), its stamp as given."""
    path, doc = _doc(lake_dir)
    doc["cases"] = cases.decode()
    if not keep_sha:
        doc["sha256"] = digest(cases)
    if stamp is not None:
        doc["schema_sha256"] = stamp
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_valid_cases_are_kept_with_the_schemas_digest(tmp_path: Path) -> None:
    lake = Lake.open(tmp_path)
    write_run_cases(lake, "r1", GOOD, "tasks.jsonl")
    _, doc = _doc(tmp_path)
    assert doc["schema_sha256"] == schema_digest()
    kept = read_run_cases(lake, "r1")
    assert kept is not None and kept.checked
    assert [c.raw for c in kept_cases(lake, ["r1"]).cases] == [c.raw for c in cases_from_bytes(GOOD, "tasks.jsonl")]


def test_reading_checked_cases_does_not_import_jsonschema(tmp_path: Path) -> None:
    write_run_cases(Lake.open(tmp_path), "r1", GOOD, "tasks.jsonl")
    probe = (
        "import sys; from tracevals.lake.lake import Lake; from tracevals.scoring.runs import kept_cases; "
        f"cases = kept_cases(Lake.open({str(tmp_path)!r}), ['r1']).cases; "
        "print(len(cases), 'jsonschema' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.split() == ["2", "False"]
    _rewrite(tmp_path, GOOD, stamp="0" * 64)  # a stamp of another schema: validated, so imported
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.split() == ["2", "True"]


def test_invalid_cases_are_kept_unstamped_and_refused_on_reading(tmp_path: Path) -> None:
    lake = Lake.open(tmp_path)
    bad = json.dumps({"case_id": "c1", "input": "x", "expected_stepz": ["lookup"]}).encode() + b"\n"
    write_run_cases(lake, "r1", bad, "tasks.jsonl")  # kept as before: refused when read
    _, doc = _doc(tmp_path)
    assert "schema_sha256" not in doc
    with pytest.raises(TaskFileError, match="unknown field"):
        kept_cases(lake, ["r1"])


@pytest.mark.parametrize("keep_sha", [True, False], ids=["sha256-kept", "sha256-recomputed"])
def test_a_hand_edit_is_validated_again(tmp_path: Path, keep_sha: bool) -> None:
    """Edited text whose sha256 no longer matches is validated; one whose sha256 was made to match but whose
    stamp is of no schema in force is too. Either way the unknown field is one line, as for any task file."""
    lake = Lake.open(tmp_path)
    write_run_cases(lake, "r1", GOOD, "tasks.jsonl")
    bad = json.dumps({"case_id": "c1", "input": "x", "expected_stepz": ["lookup"]}).encode() + b"\n"
    _rewrite(tmp_path, bad, keep_sha=keep_sha, stamp=None if keep_sha else "f" * 64)
    kept = read_run_cases(lake, "r1")
    assert kept is not None and not kept.checked
    with pytest.raises(TaskFileError, match=r"kept with run r1\):1: field 'expected_stepz': unknown field"):
        kept_cases(lake, ["r1"])


def test_checks_beyond_the_schema_still_run_on_checked_cases(tmp_path: Path) -> None:
    """A contradiction only the consistency checks see is caught even under a stamp that matches (the stamp
    skips the JSON Schema alone)."""
    lake = Lake.open(tmp_path)
    write_run_cases(lake, "r1", GOOD, "tasks.jsonl")
    contradiction = (
        json.dumps({"case_id": "c1", "input": "x", "expected_steps": ["refund"], "forbidden_actions": ["refund"]})
        + "\n"
    ).encode()
    _rewrite(tmp_path, contradiction, stamp=schema_digest())
    kept = read_run_cases(lake, "r1")
    assert kept is not None and kept.checked
    with pytest.raises(TaskFileError, match="expected but also in forbidden_actions"):
        kept_cases(lake, ["r1"])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not JSON"),
        ("[" * 5000 + "]" * 5000, "not JSON"),  # nested past the parser
        ("[1, 2]", "not a JSON object"),
        (json.dumps({"run_id": "r1", "source": "t", "cases": "{}"}), "no text in 'sha256'"),
    ],
    ids=["not-json", "too-deep", "not-an-object", "no-sha256"],
)
def test_a_damaged_kept_file_is_one_line_naming_it(tmp_path: Path, text: str, problem: str) -> None:
    """A kept file broken by hand or by a disk: `score` says which file and what to do, in one line."""
    write_run_cases(Lake.open(tmp_path), "r1", GOOD, "tasks.jsonl")
    path, _ = _doc(tmp_path)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LakeError, match=problem) as raised:
        kept_cases(Lake.open(tmp_path), ["r1"])
    assert path.name in str(raised.value) and "\n" not in str(raised.value)
    done = subprocess.run(
        [sys.executable, "-m", "tracevals", "score", "--lake", str(tmp_path), "--run", "r1", "--no-write"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr


def test_a_lone_surrogate_left_by_a_hand_edit_is_one_line(tmp_path: Path) -> None:
    """Kept text with a lone surrogate (`\\ud800` written into the JSON) is the task file's "not valid UTF-8"."""
    lake = Lake.open(tmp_path)
    write_run_cases(lake, "r1", GOOD, "tasks.jsonl")
    path, doc = _doc(tmp_path)
    doc["cases"] = json.dumps({"case_id": "c1", "input": "x"}) + "\ud800\n"
    path.write_text(json.dumps(doc), encoding="utf-8")  # ensure_ascii: the surrogate as an escape
    with pytest.raises(TaskFileError, match="not valid UTF-8"):
        kept_cases(lake, ["r1"])


def test_cases_kept_under_a_plugins_schema_are_validated_without_it(tmp_path: Path) -> None:
    """A run whose evaluator plugin added a task-file field stamps its cases with that schema; a reader
    without the plugin has another schema, so it validates them (and names the field it does not know)."""
    with_plugin = (
        "from tracevals.lake.lake import Lake; from tracevals.lake.run_cases import write_run_cases; "
        "from tracevals.model.options import CaseOption, register_options; "
        "from tracevals.model.tasks import shipped_schema; "
        "register_options('tone', [CaseOption('max_tone', {'type': 'integer'})], shipped_schema()['properties']); "
        f"write_run_cases(Lake.open({str(tmp_path)!r}), 'r1', "
        'b\'{"case_id": "c1", "input": "x", "max_tone": 3}\\n\', \'tasks.jsonl\')'
    )
    subprocess.run([sys.executable, "-c", with_plugin], capture_output=True, text=True, cwd=ROOT, check=True)
    _, doc = _doc(tmp_path)
    assert isinstance(doc["schema_sha256"], str) and doc["schema_sha256"] != schema_digest()
    kept = read_run_cases(Lake.open(tmp_path), "r1")
    assert kept is not None and not kept.checked
    with pytest.raises(TaskFileError, match="field 'max_tone': unknown field"):
        kept_cases(Lake.open(tmp_path), ["r1"])
