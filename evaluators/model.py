"""The data evaluators read and write: trajectories rebuilt from the lake, task cases, score rows.

Evaluators are pure functions from a `Trajectory` (plus the `Case` it was an attempt at, when there is
one) to a `Score`: no I/O, no global state, so the same code can run over a batch anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One executed (or, if `gap`, only requested) tool call, in trajectory order."""

    name: str
    args: dict[str, Any] | None = None  # None when argument content was not captured
    result: str | None = None
    error_type: str | None = None  # None when the call succeeded
    start_ms: float = 0.0  # milliseconds since the Unix epoch
    end_ms: float = 0.0
    span_id: str = ""
    call_id: str | None = None  # gen_ai.tool.call.id: links the call to the model request
    effect: str | None = None  # read | write | irreversible (tracevals.tool.effect)
    retry_after_ms: float | None = None  # the wait the failure asked for, if any
    idempotency_key: str | None = None
    gap: bool = False  # requested by a model but no span executed it

    @property
    def failed(self) -> bool:
        return self.error_type is not None


@dataclass(frozen=True)
class Trajectory:
    """One attempt (one trace): its tool calls in order, and what the harness recorded about it."""

    trace_id: str
    tool_calls: tuple[ToolCall, ...] = ()
    session_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    attempt: int | None = None
    variant: str | None = None
    output: str | None = None  # the agent's final answer (tracevals.attempt.output)
    error_type: str | None = None  # the attempt raised (tracevals.attempt.error / error.type)
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    start_ms: float = 0.0
    end_ms: float = 0.0

    @property
    def tool_names(self) -> list[str]:
        return [c.name for c in self.tool_calls]

    @property
    def handed_off(self) -> bool:
        return any(c.name == "handoff_to_human" for c in self.tool_calls)

    @property
    def duration_ms(self) -> float:
        return max(0.0, self.end_ms - self.start_ms)


@dataclass(frozen=True)
class ExpectedCall:
    """A step of a case's `expected_steps`: a tool name, optionally with the arguments expected."""

    tool: str
    args: dict[str, Any] | None = None  # None: any arguments match


@dataclass(frozen=True)
class Case:
    """One task case from a JSONL task file (see `tracevals/tasks.py` and its JSON Schema)."""

    case_id: str
    input: str
    allowed_tools: tuple[str, ...] | None = None  # None: no restriction
    expected_steps: tuple[ExpectedCall, ...] = ()
    forbidden_actions: tuple[str, ...] = ()
    max_retries: int | None = None
    requires_confirmation: bool = False
    must_include: tuple[str, ...] = ()
    match_mode: str = "strict"  # strict | unordered (more modes in later versions)
    args_mode: str = "ignore"  # exact | ignore
    group: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


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
