"""`tracevals cases extract`: from the production sessions of a lake to a replayable case set.

    extract_cases("lake", "replay-set", per_group=5, seed=0)

Reads the sessions of a range that no harness ran (one turn each: the agent contract takes one input;
multi-turn sessions are counted and skipped), sorts them into the four groups (`groups.py`), chooses up
to `per_group` of each (seeded, most diverse first), desensitises the chosen sessions consistently
(`roles.py` says which part is content, which an identifier, which a structural name kept as it is;
`pseudonyms.py` replaces), drafts each case's criteria and its cassette from the desensitised sessions
only (`drafts.py`) and writes:

- `DIR/cases.jsonl`: one case per line, valid against the shipped task-case schema;
- `DIR/cassettes/<case_id>.json`: the recorded tool results, for `tracevals run --replay`;
- `DIR/sources.jsonl`: each case's source session as a reviewer reads it (desensitised too);
- `DIR/extraction.json`: what was read, chosen, skipped and replaced (counts by kind, never originals);
- `DIR/README.md`: each case's group, why, and source session.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from tracevals.cases import roles
from tracevals.cases.drafts import draft_case, interactions, source_summary
from tracevals.cases.groups import GROUPS, Session, choose, effect_of, group_of, request_key
from tracevals.cases.pseudonyms import Desensitiser
from tracevals.cases.rules import Rules
from tracevals.harness.cassettes import FORMAT_VERSION, call_key, cassette_name
from tracevals.lake.lake import Lake
from tracevals.model.errors import UserError
from tracevals.model.signals import temporary_folder
from tracevals.model.tasks import case_from_dict
from tracevals.model.trajectory import HANDOFF_TOOL
from tracevals.queries import open_lake
from tracevals.report.formatting import markdown_cell, markdown_code, umask
from tracevals.scoring.production_data import load_production_data

DEFAULT_PER_GROUP = 5
_TURNS = """
SELECT t.session_id, t.trace_id, t.turn_index, t.user_text, t.final_text,
       count(*) OVER (PARTITION BY coalesce(t.session_id, t.trace_id)) AS turns
FROM turns AS t JOIN _report_traces AS r ON r.trace_id = t.trace_id
"""
_ERRORS = """
SELECT s.span_id, s.status_message FROM spans AS s JOIN _report_traces AS r ON r.trace_id = s.trace_id
WHERE s.kind = 'tool' AND s.status_message IS NOT NULL AND s.status_message <> ''
"""


class ExtractError(UserError, ValueError):
    """Nothing can be extracted (no content captured, no session in range); the message says what to do."""


@dataclass
class Extraction:
    """What `extract_cases` wrote and why."""

    out: Path
    cases: list[dict[str, Any]]
    by_group: dict[str, int]
    wanted: int
    short: dict[str, str] = field(default_factory=dict)  # group -> why it has fewer than wanted
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> sessions
    replaced: dict[str, Any] = field(default_factory=dict)
    sessions_read: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": "tracevals.cases_extraction/1",
            "out": str(self.out),
            "sessions_read": self.sessions_read,
            "per_group": self.wanted,
            "chosen": self.by_group,
            "short": self.short,
            "skipped": self.skipped,
            "replaced": self.replaced,
            "cases": [
                {
                    "case_id": c["case_id"],
                    "group": c["group"],
                    "why": c["review"]["group_reason"],
                    "source_session": c["review"]["source"]["session_id"],
                }
                for c in self.cases
            ],
        }


def extract_cases(
    lake: Lake,
    out: str | os.PathLike[str],
    *,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    per_group: int = DEFAULT_PER_GROUP,
    groups: Sequence[str] = GROUPS,
    seed: int = 0,
    rules: Rules | None = None,
    effects: Mapping[str, str] | None = None,
) -> Extraction:
    """Choose, draft, desensitise and write a replay set (see the module docstring)."""
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise ExtractError(f"unknown group(s) {', '.join(unknown)}: choose from {', '.join(GROUPS)}")
    con = open_lake(lake)
    start = since or dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    data = load_production_data(lake, start, until, con=con)
    sessions, skipped = _sessions(con, data.trajectories, data.scores, data.facets)
    if not sessions:
        raise ExtractError(
            "no session can become a case: "
            + (", ".join(f"{n} {why}" for why, n in skipped.items()) or "none in range")
        )
    if not any(s.input for s in sessions) or not any(c.args is not None for s in sessions for c in s.calls):
        raise ExtractError(
            "the lake has no message content (no user text or tool arguments): cases need it; capture it with "
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (or tracevals.instrument(capture_content=True)) "
            "and extract from traffic recorded after that"
        )
    usable = [s for s in sessions if s.input]
    if len(usable) < len(sessions):
        skipped["without the user's text"] = len(sessions) - len(usable)
    known = _effects(usable, effects or {})
    toolsets = _toolsets(usable)
    grouped: dict[str, list[tuple[Session, str]]] = defaultdict(list)
    for s in usable:
        g, why = group_of(s, known)
        grouped[g].append((s, why))
    chosen: list[tuple[str, Session, str]] = []
    short: dict[str, str] = {}
    for g in groups:
        members = [s for s, _ in grouped.get(g, [])]
        reasons = {s.session_id: w for s, w in grouped.get(g, [])}
        picked = choose(members, per_group, seed, known)
        if len(picked) < per_group:
            distinct = len({request_key(s.input) for s in members})
            short[g] = (
                f"{len(picked)} of {per_group}: {len(members)} session(s) of this group in range, "
                f"{distinct} distinct request(s)"
            )
        chosen += [(g, s, reasons[s.session_id]) for s in picked]
    return _write(Path(out), chosen, toolsets, known, rules, seed, short, skipped, len(sessions), per_group)


def _sessions(
    con: duckdb.DuckDBPyConnection, trajectories: list[Any], scores: list[Any], facets: Mapping[str, Any]
) -> tuple[list[Session], dict[str, int]]:
    turns = con.execute(_TURNS).fetchall()
    errors = {str(k): str(v) for k, v in con.execute(_ERRORS).fetchall()}
    by_trace = {t.trace_id: t for t in trajectories}
    failing: dict[str, list[str]] = defaultdict(list)
    for s in scores:
        if not s.passed and s.trace_id is not None:
            failing[s.trace_id].append(s.evaluator)
    skipped: Counter[str] = Counter()
    out = []
    for session_id, trace_id, _turn, user_text, final_text, n in sorted(turns, key=lambda r: (str(r[0]), r[2])):
        t = by_trace.get(str(trace_id))
        if t is None:
            continue
        if n > 1:
            skipped["multi-turn (the agent contract replays one input)"] += 1
            continue
        facet = facets.get(t.trace_id)
        failed = tuple(sorted(set(failing.get(t.trace_id, []))))
        answered = final_text is not None or t.handed_off
        out.append(
            Session(
                session_id=str(session_id or t.trace_id),
                trajectory=t,
                input=user_text or t.input or "",
                output=final_text if final_text is not None else t.output,
                service=facet.service if facet else "unknown",
                agent=facet.agent if facet else "unknown",
                succeeded=answered and t.error_type is None and not failed,
                failing=failed if answered else (*failed, "no answer"),
                error_messages=errors,  # one map for all sessions (span id -> message)
            )
        )
    return out, dict(skipped)


def _effects(sessions: list[Session], given: Mapping[str, str]) -> dict[str, str]:
    recorded: dict[str, str] = dict(given)
    for s in sessions:
        for c in s.calls:
            if c.effect and c.name not in given:
                recorded.setdefault(c.name, c.effect)
    return {tool: effect_of(tool, recorded) for tool in {c.name for s in sessions for c in s.calls} | set(recorded)}


def _toolsets(sessions: list[Session]) -> dict[tuple[str, str], list[str]]:
    tools: dict[tuple[str, str], set[str]] = defaultdict(set)
    for s in sessions:
        tools[(s.service, s.agent)].update(c.name for c in s.calls)
    return {k: sorted(v) for k, v in tools.items()}


def _write(
    out: Path,
    chosen: list[tuple[str, Session, str]],
    toolsets: Mapping[tuple[str, str], list[str]],
    effects: Mapping[str, str],
    rules: Rules | None,
    seed: int,
    short: dict[str, str],
    skipped: dict[str, int],
    read: int,
    per_group: int,
) -> Extraction:
    d = Desensitiser(rules, seed=seed)
    d.protect({*effects, HANDOFF_TOOL})  # tool names are structure: never learned as personal values
    for _, s, _ in chosen:
        roles.learn(d, s)
    for tool in {*effects, *(t for names in toolsets.values() for t in names)}:  # every tool name written
        d.learn_name(tool)
    named = {d.name(tool): effect for tool, effect in effects.items()}  # the effects, by the names written
    counts: Counter[str] = Counter()
    cases, sources, cassettes = [], [], {}
    for group, original, _ in chosen:
        counts[group] += 1
        case_id = f"{group}_{counts[group]:02d}"  # ours, never personal
        tools = [d.name(t) for t in toolsets.get((original.service, original.agent), [])]
        # everything written is drafted from the desensitised session, never from the original
        s = roles.desensitised(d, original)
        regroup, reason = group_of(s, named)
        # the reason names the desensitised parts (an error type); the same rule holds on them (a
        # pseudonym keeps the shape a rule reads), and where it should not, the reason says less
        why = reason if regroup == group else f"chosen as {group}"
        case = draft_case(s, case_id, group, why, tools, named)
        case_from_dict(case, f"{out / 'cases.jsonl'} (case {case_id})")
        cases.append(case)
        sources.append({"case_id": case_id, **source_summary(s)})
        cassettes[case_id] = _cassette(interactions(s))
    # written beside the target and swapped in whole: a failure leaves no half set, --force no stale file
    out.parent.mkdir(parents=True, exist_ok=True)
    # (the folder is removed whatever stops this, once it is moved to `out` too, where nothing is left to remove)
    with temporary_folder(f".{out.name}.", out.parent) as work:
        (work / "cassettes").mkdir()
        (work / "cases.jsonl").write_text(
            "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8"
        )
        (work / "sources.jsonl").write_text(
            "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in sources), encoding="utf-8"
        )
        for case_id, doc in cassettes.items():
            text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            (work / "cassettes" / cassette_name(case_id)).write_text(text, encoding="utf-8")
        result = Extraction(
            out=out,
            cases=cases,
            by_group={g: counts[g] for g in GROUPS if counts[g] or g in short},
            wanted=per_group,
            short=short,
            skipped=skipped,
            replaced=d.summary(),
            sessions_read=read,
        )
        (work / "extraction.json").write_text(
            json.dumps(result.as_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (work / "README.md").write_text(_readme(result), encoding="utf-8")
        os.chmod(work, 0o777 & ~umask())  # mkdtemp made it private; the set is made to be shared
        if out.exists():
            old = out.with_name(f".{out.name}.replaced")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(out, old)
            os.replace(work, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(work, out)
    return result


def _cassette(items: list[dict[str, Any]]) -> dict[str, Any]:
    seen: Counter[str] = Counter()
    recorded = []
    for item in items:
        key = call_key(item["tool"], item["args"])
        seen[key] += 1
        recorded.append({**item, "key": key, "occurrence": seen[key]})
    return {"version": FORMAT_VERSION, "interactions": recorded}


def _readme(x: Extraction) -> str:
    lines = [
        "# Replay set extracted by tracevals",
        "",
        f"{len(x.cases)} draft cases from {x.sessions_read} production sessions, up to {x.wanted} per group. "
        "Every case is a **draft**: read it beside its source (`tracevals cases review .`), fix what is wrong, "
        "then accept it (`tracevals cases review . --accept CASE_ID`) or drop it (`--drop CASE_ID`).",
        "",
        "Replay a candidate agent against it, no tool running live:",
        "",
        "    tracevals run --agent my_agent:run --tasks cases.jsonl --cassettes cassettes --replay -k 5",
        "",
        "| case | group | why | source session |",
        "|---|---|---|---|",
    ]
    for c in x.cases:
        r = c["review"]
        # the reason and the session id come from spans: untrusted, kept inside their cells
        why, session = markdown_cell(r["group_reason"]), markdown_code(r["source"]["session_id"])
        lines.append(f"| {c['case_id']} | {c['group']} | {why} | {session} |")
    if x.short:
        lines += ["", "## Groups with fewer sessions than asked (not padded)", ""]
        lines += [f"- {g}: {why}" for g, why in x.short.items()]
    if x.skipped:
        lines += ["", "## Sessions skipped", ""]
        lines += [f"- {n}: {why}" for why, n in x.skipped.items()]
    lines += ["", "## Desensitisation (counts only; the originals are written nowhere)", ""]
    distinct, occurrences = x.replaced.get("distinct", {}), x.replaced.get("occurrences", {})
    for kind in sorted(set(distinct) | set(occurrences)):
        lines.append(f"- {kind}: {distinct.get(kind, 0)} distinct value(s), {occurrences.get(kind, 0)} replacement(s)")
    return "\n".join(lines) + "\n"


__all__ = ["DEFAULT_PER_GROUP", "ExtractError", "Extraction", "extract_cases"]
