"""Calls one model response asked for together (parallel tool calls): their order among themselves is the
model's (it may list London before Paris on one run and after it on the next) or the scheduler's (a pool
starts them in any order), never the agent's. Every reading of an attempt's calls that an order decides reads
such calls in the order that suits it, here and nowhere else:

- `trajectory_match` (strict and in_order) and the per-step funnel (`stats.steps`) in the order of the
  expected steps they pair with, as one more reading of the attempt beside "as executed" and "retries
  folded" (the better reading counts, as for a folded retry);
- the consistency of a task's trajectories (`stats.consistency`) in one fixed order, so that two attempts
  that asked for the same calls in one response are one trajectory.

Which calls were asked together is `ToolCall.asked_by` (the model call's span id, from the request ids it
recorded: tracevals' own instrumentation, and a loop whose tools the conversation answered); consecutive calls
with the same one are a group. A call without it is a group of its own: the order stays as executed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from tracevals.model.trajectory import ToolCall

Call = TypeVar("Call", bound=ToolCall)
Step = TypeVar("Step")


def asked_together(calls: Sequence[Call]) -> list[list[Call]]:
    """The calls in runs of consecutive calls one model response asked for (a call of unknown origin alone)."""
    groups: list[list[Call]] = []
    for call in calls:
        if groups and call.asked_by is not None and groups[-1][-1].asked_by == call.asked_by:
            groups[-1].append(call)
        else:
            groups.append([call])
    return groups


def in_order_of(calls: Sequence[Call], rank: Callable[[Call], Any]) -> list[Call]:
    """The calls with each group asked together sorted by `rank` (stably: equal ranks keep their order); the
    groups themselves in the order they came."""
    return [call for group in asked_together(calls) for call in sorted(group, key=rank)]


def by_steps(steps: Sequence[Step], pairs: Callable[[Step, Call], bool]) -> Callable[[Call], int]:
    """The rank that reads calls in the order of the steps they pair with: a call's place is the first step it
    pairs with (`pairs`: each comparison's own rule), after every step when it pairs with none."""
    return lambda call: next((i for i, step in enumerate(steps) if pairs(step, call)), len(steps))


def parallel(calls: Sequence[ToolCall]) -> bool:
    """Whether any response asked for more than one of the calls (a reading in another order can differ)."""
    return any(len(group) > 1 for group in asked_together(calls))
