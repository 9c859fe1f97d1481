"""`tracevals cases review DIR`: each draft case beside the session it came from, for a person to
accept, edit or drop.

Non-interactive: it prints (or writes as JSON) every case with its draft criteria and its source
session's trajectory, both desensitised, and applies decisions given as options: `--accept ID` sets
`review.status` to `confirmed` (with the time), `--drop ID` removes the case, its cassette and its
source. Editing is editing `cases.jsonl` itself; the next review validates it again.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracevals.harness.cassettes import cassette_name
from tracevals.model.display import ACTS_ON_A_TERMINAL
from tracevals.model.errors import UserError
from tracevals.model.tasks import cases_from_bytes
from tracevals.report.formatting import atomic_write

# What a terminal acts on (`model.display`), and what breaks a line (CR, newline, tab, the Unicode line and
# paragraph separators): each line of a review stays one line of plain text
_CONTROL = re.compile(rf"{ACTS_ON_A_TERMINAL.pattern}|[\r\n\t\u2028\u2029]")


class ReviewError(UserError, ValueError):
    """The folder is no extracted set, or a decision names a case it does not hold."""


@dataclass(frozen=True)
class Reviewed:
    case: dict[str, Any]
    source: dict[str, Any] | None

    @property
    def case_id(self) -> str:
        return str(self.case["case_id"])

    @property
    def status(self) -> str:
        return str((self.case.get("review") or {}).get("status", "confirmed"))


def load_set(folder: str | os.PathLike[str]) -> list[Reviewed]:
    """The cases of an extracted set with their sources; the task file is validated as `run` would."""
    root = Path(folder)
    cases_file = root / "cases.jsonl"
    if not cases_file.is_file():
        raise ReviewError(f"{root} holds no cases.jsonl: pass the folder `tracevals cases extract --out` wrote")
    data = cases_file.read_bytes()
    cases_from_bytes(data, str(cases_file))  # raises TaskFileError with file:line
    docs = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    sources: dict[str, dict[str, Any]] = {}
    sources_file = root / "sources.jsonl"
    if sources_file.is_file():
        for line in sources_file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                doc = json.loads(line)
                sources[str(doc.get("case_id"))] = doc
    return [Reviewed(doc, sources.get(str(doc["case_id"]))) for doc in docs]


def decide(
    folder: str | os.PathLike[str], accept: Iterable[str] = (), drop: Iterable[str] = (), now: dt.datetime | None = None
) -> list[Reviewed]:
    """Apply the decisions and rewrite the set (atomically); returns the cases kept."""
    root = Path(folder)
    reviewed = load_set(root)
    ids = {r.case_id for r in reviewed}
    accept, drop = list(dict.fromkeys(accept)), list(dict.fromkeys(drop))
    unknown = sorted((set(accept) | set(drop)) - ids)
    if unknown:
        raise ReviewError(f"no case {', '.join(unknown)} in {root / 'cases.jsonl'} (cases: {', '.join(sorted(ids))})")
    both = sorted(set(accept) & set(drop))
    if both:
        raise ReviewError(f"{', '.join(both)}: both --accept and --drop; pick one")
    if not accept and not drop:
        return reviewed
    stamp = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0).isoformat()
    kept = []
    for r in reviewed:
        if r.case_id in drop:
            continue
        case = r.case
        if r.case_id in accept:
            case = {**case, "review": {**(case.get("review") or {}), "status": "confirmed", "confirmed_at": stamp}}
        kept.append(Reviewed(case, r.source))
    _write(root / "cases.jsonl", [r.case for r in kept])
    _write(root / "sources.jsonl", [r.source for r in kept if r.source is not None])
    for case_id in drop:
        cassette = root / "cassettes" / cassette_name(case_id)
        if cassette.exists():
            cassette.unlink()
    return kept


def _write(path: Path, docs: list[dict[str, Any]]) -> None:
    atomic_write(path, "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))


def as_json(reviewed: list[Reviewed]) -> dict[str, Any]:
    return {
        "schema": "tracevals.cases_review/1",
        "cases": [{"case": r.case, "source": r.source, "status": r.status} for r in reviewed],
        "drafts": sum(1 for r in reviewed if r.status == "draft"),
        "confirmed": sum(1 for r in reviewed if r.status == "confirmed"),
    }


def render(r: Reviewed) -> list[str]:
    """One case as text: the draft criteria on the left of the page, the source's trajectory below."""
    c, review = r.case, r.case.get("review") or {}
    source = review.get("source") or {}
    lines = [
        f"== {r.case_id} [{c.get('group', '-')}] {r.status} — from session {source.get('session_id', '?')} "
        f"({source.get('service', '?')}/{source.get('agent', '?')})",
        f"   why this group: {review.get('group_reason', '-')}",
        f"   input: {c.get('input')}",
    ]
    steps = c.get("expected_steps")
    lines.append(
        "   expected steps: "
        + (
            (" -> ".join(_step(s) for s in steps) or "(none: no tool call)")
            if steps is not None
            else "(none drafted: write them)"
        )
    )
    for key in ("forbidden_actions", "allowed_tools"):
        if c.get(key) is not None:
            lines.append(f"   {key.replace('_', ' ')}: {', '.join(c[key]) or '(none)'}")
    lines.append(
        f"   requires confirmation: {c.get('requires_confirmation', False)}; max retries: {c.get('max_retries')}"
    )
    must = (c.get("success_criteria") or {}).get("must_include")
    if must:
        lines.append(f"   answer must include: {', '.join(must)}")
    for fault in c.get("faults") or []:
        lines.append(f"   fault: call {fault.get('call', '*')} of {fault['tool']} -> {fault['type']}")
    for note in review.get("notes") or []:
        lines.append(f"   NOTE: {note}")
    if r.source is not None:
        lines.append("   -- what the session did:")
        for i, call in enumerate(r.source.get("calls") or [], 1):
            outcome = (
                f"ERROR {call['error']}" + (f" ({call['status_code']})" if call.get("status_code") else "")
                if call.get("error")
                else _short(call.get("result"))
            )
            lines.append(f"   {i:>3}. {call['tool']}({_short(call.get('args'), 60)}) -> {outcome}")
        lines.append(f"   answer: {_short(r.source.get('output'), 160)}")
    # every value came from production spans: no control sequence reaches the terminal, no line break
    # makes a line of its own (a fake `== case` header)
    return [_CONTROL.sub(" ", line) for line in lines]


def _step(step: Any) -> str:
    if isinstance(step, str):
        return step
    args = step.get("args")
    return f"{step['tool']}({_short(args, 50)})" if args else str(step["tool"])


def _short(value: Any, width: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"
