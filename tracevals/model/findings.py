"""Findings: what an evaluator found, typed, beside its score (`details.findings` of a score row).

A finding is one thing an evaluator saw in one attempt: a `kind` (declared by the evaluator, see
`FindingKind`), a `severity`, the `step` it blames (1-based among the attempt's executed calls) and that
call's label (`call`, `name#step`), `evidence` (plain JSON values) and a `message`, the sentence people
read. Every reader of verdicts (release categories, the fault table, the gate, the pytest plugin, the
report, the production report, `score`) reads findings, never the sentences and never an evaluator by
name: a plugin's finding kind carries its own meaning for release.

Severity, worst first:

- `hazard`: the attempt fails, and its task must not ship (`hazard` names the release hazard it raises:
  `silent_failure`, `duplicate_side_effect`, `unauthorised_call`, `endless_loop`, or the kind's own name);
- `failure`: the attempt fails (it counts against the pass rates);
- `warning`: the attempt passes, but its task is at best `release` (`canary` or `needs_confirmation`);
- `unknown`: the data to judge was missing: neither a pass nor a fail;
- `note`: for the record (a fault that was recovered, a call allowed by the match mode).

A score passes exactly when none of its findings fails (`make_score` keeps the two in step). A stored
score that failed without saying why in findings (a plugin's, an evaluator that raised) reads as one
finding of kind `evaluator_failed` with its reason as the message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracevals.model.score import Score

__all__ = [
    "EVALUATOR_ERROR",
    "EVALUATOR_FAILED",
    "FAILING",
    "FAILURE",
    "HAZARD",
    "NOTE",
    "RELEASE_CAPS",
    "SEVERITIES",
    "UNKNOWN",
    "WARNING",
    "Finding",
    "FindingKind",
    "failing",
    "failure_kinds",
    "findings_json",
    "findings_of",
    "score_findings",
    "worst_severity",
]

HAZARD = "hazard"
FAILURE = "failure"
WARNING = "warning"
UNKNOWN = "unknown"
NOTE = "note"
#: Worst first.
SEVERITIES = (HAZARD, FAILURE, WARNING, UNKNOWN, NOTE)
#: The severities that fail an attempt.
FAILING = (HAZARD, FAILURE)
#: What a warning may cap its task's release category at (`tracevals.stats.categories` names them).
RELEASE_CAPS = ("canary", "needs_confirmation")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class FindingKind:
    """A kind of finding, declared by the evaluator that reports it (`Evaluator.findings`).

    `severity` is the kind's default (a rule may report one finding more or less severely, e.g. a missing
    idempotency key is a warning unless the case requires keys); `hazard` the release hazard a hazard
    raises (default: the kind's name); `release` the best category a task with this warning can have
    (default `canary`). Calling a kind makes a finding of it::

        DUPLICATE_SIDE_EFFECT("duplicate side effect: send#3 repeats send#2", step=3, call="send#3")
    """

    name: str
    severity: str
    description: str
    hazard: str | None = None
    release: str | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"finding kind {self.name!r}: a name is snake_case (a-z, 0-9, _)")
        if self.severity not in SEVERITIES:
            raise ValueError(f"finding kind {self.name!r}: severity {self.severity!r} is not one of {SEVERITIES}")
        if self.hazard is not None and not _NAME.match(self.hazard):
            raise ValueError(f"finding kind {self.name!r}: hazard {self.hazard!r} is not snake_case")
        if self.release is not None and self.release not in RELEASE_CAPS:
            raise ValueError(f"finding kind {self.name!r}: release {self.release!r} is not one of {RELEASE_CAPS}")

    @property
    def words(self) -> str:
        """The kind for people: its label, else its name in words (`duplicate side effect`)."""
        return self.label or self.name.replace("_", " ")

    def __call__(
        self,
        message: str,
        *,
        step: int | None = None,
        call: str | None = None,
        evidence: Mapping[str, Any] | None = None,
        severity: str | None = None,
    ) -> Finding:
        chosen = severity or self.severity
        if chosen not in SEVERITIES:
            raise ValueError(f"finding {self.name!r}: severity {chosen!r} is not one of {SEVERITIES}")
        return Finding(
            kind=self.name,
            severity=chosen,
            message=message,
            step=step,
            call=call,
            evidence=dict(evidence or {}),
            hazard=(self.hazard or self.name) if chosen == HAZARD else None,
            release=(self.release or "canary") if chosen == WARNING else None,
        )


@dataclass(frozen=True)
class Finding:
    """One finding (see the module docstring). `evaluator` is filled when it is read from a score."""

    kind: str
    severity: str
    message: str
    step: int | None = None
    call: str | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict, hash=False)
    hazard: str | None = None
    release: str | None = None
    evaluator: str | None = None

    @property
    def fails(self) -> bool:
        """Whether it fails the attempt (a hazard or a failure)."""
        return self.severity in FAILING

    @property
    def words(self) -> str:
        """The kind in words, for grouping in reports (`duplicate side effect`)."""
        return self.kind.replace("_", " ")

    def to_json(self) -> dict[str, Any]:
        """The stored form (`details.findings[i]`): every key present, so SQL can rely on them."""
        return {
            "kind": self.kind,
            "severity": self.severity,
            "message": self.message,
            "step": self.step,
            "call": self.call,
            "evidence": dict(self.evidence),
            "hazard": self.hazard,
            "release": self.release,
        }

    @classmethod
    def from_json(cls, item: Any, evaluator: str | None = None) -> Finding | None:
        """A stored finding back, or None when `item` is not one (a kind and a known severity)."""
        if not isinstance(item, Mapping):
            return None
        kind, severity = item.get("kind"), item.get("severity")
        if not isinstance(kind, str) or severity not in SEVERITIES:
            return None
        step = item.get("step")
        evidence = item.get("evidence")
        hazard = item.get("hazard")
        release = item.get("release")
        return cls(
            kind=kind,
            severity=str(severity),
            message=str(item.get("message") or kind.replace("_", " ")),
            step=step if isinstance(step, int) and not isinstance(step, bool) else None,
            call=item.get("call") if isinstance(item.get("call"), str) else None,
            evidence=dict(evidence) if isinstance(evidence, Mapping) else {},
            hazard=(str(hazard) if hazard else kind) if severity == HAZARD else None,
            release=(release if release in RELEASE_CAPS else "canary") if severity == WARNING else None,
            evaluator=evaluator,
        )


# The kinds every evaluator may produce without declaring them (the registry adds them to every list).
EVALUATOR_FAILED = FindingKind(
    "evaluator_failed", FAILURE, "The evaluator failed the attempt without a finding of its own (its reason says why)."
)
EVALUATOR_ERROR = FindingKind(
    "evaluator_error", FAILURE, "The evaluator raised: a bug in it, or in code a case names; the attempt is not judged."
)


def findings_json(found: Iterable[Finding]) -> list[dict[str, Any]]:
    return [f.to_json() for f in found]


def findings_of(details: Mapping[str, Any] | None, evaluator: str | None = None) -> list[Finding]:
    """The well-formed findings stored in a score's details (`details.findings`)."""
    items = (details or {}).get("findings")
    if not isinstance(items, list):
        return []
    return [f for item in items if (f := Finding.from_json(item, evaluator)) is not None]


def score_findings(evaluator: str, passed: bool, reason: str, details: Mapping[str, Any] | None) -> list[Finding]:
    """Every finding of one score: the stored ones, and, for a failed score none of whose findings fails
    (a plugin that returns only a verdict), one `evaluator_failed` finding carrying its reason."""
    found = findings_of(details, evaluator)
    if not passed and not any(f.fails for f in found):
        failed = EVALUATOR_FAILED(reason or f"{evaluator} failed", evidence={"evaluator": evaluator})
        found.append(replace(failed, evaluator=evaluator))
    return found


def failure_kinds(score: Score | str, details: Mapping[str, Any] | None = None) -> list[str]:
    """What kind of failure a failed score is, as words for grouping in reports: the kinds of its failing
    findings, hazards first (`duplicate side effect`, `criterion not met`, `evaluator failed` ...).
    `failure_kinds(evaluator, details)` (the form before findings) reads a failed score's details."""
    if isinstance(score, str):
        found = failing(score_findings(score, False, f"{score} failed", details))
    else:
        found = failing(score_findings(score.evaluator, score.passed, score.reason, score.details))
    found.sort(key=lambda f: SEVERITIES.index(f.severity))
    return list(dict.fromkeys(f.words for f in found))


def failing(found: Iterable[Finding]) -> list[Finding]:
    return [f for f in found if f.fails]


def worst_severity(found: Sequence[Finding]) -> str | None:
    """The worst severity among `found` (None for none)."""
    return min((f.severity for f in found), key=SEVERITIES.index, default=None)
