"""What `session_completeness` finds (its finding kinds); it reads no case option."""

from __future__ import annotations

from tracevals.model.findings import FAILURE, FindingKind

ROOT_MISSING = FindingKind("root_missing", FAILURE, "The attempt's root span is missing or never ended.")
ORPHAN_SPANS = FindingKind("orphan_spans", FAILURE, "Spans point to a parent that is not in the lake.")
OPEN_SPANS = FindingKind("open_spans", FAILURE, "Spans have no end time.")
DANGLING_CALL = FindingKind("dangling_call", FAILURE, "A tool call a model requested was never executed.")
NO_TERMINAL_STATE = FindingKind("no_terminal_state", FAILURE, "No final answer, hand-off or error.")
TURNS_MISSING = FindingKind("turns_missing", FAILURE, "Fewer turns of the session are in the lake than it had.")
BY_CHECK = {
    "root": ROOT_MISSING,
    "no_orphan": ORPHAN_SPANS,
    "no_open_span": OPEN_SPANS,
    "no_dangling_call": DANGLING_CALL,
    "terminal_state": NO_TERMINAL_STATE,
    "all_turns": TURNS_MISSING,
}
FINDINGS = tuple(BY_CHECK.values())
OPTIONS = ()
