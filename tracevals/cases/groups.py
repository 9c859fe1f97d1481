"""The four groups of a replay set, read from what a session's trace shows, and the seeded choice.

Every session lands in exactly one group, the first rule that holds, in this order:

1. `faults`: a tool call failed with a fault of the world (429 / rate limit, timeout, 5xx), or a call
   returned an empty result (`[]`, `{}`, `""`, or an object whose only list is empty), or a call failed
   otherwise (not found, conflict, ...) except for its arguments;
2. `high_risk`: a `write` or `irreversible` call ran, or the agent handed off a request that names one
   of its write / irreversible tools, uses an irreversible verb (delete, refund, cancel, pay,
   transfer, ...) or asks for confirmation;
3. `vague`: the agent handed off, a call was refused for a missing or invalid argument (a 400 / 422,
   `invalid_argument`, "missing", "required"), or the answer asks the user for what is missing (it ends
   with `?`, or says "which one", "please give / provide / confirm ...", "did you mean", "I can't tell");
4. `clear`: the rest.

A tool's effect is the one its spans recorded (`tracevals.tool.effect`), else the case rules' (`effects`
given with `--effect`), else read from the words of its name: a name that starts with a read verb (`get`,
`list`, `search`, `find`, ...) reads; else a word like delete, refund, cancel, pay, charge, transfer
makes it irreversible (`issue_refund`, `orderCancel`), a word like send, create, update, set, post,
write a write; `transfer_to_*`, an agent hand-off, reads).

Choice within a group is deterministic for a seed: sessions are ordered by `md5(seed:session_id)`, then
taken greedily, each time the one that adds the most not yet seen (tools, tool sequence, outcome,
fault), ties by that order; of the sessions that asked the same request (case, spacing and punctuation
aside) and met the same faults, only the first in that order can be chosen. A group with fewer distinct
requests than asked is reported, never padded.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tracevals.model.faults import canonical_fault
from tracevals.model.json_text import loads as json_loads
from tracevals.model.trajectory import HANDOFF_TOOL, ToolCall, Trajectory

GROUPS = ("clear", "vague", "faults", "high_risk")

_IRREVERSIBLE_VERBS = "delet|remov|destroy|drop|purg|refund|cancel|pay|charg|transfer|wire|clos"  # stems
_WRITE_VERBS = "send|create|update|set|add|post|put|write|insert|modify|edit|book|submit|assign|notify"
_IRREVERSIBLE = re.compile(rf"^(?:{_IRREVERSIBLE_VERBS})")
_WRITE = re.compile(rf"^(?:{_WRITE_VERBS})")
_READ = re.compile(r"^(?:get|list|search|find|lookup|look|fetch|read|query|check|describe|show|count|view|is|has)$")
_RISKY_WORDS = re.compile(rf"(?i)\b(?:{_IRREVERSIBLE_VERBS})\w*")
_MISSING = re.compile(r"(?i)missing|required|invalid[_ ]argument|must be|validation")
# An answer that asks the user for what is missing, with or without a question mark.
_CLARIFY = re.compile(
    r"(?i)\?\s*$|\bwhich (?:one|of)\b|\b(?:please|could you|can you|would you)\s+(?:give|provide|tell|confirm|specify"
    r"|clarify|share|send)\b|\bI (?:can't|cannot|could not|couldn't) tell\b|\bdid you mean\b"
)
_CONFIRM = re.compile(r"(?i)\bconfirm|approv|authori[sz]")


@dataclass(frozen=True)
class Session:
    """One production session that can become a case: its only turn, what was asked and answered."""

    session_id: str
    trajectory: Trajectory
    input: str
    output: str | None
    service: str = "unknown"
    agent: str = "unknown"
    succeeded: bool = False  # ended with an answer or a hand-off, and every evaluator passed
    failing: tuple[str, ...] = ()  # the evaluators that did not pass
    error_messages: Mapping[str, str] = field(default_factory=dict)  # span id -> status message

    @property
    def calls(self) -> list[ToolCall]:
        return [c for c in self.trajectory.tool_calls if not c.gap]


def effect_of(tool: str, recorded: Mapping[str, str]) -> str:
    if tool in recorded:
        return recorded[tool]
    name = tool.lower().lstrip("_")
    if name.startswith("transfer_to_") or name in ("handoff", "delegate"):
        return "read"  # a hand-off between agents (ADK's transfer_to_agent, the Agents SDK's transfer_to_X)
    words = [w for w in re.split(r"[_\-.]+|(?<=[a-z])(?=[A-Z])", tool.lstrip("_")) if w]
    words = [w.lower() for w in words]
    if not words or _READ.match(words[0]):
        return "read"  # get_refund_status reads, whatever follows
    if any(_IRREVERSIBLE.match(w) for w in words):
        return "irreversible"  # issue_refund, orderCancel
    if any(_WRITE.match(w) for w in words):
        return "write"
    return "read"


def fault_of(call: ToolCall) -> str | None:
    """The fault a failed call met (canonical name), None when it was no fault of the world."""
    if not call.failed:
        return "empty" if is_empty(call.result) else None
    kind = (call.error_type or "").lower()
    status = call.status_code
    if status == 429 or "rate" in kind or kind == "429":
        return "rate_limit"
    if "timeout" in kind or "timed_out" in kind or status in (408, 504):
        return "timeout"
    if (status is not None and 500 <= status < 600) or kind in ("server_error", "5xx", "unavailable"):
        return "server_error"
    return canonical_fault(kind) if kind in ("empty", "malformed") else None


def refused_for_arguments(call: ToolCall) -> bool:
    """A call that failed because of what the agent sent (400 / 422, a missing or invalid argument)."""
    return call.failed and (call.status_code in (400, 422) or bool(_MISSING.search(call.error_type or "")))


def is_empty(result: str | None) -> bool:
    if result is None:
        return False
    text = result.strip()
    if text in ("", "[]", "{}", '""', "null"):
        return True
    try:
        parsed = json_loads(text)
    except ValueError:
        return False
    if isinstance(parsed, dict):
        lists = [v for v in parsed.values() if isinstance(v, list)]
        return len(lists) == 1 and not lists[0]
    return parsed in ([], {}, "", None)


def group_of(session: Session, effects: Mapping[str, str]) -> tuple[str, str]:
    """(group, why): the first rule of the module docstring that holds."""
    calls = session.calls
    effects = {**{c.name: c.effect for c in calls if c.effect}, **effects}
    for call in calls:
        fault = fault_of(call)
        if fault is not None:
            return "faults", f"{call.name} met {fault}"
    for call in calls:
        if call.failed and not refused_for_arguments(call):
            return (
                "faults",
                f"{call.name} failed ({call.error_type}{f', {call.status_code}' if call.status_code else ''})",
            )
    risky = {t for t in {c.name for c in calls} - {HANDOFF_TOOL} if effect_of(t, effects) in ("write", "irreversible")}
    ran = [c.name for c in calls if c.name in risky and not c.failed]
    if ran:
        return "high_risk", f"ran {ran[0]} ({effect_of(ran[0], effects)})"
    t = session.trajectory
    if t.handed_off:
        said = f"{handoff_text(t)} {session.input}"
        named = sorted(tool for tool, e in effects.items() if e in ("write", "irreversible") and tool in said)
        verbs = {_verb(tool) for tool, e in effects.items() if e in ("write", "irreversible")}
        asked = sorted(v for v in verbs if v and re.search(rf"(?i)\b{re.escape(v)}", said))
        asked += [m.group(0).lower() for m in _RISKY_WORDS.finditer(said)][:1]
        if named or asked or _CONFIRM.search(said):
            return "high_risk", f"handed off a {(named or asked or ['confirmation'])[0]} request"
        return "vague", "handed off"
    if any(refused_for_arguments(c) for c in calls):
        return "vague", "a call was refused for its arguments"
    if session.output and _CLARIFY.search(session.output):
        return "vague", "asked the user for what is missing"
    return "clear", "none of the other rules"


def handoff_text(t: Trajectory) -> str:
    """What a trajectory's hand-offs say: their reasons and pending work (spans or handoff_to_human calls)."""
    said = [*(h.reason or "" for h in t.handoffs), *(p for h in t.handoffs for p in h.pending)]
    for c in t.tool_calls:
        if c.name == HANDOFF_TOOL and c.args:
            said += [str(c.args.get("reason") or ""), *map(str, c.args.get("pending") or [])]
    return " ".join(said)


_TOOLISH = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def pending_tools(t: Trajectory) -> set[str]:
    """Tool-like names (snake_case, a write or irreversible verb first) a hand-off left to a human."""
    return {m.group(0) for m in _TOOLISH.finditer(handoff_text(t)) if effect_of(m.group(0), {}) != "read"}


def _verb(tool: str) -> str:
    return re.split(r"[_\-]", tool.lower(), maxsplit=1)[0]


def _features(session: Session, effects: Mapping[str, str]) -> set[str]:
    calls = session.calls
    names = [c.name for c in calls]
    t = session.trajectory
    outcome = "handoff" if t.handed_off else ("error" if t.error_type else "answer")
    return {
        *(f"tool:{n}" for n in names),
        "seq:" + ">".join(names),
        f"outcome:{outcome}",
        f"passed:{session.succeeded}",
        *(f"fault:{c.name}:{fault_of(c)}" for c in calls if fault_of(c)),
        f"agent:{session.service}/{session.agent}",
    }


def seeded_order(sessions: Iterable[Session], seed: int) -> list[Session]:
    return sorted(sessions, key=lambda s: (hashlib.md5(f"{seed}:{s.session_id}".encode()).hexdigest(), s.session_id))


def request_key(text: str) -> str:
    """A request as compared for duplicates: case, spacing and punctuation ignored."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def choose(sessions: Sequence[Session], per_group: int, seed: int, effects: Mapping[str, str]) -> list[Session]:
    """Up to `per_group` sessions, greedily the most diverse, in a seeded order (see the module doc); one
    per distinct request and faults met (the same question asked twice is one case, unless the world
    answered it differently)."""
    pool, asked = [], set()
    for s in seeded_order(sessions, seed):
        key = (request_key(s.input), tuple(sorted({f"{c.name}:{fault_of(c)}" for c in s.calls if fault_of(c)})))
        if key not in asked:
            asked.add(key)
            pool.append(s)
    features = {s.session_id: _features(s, effects) for s in pool}
    seen: set[str] = set()
    chosen: list[Session] = []
    while pool and len(chosen) < per_group:
        best = max(range(len(pool)), key=lambda i: (len(features[pool[i].session_id] - seen), -i))
        pick = pool.pop(best)
        seen |= features[pick.session_id]
        chosen.append(pick)
    return chosen
