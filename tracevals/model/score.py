"""What a score is: one evaluator's verdict on one target, with its arithmetic (a row of `scores/`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Score:
    """One row of `scores/`: an evaluator's verdict on one target, with its arithmetic."""

    evaluator: str
    evaluator_version: int
    passed: bool
    score: float  # in [0, 1]
    reason: str
    details: dict[str, Any] = field(default_factory=dict)
    trace_id: str | None = None
    session_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    attempt: int | None = None
    variant: str | None = None
