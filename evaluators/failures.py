"""What became of a failed tool call: the one rule `injection` (injected faults) and `failure_handling`
(every other failure) share, and the finding kinds of its outcomes.

A failed call F (0-based index among the executed calls) ends in one outcome, the first that applies:

- `recovered`: a later call of the same tool succeeded (a slowed call: F itself), or an earlier call of
  F's operation had (F was a throttled copy of a call that had gone through);
- `escalated`: a hand-off after F with context (a reason, and what is done / pending / the candidates);
- `escalated_without_context`: a hand-off after F that says too little to take over;
- `unknown`: a hand-off whose context, or an answer, was not captured;
- `failed_raised`: the attempt raised (or ended in error): the failure surfaced as an error;
- `failed_silently`: no answer at all: the attempt just stopped;
- `failed_reported`: the answer admits a failure (`admits_failure`: could not, unable, try again, sorry,
  失败 ...);
- `failed_claiming_success`: the answer does not admit it.

"Admitted" has this one definition (`admits_failure`), read by the fault table and the release hazard
alike: an admitted failure (`failed_reported`, `failed_raised`) is never a silent one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracevals.model.calls import identity_known, operation_key
from tracevals.model.findings import FAILURE, HAZARD, NOTE, UNKNOWN, Finding, FindingKind
from tracevals.model.trajectory import HANDOFF_TOOL, ToolCall, Trajectory

# Words by which an answer admits that something failed. Lower-case; matched as substrings.
FAILURE_MARKERS = (
    "could not", "couldn't", "cannot", "can't", "unable", "failed", "failure", "error", "not able", "try again",
    "did not", "didn't", "unavailable", "timed out", "timeout", "sorry", "失败", "无法", "未能", "错误", "超时",
)  # fmt: skip
SHAPING = ("empty", "malformed")  # the faulted call "succeeded"; its data did not
SLOWING = ("slow", "latency")  # a slowed call still ran: it can be its own recovery

RECOVERED = FindingKind("failure_recovered", NOTE, "A failed call was made good (a later success of the tool).")
ESCALATED = FindingKind("failure_escalated", NOTE, "A failed call was handed to a human, with context.")
ESCALATED_WITHOUT_CONTEXT = FindingKind(
    "escalated_without_context", FAILURE, "A failed call was handed to a human without a reason and what is pending."
)
ADMITTED = FindingKind(
    "failure_admitted", NOTE, "A failed call was never made good, and the attempt said so (its answer, or an error)."
)
SILENT_FAILURE = FindingKind(
    "silent_failure", HAZARD, "A failed call was never made good and the attempt did not say so (no answer, or "
    "an answer that does not admit it).",
)  # fmt: skip
OUTCOME_UNKNOWN = FindingKind(
    "failure_outcome_unknown", UNKNOWN, "What became of a failed call cannot be read: the answer or hand-off was "
    "not captured.",
)  # fmt: skip
OUTCOME_KINDS = (RECOVERED, ESCALATED, ESCALATED_WITHOUT_CONTEXT, ADMITTED, SILENT_FAILURE, OUTCOME_UNKNOWN)
_BY_OUTCOME = {
    "recovered": RECOVERED,
    "escalated": ESCALATED,
    "escalated_without_context": ESCALATED_WITHOUT_CONTEXT,
    "failed_reported": ADMITTED,
    "failed_raised": ADMITTED,
    "failed_claiming_success": SILENT_FAILURE,
    "failed_silently": SILENT_FAILURE,
    "unknown": OUTCOME_UNKNOWN,
}
SCORES = {
    "recovered": 1.0,
    "escalated": 1.0,
    "escalated_without_context": 0.5,
    "failed_reported": 0.5,
    "failed_raised": 0.5,
    "unknown": 0.5,
    "failed_claiming_success": 0.0,
    "failed_silently": 0.0,
}


def admits_failure(output: str | None) -> str | None:
    """The failure word the answer uses (the one definition of "admitted"), or None."""
    if not output:
        return None
    text = output.casefold()
    return next((m for m in FAILURE_MARKERS if m in text), None)


def made_good(calls: Sequence[ToolCall], labels: Sequence[str], index: int, slowed: bool = False) -> str | None:
    """Why call `index` was made good (a later success of its tool, not one whose result a shaping fault
    spoiled; a slowed call itself; an earlier success of its operation), or None."""
    faulted = calls[index]
    for k in range(index if slowed else index + 1, len(calls)):
        later = calls[k]
        if later.name == faulted.name and not later.failed and not (later.injection_type in SHAPING and k != index):
            return f"{labels[k]} succeeded"
    if identity_known(faulted):
        key = operation_key(faulted)
        done = next((j for j in range(index) if not calls[j].failed and operation_key(calls[j]) == key), None)
        if done is not None:
            return f"{labels[done]} had already done the same operation"
    return None


def failure_outcome(
    trajectory: Trajectory, calls: Sequence[ToolCall], labels: Sequence[str], index: int, slowed: bool = False
) -> tuple[str, str]:
    """(outcome, why) of the failed call `index` (see the module docstring)."""
    good = made_good(calls, labels, index, slowed)
    if good is not None:
        return "recovered", good
    handoff = _handoff_after(trajectory, calls, labels, index)
    if handoff is not None:
        where, context = handoff
        if context is None:
            return "unknown", f"handed off at {where}; its context was not captured"
        if context:
            return "escalated", f"handed off at {where} with context"
        return "escalated_without_context", f"handed off at {where} without a reason and what is done / pending"
    if trajectory.error_type is not None or (trajectory.spans is not None and trajectory.spans.terminal == "error"):
        raised = f" {trajectory.error_type}" if trajectory.error_type else ""
        return "failed_raised", f"not recovered, no hand-off; the attempt ended in error{raised}"
    if trajectory.output is None:
        ended = trajectory.spans.terminal if trajectory.spans is not None else None
        if ended == "answer":
            return "unknown", "not recovered, no hand-off; the answer was not captured"
        return "failed_silently", "not recovered, no hand-off, no answer"
    marker = admits_failure(trajectory.output)
    if marker is not None:
        return "failed_reported", f"not recovered, no hand-off; the answer admits it ({marker!r})"
    return "failed_claiming_success", "not recovered, no hand-off, and the answer does not admit the failure"


def outcome_finding(
    outcome: str, message: str, index: int, labels: Sequence[str], evidence: Mapping[str, Any]
) -> Finding:
    """The finding of one outcome about call `index`."""
    kind = _BY_OUTCOME[outcome]
    return kind(message, step=index + 1, call=labels[index], evidence={"outcome": outcome, **evidence})


def _handoff_after(
    trajectory: Trajectory, calls: Sequence[ToolCall], labels: Sequence[str], index: int
) -> tuple[str, bool | None] | None:
    """(where, has context) of the first hand-off after call `index`; context None when not captured."""
    faulted = calls[index]
    for h in trajectory.handoffs:
        if h.at_ms == 0 or h.at_ms >= faulted.start_ms:
            return "a handoff span", h.has_context
    for k in range(index + 1, len(calls)):
        if calls[k].name == HANDOFF_TOOL:
            args = calls[k].args
            if args is None:
                return labels[k], None
            context = any(args.get(f) for f in ("completed", "pending", "candidates"))
            return labels[k], bool(args.get("reason")) and context
    return None
