"""The cases a harness run ran, kept in the lake with the run: `LAKE/run_cases/<id>.json`.

A run remembers exactly which task cases its attempts were attempts at, so that every later command
(`score`, `report`, `gate`) scores them against those cases, not against whatever task file is at
hand, and says plainly when a run has none (a `pytest` run, a run from before tracevals kept them).
The file holds the run id, the task file's bytes as text, their sha256 and where they were read from,
and, when the bytes passed the task-case schema as they were kept, that schema's digest (`schema_sha256`):
a reader whose schema is the same and whose bytes still hash to `sha256` need not run the schema again
(`RunCases.checked`; a hand-edited file, an older one, or another set of plugins is validated as any task
file is). Its name is a digest of the run id (any run id is a valid file name that way). Written atomically,
once: a resumed run must bring the same cases, or it is refused. Next to the cases it keeps, per
variant, the flags that decide what an attempt is (`k`, seed, agent, settings, fault and injection
profiles, cassette mode, capture): a resumed run that changes one is refused too, naming the flag,
since its attempts would silently mix two configurations under one id.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from tracevals.lake.lake import Lake
from tracevals.lake.paths import LakeError
from tracevals.model.errors import UserError
from tracevals.model.tasks import TaskFileError, cases_from_bytes, schema_digest

RUN_CASES_DIR = "run_cases"


class RunCasesConflict(UserError, ValueError):
    """A run id already ran other cases; one line for the user."""


@dataclass(frozen=True)
class RunCases:
    run_id: str
    sha256: str
    source: str  # where the task file was read from, as given
    text: str  # the task file's content (JSONL)
    checked: bool = False  # `text` is the bytes that passed the schema in force now (the module's docstring)


def _name(run_id: str) -> str:
    return f"{RUN_CASES_DIR}/{hashlib.sha256(run_id.encode()).hexdigest()[:32]}.json"


def _read_doc(lake: Lake, run_id: str) -> dict[str, Any] | None:
    """The run's kept document; None when there is none."""
    return _load(lake, _name(run_id))


def _load(lake: Lake, name: str) -> dict[str, Any] | None:
    """The kept document `name` (None when absent), checked for the fields every reader reads: a damaged or
    hand-broken one is a `LakeError` of one line naming it, never a traceback."""
    try:
        doc = lake.read_json(name)
    except ValueError as exc:  # not JSON, or not UTF-8
        problem = f"not JSON ({exc})"
    else:
        if doc is None:
            return None
        if not isinstance(doc, dict):
            problem = "not a JSON object"
        else:
            missing = [f for f in ("run_id", "sha256", "source", "cases") if not isinstance(doc.get(f), str)]
            if not missing:
                return doc
            problem = f"no text in {', '.join(repr(f) for f in missing)}"
    raise LakeError(
        f"{name} of {lake} is damaged: {problem}; restore it, or delete it and pass --tasks to score the run"
    )


def _write_doc(lake: Lake, run_id: str, doc: dict[str, Any]) -> None:
    """Write the run's document whole (`Lake.write_bytes`: atomically)."""
    lake.write_bytes(_name(run_id), json.dumps(doc, ensure_ascii=False).encode())


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_run_cases(lake: Lake, run_id: str, data: bytes, source: str) -> RunCases:
    """Keep `data` (a task file's bytes) as run `run_id`'s cases; the same bytes again are fine (a resumed
    run), other bytes raise `RunCasesConflict`."""
    kept = RunCases(run_id, digest(data), source, data.decode("utf-8"))
    existing = read_run_cases(lake, run_id)
    if existing is not None:
        if existing.sha256 != kept.sha256:
            raise RunCasesConflict(
                f"run {run_id!r} ran other cases ({existing.source}, sha256 {existing.sha256[:12]}) than "
                f"{source} (sha256 {kept.sha256[:12]}); resume it with the same task file, or pick a new --run-id"
            )
        return existing
    doc = {"run_id": run_id, "sha256": kept.sha256, "source": source, "cases": kept.text}
    try:  # the bytes kept, validated as a reader would (the caller validated what it read, maybe not these)
        cases_from_bytes(data, source)
        doc["schema_sha256"] = schema_digest()
    except TaskFileError:
        pass  # kept unstamped: every reader validates them, and refuses them in one line as it always did
    _write_doc(lake, run_id, doc)
    return kept


def check_run_flags(lake: Lake, run_id: str, variant: str, flags: dict[str, object]) -> None:
    """Keep `flags` (JSON values) as what variant `variant` of run `run_id` runs with; a resumed run with
    other flags raises `RunCasesConflict` naming the first that changed. Call after `write_run_cases`."""
    doc = _read_doc(lake, run_id)
    if doc is None:
        return
    kept = doc.setdefault("flags", {})
    flags = json.loads(json.dumps(flags))  # the form it is kept in (tuples become lists)
    before = kept.get(variant)
    if before is None:
        kept[variant] = flags
        _write_doc(lake, run_id, doc)
        return
    for name in sorted(set(before) | set(flags)):
        if before.get(name) != flags.get(name):
            raise RunCasesConflict(
                f"run {run_id!r} (variant {variant!r}) ran with {name} = {json.dumps(before.get(name))}, not "
                f"{json.dumps(flags.get(name))}; resume it with the same flags, or pick a new --run-id"
            )


def read_run_cases(lake: Lake, run_id: str) -> RunCases | None:
    """The cases run `run_id` kept, or None when it kept none."""
    doc = _read_doc(lake, run_id)
    return None if doc is None else _run_cases(doc)


def all_run_cases(lake: Lake) -> list[RunCases]:
    """Every run's kept cases in the lake, by run id."""
    docs = [_load(lake, f"{RUN_CASES_DIR}/{name}") for name in lake.list_names(RUN_CASES_DIR)]
    return sorted((_run_cases(d) for d in docs if d), key=lambda r: r.run_id)


def _run_cases(doc: dict[str, Any]) -> RunCases:
    sha256, text = str(doc["sha256"]), str(doc["cases"])
    stamp = doc.get("schema_sha256")
    checked = isinstance(stamp, str) and stamp == schema_digest() and digest(as_bytes(text)) == sha256
    return RunCases(str(doc["run_id"]), sha256, str(doc["source"]), text, checked)


def as_bytes(text: str) -> bytes:
    """The kept text as the task file's bytes; a hand edit that left a lone surrogate (`\\ud800` in the JSON)
    keeps it, so that reading it is the task file's one-line "not valid UTF-8", not a traceback."""
    return text.encode("utf-8", "surrogatepass")
