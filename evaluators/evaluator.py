"""What an evaluator is (the `Evaluator` protocol) and the pieces every evaluator shares.

An evaluator is a small class with a `name`, a `version` and one pure method,
`evaluate(trajectory, case) -> Score | None`: `None` means "not applicable" (no case, nothing to
check). It never raises on missing data: missing data lowers the score and says so in the reason.
Beside its score it returns typed findings (`tracevals.model.findings`), each of a kind it declares in
`findings`; the task-file fields it reads it declares in `options` (`tracevals.model.options`), so a
plugin brings both without touching tracevals. An evaluator may also offer a `screen` or a
`verdict_key` (see `batch_scoring.py`): the same verdicts for a whole batch at once.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from tracevals.model.case import Case
from tracevals.model.findings import EVALUATOR_FAILED, Finding, findings_json
from tracevals.model.score import Score
from tracevals.model.trajectory import ToolCall, Trajectory

if TYPE_CHECKING:
    import polars as pl

    from tracevals.evaluators.scope import Scope


@runtime_checkable
class Evaluator(Protocol):
    """The contract of every evaluator, built-in or from the `tracevals.evaluators` entry-point group.

    `name` and `version` are plain class attributes in practice (`name = "reply_language"`). Optional
    class attributes: `findings` (a tuple of `FindingKind`: what it may find, each with its meaning for
    release) and `options` (a tuple of `CaseOption`: the task-file fields it reads, with their schema).
    """

    @property
    def name(self) -> str:
        """A stable snake_case name (`trajectory_match`): the registry key and the `evaluator` column."""
        ...

    @property
    def version(self) -> int:
        """Bumped whenever the evaluator's verdicts change, so old and new scores are not compared."""
        ...

    def evaluate(self, trajectory: Trajectory, case: Case | None) -> Score | None:
        """Score one trajectory against its case, or return None when there is nothing to check."""
        ...


class Screened:
    """An evaluator whose set-at-a-time path is a function of its own `screen.py`, imported when first used
    (scoring one trace never pays for polars' plans): `screen_function = "module:function"`, a function of
    the batch's `Scope` returning the screen's frame (`evaluators.apply`)."""

    screen_function: ClassVar[str]

    def screen(self, scope: Scope) -> pl.DataFrame:
        """The batch path: the declared screen function on `scope`."""
        module, function = self.screen_function.split(":")
        found: pl.DataFrame = getattr(importlib.import_module(module), function)(scope)
        return found


def make_score(
    evaluator: Evaluator,
    trajectory: Trajectory,
    *,
    passed: bool = True,
    score: float,
    reason: str,
    details: dict[str, Any] | None = None,
    findings: Sequence[Finding] | None = None,
) -> Score:
    """A `Score` row for `trajectory`, its ids copied over and the score clamped to [0, 1].

    `findings` are stored as `details.findings`; the verdict follows them: a finding that fails
    (a hazard or a failure) fails the score, and a score failed without one gets an `evaluator_failed`
    finding carrying its reason, so that "passed" and "no failing finding" always agree."""
    found = list(findings or ())
    verdict = passed and not any(f.fails for f in found)
    if not verdict and not any(f.fails for f in found):
        found.append(EVALUATOR_FAILED(reason, evidence={"evaluator": evaluator.name}))
    out = dict(details or {})
    if findings is not None or found:
        out["findings"] = findings_json(found)
    return Score(
        evaluator=evaluator.name,
        evaluator_version=evaluator.version,
        passed=verdict,
        score=min(1.0, max(0.0, float(score))),
        reason=reason,
        details=out,
        trace_id=trajectory.trace_id,
        session_id=trajectory.session_id,
        run_id=trajectory.run_id,
        task_id=trajectory.task_id,
        attempt=trajectory.attempt,
        variant=trajectory.variant,
    )


def executed_calls(trajectory: Trajectory) -> list[ToolCall]:
    """The tool calls that really ran: gaps (requested by a model, never executed) left out."""
    return [call for call in trajectory.tool_calls if not call.gap]


def call_label(call: ToolCall, position: int) -> str:
    """`name#position`, position 1-based among the executed calls, for reasons and details."""
    return f"{call.name}#{position}"


def fraction_ok(bad: int, total: int) -> tuple[float, str]:
    """The share of `total` items that are not `bad`, and its arithmetic (`1-1/4=0.750`)."""
    if total == 0:
        return 1.0, "1.000"
    value = 1 - bad / total
    return value, f"1-{bad}/{total}={value:.3f}"


def share(good: int, total: int) -> tuple[float, str]:
    """`good/total` and its arithmetic (`3/4=0.750`); nothing to check counts as 1."""
    if total == 0:
        return 1.0, "1.000 (nothing to check)"
    return good / total, f"{good}/{total}={good / total:.3f}"
