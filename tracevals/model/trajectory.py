"""What a trajectory is: one attempt's tool calls in order, its hand-offs and its span-level facts.

Rebuilt from the lake by `tracevals.queries`, read by the evaluators and the statistics. Evaluators are
pure functions from a `Trajectory` (plus the `Case` it was an attempt at, `tracevals.model.case`) to a
`Score` (`tracevals.model.score`). The same data also travels as Polars frames (`tracevals.model.batch`)
for the set-at-a-time evaluators.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

HANDOFF_TOOL = "handoff_to_human"
TERMINAL_STATES = ("answer", "handoff", "error")


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
    status_code: int | None = None  # http.response.status_code of a failure
    retryable: bool | None = None  # tracevals.retryable: None when the tool did not say
    args_hash: str | None = None  # tracevals.tool.args_hash: identity when content is off
    injection_kind: str | None = None  # tracevals.injection.kind: fault | prompt
    injection_type: str | None = None  # fault type (timeout, 429, 5xx, empty, malformed, slow)
    injection_id: str | None = None
    injection_goal: str | None = None  # prompt injection: the goal predicate (JSON or a tool name)
    clock_start_ms: float | None = None  # the attempt's logical clock (tracevals.clock.*): harness runs only
    clock_end_ms: float | None = None
    # The model call that asked for it (its span id): calls with the same one were asked for in one response
    # (parallel tool calls), whose order among themselves is the model's whim, not the agent's (`asked_together`)
    asked_by: str | None = None
    # The operation identity as the loader computed it from the recorded argument text (see
    # `calls.operation_key`); None for hand-built calls, whose identity is computed from `args`.
    op_key: str | None = field(default=None, compare=False)

    @property
    def failed(self) -> bool:
        return self.error_type is not None


@dataclass(frozen=True)
class Handoff:
    """A structured hand-over to a human (a `handoff` span, or a `handoff_to_human` call)."""

    at_ms: float = 0.0
    reason: str | None = None
    completed: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()

    @property
    def has_context(self) -> bool:
        """A person can take over: a reason, plus what is done, what waits, or what to choose from."""
        return bool(self.reason) and bool(self.completed or self.pending or self.candidates)


@dataclass(frozen=True)
class SpanFacts:
    """What `session_completeness` needs from the raw spans of one trace (see `queries/completeness.py`)."""

    span_count: int = 0
    root_present: bool = False
    root_ended: bool = False
    orphan_spans: int = 0  # spans whose parent is not in the lake
    open_spans: int = 0  # spans with no end time
    dangling_calls: int = 0  # tool calls a model requested that no span executed
    end_marker: bool = False  # the session's explicit end marker (kind session_end) is in this trace
    end_status: str | None = None  # tracevals.session.status of that marker
    terminal: str | None = None  # answer | handoff | error, None when none was reached
    turn: int = 1  # 1-based position of this trace among its session's traces
    session_traces: int = 1  # traces of the session found in the lake
    turns_expected: int | None = None  # turns the session's own records say it had, when known


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
    input: str | None = None  # what the agent was asked (first user message), when captured
    model_usage: tuple[tuple[str | None, int, int], ...] = ()  # (model, input tokens, output tokens)
    cost_usd: float | None = None  # a cost the spans recorded themselves, if any
    handoffs: tuple[Handoff, ...] = ()
    spans: SpanFacts | None = None  # None: span-level facts not loaded (hand-built trajectories)

    @property
    def tool_names(self) -> list[str]:
        return [c.name for c in self.tool_calls]

    @property
    def handed_off(self) -> bool:
        return bool(self.handoffs) or any(c.name == HANDOFF_TOOL and not c.gap for c in self.tool_calls)

    @property
    def duration_ms(self) -> float:
        return max(0.0, self.end_ms - self.start_ms)


def with_handoffs(trajectory: Trajectory) -> list[ToolCall]:
    """The executed calls (gaps left out), and each structured hand-off (`tracevals.handoff()`) as the
    `handoff_to_human` step it is, in time order, when no `handoff_to_human` tool ran: a hand-off is
    one, however recorded (`trajectory_match` and the per-step figures read a trajectory so)."""
    calls = [call for call in trajectory.tool_calls if not call.gap]
    if not trajectory.handoffs or any(c.name == HANDOFF_TOOL for c in calls):
        return calls
    for handoff in trajectory.handoffs:
        at = next((i for i, c in enumerate(calls) if c.start_ms > handoff.at_ms), len(calls))
        calls.insert(at, ToolCall(name=HANDOFF_TOOL, start_ms=handoff.at_ms, end_ms=handoff.at_ms))
    return calls
