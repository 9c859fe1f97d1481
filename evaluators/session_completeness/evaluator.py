"""`session_completeness`: is the whole attempt in the lake, and did it end?

Six checks on the spans of the trace (facts gathered by `queries/completeness.py`):

1. root: the trace's root span (no parent) is present and ended;
2. no orphan: every span's parent is in the lake (a missing parent is a lost or never-ended span);
3. no open span: every span has an end time;
4. no dangling tool call: every tool call a model requested (`tracevals.tool_calls.ids`, or a gap)
   was executed by a span;
5. terminal state: the attempt reached an answer (a final model response that asked for no tool, its
   requested tools' results when they all ran after it and none failed in a run that ended well (with
   content capture off, the tools that ran after it), or a recorded output), a hand-off, or an error;
6. every turn present: when the session says how many turns it had (the user messages in its last
   model input, or the end marker's `tracevals.session.turns`), that many traces of it are in the lake.

Each failed check is a finding of its own kind (`declarations.py`). Score: checks passed / 6; passed
when all pass. A crash leaves its mark here: the root never ended
(so it was never exported), its children point to a parent that is not there, a requested tool call
never ran, no terminal state. Not applicable to hand-built trajectories without span facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tracevals.evaluators.evaluator import Screened, make_score, share
from tracevals.evaluators.session_completeness.declarations import BY_CHECK, FINDINGS, OPTIONS
from tracevals.model.case import Case
from tracevals.model.score import Score
from tracevals.model.trajectory import TERMINAL_STATES, SpanFacts, Trajectory

CHECKS = ("root", "no_orphan", "no_open_span", "no_dangling_call", "terminal_state", "all_turns")


@dataclass
class SessionCompleteness(Screened):
    """Root present and ended, no orphans, no open spans, no dangling calls, an ending, every turn."""

    name: ClassVar[str] = "session_completeness"
    version: ClassVar[int] = 4  # 2: typed findings (one kind per failed check); 3: an agent ends on its tools;
    # 4: a session-end marker with an ERROR status (`end_session(status="abandoned")` ...) ends the session in error
    findings: ClassVar = FINDINGS
    options: ClassVar = OPTIONS
    screen_function: ClassVar[str] = "tracevals.evaluators.session_completeness.screen:screen_completeness"

    def evaluate(self, trajectory: Trajectory, case: Case | None) -> Score | None:
        facts = trajectory.spans
        if facts is None:
            return None
        gaps = sum(1 for c in trajectory.tool_calls if c.gap)
        failures = problems(facts, gaps)
        passed_checks = len(CHECKS) - len(failures)
        score, arithmetic = share(passed_checks, len(CHECKS))
        head = f"{passed_checks}/{len(CHECKS)} checks passed ({facts.span_count} spans), score={arithmetic}"
        details = {
            "failed": [k for k in CHECKS if k in failures],
            "span_count": facts.span_count,
            "terminal": facts.terminal,
            "end_marker": facts.end_marker,
            "gaps": gaps,
        }
        reason = "; ".join([head, *(failures[k] for k in CHECKS if k in failures)])
        found = [BY_CHECK[k](failures[k], evidence={"check": k}) for k in CHECKS if k in failures]
        return make_score(self, trajectory, score=score, reason=reason, details=details, findings=found)


def problems(facts: SpanFacts, gaps: int = 0) -> dict[str, str]:
    """The failed checks of `facts`, each with its reason."""
    out: dict[str, str] = {}
    if not facts.root_present:
        out["root"] = "root span missing (never ended, or lost)"
    elif not facts.root_ended:
        out["root"] = "root span not ended"
    if facts.orphan_spans:
        out["no_orphan"] = f"{facts.orphan_spans} spans point to a parent that is not in the lake"
    if facts.open_spans:
        out["no_open_span"] = f"{facts.open_spans} spans have no end time"
    dangling = facts.dangling_calls + gaps
    if dangling:
        out["no_dangling_call"] = f"{dangling} requested tool calls never executed"
    if facts.terminal not in TERMINAL_STATES:
        out["terminal_state"] = "no terminal state: no final answer, hand-off or error"
    if facts.turns_expected is not None and facts.session_traces < facts.turns_expected:
        out["all_turns"] = f"turns missing: {facts.turns_expected} expected, {facts.session_traces} in the lake"
    return out
