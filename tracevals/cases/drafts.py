"""Draft pass criteria and cassettes from what a session did, for a person to confirm.

From one session (`groups.Session`) and its agent's tools:

- `input`: the user's text; `allowed_tools`: every tool the agent was seen calling in the traffic read;
  `tool_effects`: each one's effect (see `groups.effect_of`);
- `expected_steps` with arguments: the session's calls as they finally went (each retry chain folded
  into its last call, `idempotency_key` left out), only when the session succeeded (ended with an
  answer or a hand-off, every evaluator passed); otherwise left for the person, with a note;
- `forbidden_actions`: the irreversible tools it did not call, and where it handed off, every write /
  irreversible tool it did not call and every tool the hand-off left pending (`delete_order ord_1007`);
- `requires_confirmation`: it handed off a high-risk request (an irreversible call it ran is noted, not
  required to be confirmed: the agent that passed the session must pass its case);
- `max_retries`: the longest retry chain seen, at least 2;
- `success_criteria.must_include`: the key values of the answer (ids, amounts, dates, names) that the
  tool results or the request also hold, at most 6; only for a session that succeeded;
- `faults`: the faults it met, as fault rules (the n-th call of a tool), so a live run meets them again
  (a replay meets them from the cassette, where the error was recorded).

Every drafted field is listed under `review.drafted`, and `review.status` is `draft` until a person
accepts the case (`tracevals cases review DIR --accept ID`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from tracevals.cases.groups import Session, effect_of, fault_of, pending_tools
from tracevals.model.json_text import loads as json_loads
from tracevals.model.retries import logical_calls, retry_chains
from tracevals.model.trajectory import HANDOFF_TOOL, ToolCall, with_handoffs

KEY_IGNORES = frozenset({"idempotency_key"})
_KEY_VALUE = re.compile(
    r"\b[a-z][a-z0-9]{1,15}_\d{2,}\b|\b[A-Z][A-Z0-9]{1,9}-\d{3,}\b|\b\d+\.\d{2}\b|\b\d{4}-\d{2}-\d{2}\b"
)
MAX_MUST_INCLUDE = 6


def parsed_args(call: ToolCall) -> dict[str, Any]:
    return {k: v for k, v in (call.args or {}).items() if k not in KEY_IGNORES}


def draft_case(
    session: Session, case_id: str, group: str, why: str, tools: list[str], effects: Mapping[str, str]
) -> dict[str, Any]:
    """The case (a task-file line, originals still in it: desensitise before writing)."""
    calls = session.calls
    t = session.trajectory
    ran = {c.name for c in calls}
    risky = {tool for tool in tools if effect_of(tool, effects) in ("write", "irreversible")}
    irreversible = {tool for tool in tools if effect_of(tool, effects) == "irreversible"}
    left = pending_tools(t) if t.handed_off else set()
    forbidden = sorted(((risky if t.handed_off else irreversible) | left) - ran - {HANDOFF_TOOL})
    chains = retry_chains(calls)
    drafted = ["allowed_tools", "forbidden_actions", "max_retries", "requires_confirmation", "tool_effects"]
    notes: list[str] = []
    case: dict[str, Any] = {
        "case_id": case_id,
        "group": group,
        "input": session.input,
        "allowed_tools": sorted(set(tools) | ({HANDOFF_TOOL} if t.handed_off else set())),
    }
    if session.succeeded:
        # a structured hand-off (`tracevals.handoff()`) is the `handoff_to_human` step it is, as
        # trajectory_match reads the attempt (`with_handoffs`); its arguments are not compared
        steps = [
            {"tool": c.name, "args": parsed_args(c)}
            if c.args is not None or c.name != HANDOFF_TOOL
            else {"tool": c.name}
            for c in logical_calls(with_handoffs(t))
        ]
        case["expected_steps"] = steps
        drafted.append("expected_steps")
    else:
        failing = ", ".join(session.failing) or "an error or no answer"
        notes.append(f"the session did not succeed ({failing}): write expected_steps and success_criteria by hand")
    case["forbidden_actions"] = forbidden
    case["max_retries"] = max(2, max((len(c) - 1 for c in chains), default=0))
    case["requires_confirmation"] = bool(t.handed_off and group == "high_risk")
    unconfirmed = sorted({c.name for c in calls if c.name in irreversible and not c.failed})
    if unconfirmed:
        notes.append(f"ran {', '.join(unconfirmed)} without a hand-off: decide whether it needs confirmation")
    must = must_include(session) if session.succeeded else []
    if must:
        case["success_criteria"] = {"must_include": must}
        drafted.append("success_criteria")
    faults = fault_rules(calls)
    others = sorted({f"{c.name} ({c.error_type})" for c in calls if c.failed and fault_of(c) is None})
    if others:
        notes.append(
            f"{', '.join(others)} failed with no fault type for it: the cassette replays the failure, a live run "
            "may not meet it"
        )
    if faults:
        case["faults"] = faults
        drafted.append("faults")
    case["tool_effects"] = {tool: effect_of(tool, effects) for tool in case["allowed_tools"] if tool != HANDOFF_TOOL}
    case["review"] = {
        "status": "draft",
        "source": {
            "session_id": session.session_id,
            "trace_id": t.trace_id,
            "service": session.service,
            "agent": session.agent,
        },
        "group_reason": why,
        "drafted": sorted(drafted),
        "notes": notes,
    }
    return case


def must_include(session: Session) -> list[str]:
    """Key values of the answer that the request or a tool result also holds (grounded, not chatter)."""
    answer = session.output or ""
    grounded = " ".join([session.input, *(c.result or "" for c in session.calls)])
    out: list[str] = []
    for m in _KEY_VALUE.finditer(answer):
        value = m.group(0)
        if value in grounded and value not in out:
            out.append(value)
    for name in _names_in(session):
        if name in answer and name not in out:
            out.append(name)
    return out[:MAX_MUST_INCLUDE]


def _names_in(session: Session) -> list[str]:
    names = []
    for call in session.calls:
        for value in _values_named(call.result, "name"):
            names.append(value)
    return names


def _values_named(text: str | None, key: str) -> list[str]:
    if not text:
        return []
    try:
        doc = json_loads(text)
    except ValueError:
        return []
    found: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if k == key and isinstance(x, str):
                    found.append(x)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(doc)
    return found


def fault_rules(calls: list[ToolCall]) -> list[dict[str, Any]]:
    """The faults the calls met, as rules `{tool, call, type}` (the n-th call of that tool, 1-based)."""
    seen: Counter[str] = Counter()
    rules = []
    for call in calls:
        seen[call.name] += 1
        fault = fault_of(call)
        if fault is not None:
            rule: dict[str, Any] = {"tool": call.name, "call": seen[call.name], "type": fault}
            if fault == "rate_limit" and call.retry_after_ms:
                rule["retry_after_ms"] = call.retry_after_ms
            rules.append(rule)
    return rules


def interactions(session: Session) -> list[dict[str, Any]]:
    """The session's executed calls as cassette recordings for every attempt (`attempt` 0), in order,
    originals still in them (keys are computed after desensitising)."""
    out = []
    for call in session.calls:
        item: dict[str, Any] = {"attempt": 0, "tool": call.name, "args": dict(call.args or {})}
        if call.failed:
            item["error"] = {
                "error_type": call.error_type,
                "message": session.error_messages.get(call.span_id) or call.error_type,
                "status_code": call.status_code,
                "retryable": bool(call.retryable) if call.retryable is not None else fault_of(call) is not None,
                "retry_after_s": call.retry_after_ms / 1000.0 if call.retry_after_ms else None,
            }
        else:
            item["result"] = _result_value(call.result)
        out.append(item)
    return out


def _result_value(text: str | None) -> Any:
    """What the tool returned: the recorded JSON text parsed back, else the text as it is."""
    if text is None:
        return None
    try:
        return json_loads(text)
    except ValueError:
        return text


def source_summary(session: Session) -> dict[str, Any]:
    """The session as a reviewer reads it beside its draft (originals still in it)."""
    t = session.trajectory
    return {
        "session_id": session.session_id,
        "trace_id": t.trace_id,
        "service": session.service,
        "agent": session.agent,
        "input": session.input,
        "output": session.output,
        "succeeded": session.succeeded,
        "failing": list(session.failing),
        "calls": [
            {
                "tool": c.name,
                "args": dict(c.args or {}),
                **({"error": c.error_type, "status_code": c.status_code} if c.failed else {"result": c.result}),
            }
            for c in session.calls
        ],
        "handoffs": [
            {"reason": h.reason, "pending": list(h.pending), "candidates": list(h.candidates)} for h in t.handoffs
        ],
    }
