"""Per-step reliability: for each step of a task's expected trajectory, how often attempts got there,
called it with the right arguments, and it succeeded; where they first left the path.

One definition of "right at step i" (`walk`), read by the step rows and the first divergence alike:
an attempt's steps are matched in order against its calls; in the ``strict`` match mode step i is the
call right after the one that matched step i-1 (the i-th call), in every other mode it is the first
call of step i's tool after it (other calls in between are skipped, as those modes allow). An attempt
may offer several readings of its calls (as executed, and with each retry chain folded into one call,
as ``trajectory_match`` reads them): the one that gets further along the steps is used. A call counts
as succeeded when it, or a later call of the same operation, succeeded (a step a fault was injected
into is done once the agent made it good). Per step:

- ``reached``: attempts that did every earlier step right (step 1: every attempt);
- ``called``: of those, attempts whose call there was of the step's tool (the others called another
  tool, or none: a wrong tool is never read as wrong arguments);
- ``right_args``: of those, the call had the expected arguments (the case's argument rule decides; a
  ``compare`` function that cannot be loaded or raises counts as not right, and is named in ``errors``);
- ``succeeded``: of those, the call succeeded. ``rate = succeeded / reached``.

Because ``reached`` of step i+1 is ``succeeded`` of step i, the product of the step rates is exactly the
share of attempts that did every step right (the chain rule: ten steps at 0.98 each give 0.98^10 =
0.817), shown beside the end-to-end pass rate, which may differ both ways (a case can pass with a step
done differently, or fail on its answer after every step went right).

``first divergence``: the step where the walk stopped (the first step not done right), with what
happened there, counted per step; so the attempts that diverged at step i are exactly those that
reached it and lost it. In ``strict`` mode an attempt that does every step and then more diverges at
the position after the last step. Without expected steps the reference is the task's modal
trajectory, walked strictly.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracevals.model.args_match import ComparisonError

__all__ = [
    "ExpectedStep",
    "StepCall",
    "StepCounts",
    "StepRow",
    "TaskSteps",
    "ToolRow",
    "best_path",
    "divergence_call",
    "first_divergence",
    "task_steps",
    "tool_rows",
    "walk",
]

ArgsMatch = Callable[[Mapping[str, Any] | None, Mapping[str, Any] | None], bool]
"""``(expected_args, actual_args) -> bool``; expected None accepts anything."""


def _any_args(expected: Mapping[str, Any] | None, actual: Mapping[str, Any] | None) -> bool:
    return expected is None or (actual is not None and dict(actual) == dict(expected))


@dataclass(frozen=True)
class StepCall:
    """One logical call of an attempt: the tool, its arguments (None: not captured), whether it succeeded."""

    name: str
    args: Mapping[str, Any] | None
    ok: bool


@dataclass(frozen=True)
class ExpectedStep:
    tool: str
    args: Mapping[str, Any] | None = None
    matches: ArgsMatch = field(default=_any_args, compare=False)


@dataclass(frozen=True)
class StepCounts:
    """Attempts that reached a step, called its tool, with the right arguments, and succeeded."""

    reached: int
    called: int
    right_args: int
    succeeded: int

    @property
    def rate(self) -> float:
        return self.succeeded / self.reached if self.reached else math.nan


@dataclass(frozen=True)
class StepRow(StepCounts):
    index: int  # 1-based position in the expected trajectory
    tool: str

    @property
    def lost(self) -> int:
        """Attempts that reached the step and did not get it right."""
        return self.reached - self.succeeded


@dataclass(frozen=True)
class TaskSteps:
    variant: str
    task_id: str
    attempts: int
    passes: int
    steps: list[StepRow]
    divergence: dict[int, int]  # 1-based position -> attempts that first left the path there
    reference: str  # "expected" | "modal"
    divergence_examples: dict[int, str] = field(default_factory=dict)  # position -> "expected X, did Y"
    errors: tuple[str, ...] = ()  # comparisons that could not be made (a case's compare function), once each
    # per attempt, in the order given to `task_steps`: the reading of its calls the figures used, and where
    # it first left `reference_path` as a call position (`divergence_call`: the same walk as the figures;
    # None: it followed it exactly); what a page showing the attempts side by side aligns and highlights,
    # so that it shows the figures' own divergence, not a recount
    paths: tuple[tuple[StepCall, ...], ...] = ()
    diverged: tuple[tuple[int, str] | None, ...] = ()
    reference_path: tuple[ExpectedStep, ...] = ()

    @property
    def product(self) -> float:
        """The product of the step rates (1.0 for a task with no steps)."""
        return math.prod(s.rate for s in self.steps) if all(s.reached for s in self.steps) else 0.0

    @property
    def end_to_end(self) -> float:
        return self.passes / self.attempts if self.attempts else math.nan

    @property
    def all_steps(self) -> int:
        """Attempts that did every step right."""
        return self.steps[-1].succeeded if self.steps else self.attempts


@dataclass(frozen=True)
class StepState:
    """What an attempt did at one expected step."""

    called: bool  # its call there was of the step's tool
    right_args: bool
    succeeded: bool
    what: str  # what happened, for the divergence row ("expected get_orders, called search")
    error: str | None = None  # a comparison that could not be made (its message)
    at: int = 0  # 1-based position of the call the step was judged on (where a stopped attempt ended: len + 1)


def walk(calls: Sequence[StepCall], expected: Sequence[ExpectedStep], skip: bool = True) -> list[StepState]:
    """The attempt at each expected step, until the first step not done right (see the module docstring;
    `skip` False: the strict mode, step i is the i-th call)."""
    out: list[StepState] = []
    position = 0
    for step in expected:
        if skip:
            index = next((i for i in range(position, len(calls)) if calls[i].name == step.tool), None)
            if index is None:  # the call after the last step done right went elsewhere (or there is none)
                out.append(StepState(False, False, False, f"expected {step.tool}, never called", at=position + 1))
                break
        else:
            index = position if position < len(calls) else None
            if index is None or calls[index].name != step.tool:
                did = f"called {calls[index].name}" if index is not None else "stopped"
                out.append(StepState(False, False, False, f"expected {step.tool}, {did}", at=position + 1))
                break
        call = calls[index]
        error = None
        try:
            right = step.matches(step.args, call.args)
        except ComparisonError as exc:
            right, error = False, str(exc)
        if not right:
            out.append(StepState(True, False, False, f"{step.tool} with other arguments", error, at=index + 1))
            break
        if not call.ok:
            out.append(StepState(True, True, False, f"{step.tool} failed, never made good", at=index + 1))
            break
        out.append(StepState(True, True, True, "right", at=index + 1))
        position = index + 1
    return out


def first_divergence(
    calls: Sequence[StepCall], reference: Sequence[ExpectedStep], skip: bool = False
) -> tuple[int, str] | None:
    """(1-based step, what happened there) where the walk stopped; in strict mode (`skip` False) also the
    position after the last step when calls follow it; None when the attempt did every step right."""
    states = walk(calls, reference, skip)
    for i, state in enumerate(states):
        if not state.succeeded:
            return i + 1, state.what
    if not skip and len(calls) > len(reference):
        return len(reference) + 1, f"called {calls[len(reference)].name} after the last step"
    return None


def divergence_call(
    calls: Sequence[StepCall], reference: Sequence[ExpectedStep], skip: bool = False
) -> tuple[int, str] | None:
    """`first_divergence` by the same walk, placed on the calls: (1-based position of the call where the
    attempt left the path, what happened), for a page that lines attempts up call by call (in strict mode
    the call position is the step; with skipping, skipped calls come before it)."""
    states = walk(calls, reference, skip)
    for state in states:
        if not state.succeeded:
            return state.at, state.what
    if not skip and len(calls) > len(reference):
        return len(reference) + 1, f"called {calls[len(reference)].name} after the last step"
    return None


Path = Sequence[StepCall]


def best_path(paths: Sequence[Path], expected: Sequence[ExpectedStep], skip: bool = True) -> Path:
    """Of an attempt's readings, the one that does the most steps right (the last of a tie: the folded one)."""
    if not paths:
        return ()
    scores = [sum(state.succeeded for state in walk(p, expected, skip)) for p in paths]
    best = max(scores)
    return [p for p, score in zip(paths, scores, strict=True) if score == best][-1]


def task_steps(
    variant: str,
    task_id: str,
    attempts: Sequence[tuple[Sequence[Path], bool]],
    expected: Sequence[ExpectedStep] | None,
    skip: bool = True,
) -> TaskSteps:
    """The per-step figures of one task's attempts, each ``(readings of its calls, passed)``. ``expected``
    None: the task has no expected trajectory, and the modal one (exact tools and arguments) is the
    reference for divergence, walked strictly; its steps are then not rated (nothing says what is right).
    ``skip``: whether other calls may come between two steps (every match mode but ``strict``)."""
    if expected is None:
        skip = False
    chosen = [(best_path(paths, expected or (), skip), passed) for paths, passed in attempts]
    reference = list(expected) if expected is not None else _modal([calls for calls, _ in chosen])
    walks = [walk(calls, reference, skip) for calls, _ in chosen]
    rows = []
    for i, step in enumerate(expected or ()):
        done = [w[i] for w in walks if len(w) > i]
        rows.append(
            StepRow(
                index=i + 1,
                tool=step.tool,
                reached=len(done),
                called=sum(d.called for d in done),
                right_args=sum(d.right_args for d in done),
                succeeded=sum(d.succeeded for d in done),
            )
        )
    divergence: Counter[int] = Counter()
    examples: dict[int, str] = {}
    for calls, _ in chosen:
        found = first_divergence(calls, reference, skip)
        if found is not None:
            divergence[found[0]] += 1
            examples.setdefault(found[0], found[1])
    errors = tuple(dict.fromkeys(state.error for w in walks for state in w if state.error))
    return TaskSteps(
        variant=variant,
        task_id=task_id,
        attempts=len(attempts),
        passes=sum(passed for _, passed in attempts),
        steps=rows,
        divergence=dict(sorted(divergence.items())),
        reference="expected" if expected is not None else "modal",
        divergence_examples=dict(sorted(examples.items())),
        errors=errors,
        paths=tuple(tuple(calls) for calls, _ in chosen),
        diverged=tuple(divergence_call(calls, reference, skip) for calls, _ in chosen),
        reference_path=tuple(reference),
    )


def _modal(paths: Sequence[Sequence[StepCall]]) -> list[ExpectedStep]:
    def key(calls: Sequence[StepCall]) -> tuple[tuple[str, str], ...]:
        return tuple((c.name, repr(sorted((c.args or {}).items()))) for c in calls)

    if not paths:
        return []
    keys = [key(p) for p in paths]
    best = Counter(keys).most_common(1)[0][0]  # ties to the path seen first
    chosen = paths[keys.index(best)]
    return [ExpectedStep(c.name, None if c.args is None else dict(c.args)) for c in chosen]


@dataclass(frozen=True)
class ToolRow(StepCounts):
    """One tool over every expected step that names it, across tasks."""

    variant: str
    tool: str
    steps: int


def tool_rows(tasks: Iterable[TaskSteps]) -> list[ToolRow]:
    """Per (variant, tool): the step counts summed over every task step of that tool, worst rate first."""
    sums: dict[tuple[str, str], list[int]] = {}
    for t in tasks:
        for s in t.steps:
            acc = sums.setdefault((t.variant, s.tool), [0, 0, 0, 0, 0])
            for j, value in enumerate((1, s.reached, s.called, s.right_args, s.succeeded)):
                acc[j] += value
    rows = [
        ToolRow(variant=v, tool=tool, steps=acc[0], reached=acc[1], called=acc[2], right_args=acc[3], succeeded=acc[4])
        for (v, tool), acc in sums.items()
    ]
    return sorted(rows, key=lambda r: (r.variant, r.rate if not math.isnan(r.rate) else 2.0, r.tool))
