"""`trajectory_match`: do the executed tool calls match the case's `expected_steps`?

Match modes (the verdict; the score is the share of the mode's requirement that was met):

- `strict`: the same calls in the same order. Score `2*LCS/(expected+actual)`.
- `unordered`: the same calls, any order (the same multiset). Score `2*matched/(expected+actual)`.
- `superset`: the actual calls include every expected call, extras allowed. Score `matched/expected`.
- `subset`: every actual call is one of the expected calls, missing ones allowed. Score `matched/actual`.
- `in_order`: the expected calls appear in the actual calls in order, extras allowed between them.
  Score `LCS/expected`.

Two calls pair when the tool names are equal and the arguments satisfy the tool's `ArgsRule` (see
`args_match`). Pairing is optimal, never greedy: ordered modes use a longest common subsequence,
unordered ones a maximum bipartite matching. Gap calls (requested, never executed) count as not made.

A failed call and its retries (`model.retries`: the same operation right after it failed) may count as
one step, the last of them: the calls are compared as executed and with each retry chain folded, and
the better of the two counts, so a recovery from an injected fault matches `strict` whether the case
lists the retry as a step or not; whether the retries were disciplined is `retry_discipline`'s to judge.
Calls one model response asked for together (parallel tool calls, `model.asked`) are read, in the ordered
modes, in the order of the steps they pair with too: their order among themselves is the model's or the
scheduler's, not the agent's, and the better reading counts.
`expected_steps: []` means "no tool call at all" (absent: not applicable). A structured hand-off
(`tracevals.handoff()`) is the `handoff_to_human` step, as the reports count it.

Findings (`declarations.py`): each unpaired step or call says why (missing, extra, out of order,
arguments differ or not captured), as a failure, or as a note where the mode allows it (extras in
`superset` / `in_order`, missing steps in `subset`), so the verdict and the findings always agree. A
case's `compare` function that cannot be loaded or raises is a `comparison_error` finding: the step's
arguments count as not matching, and scoring goes on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import polars as pl

from tracevals.evaluators.evaluator import make_score
from tracevals.evaluators.scope import Scope
from tracevals.evaluators.trajectory_match.declarations import (
    ARGUMENTS_DIFFER,
    ARGUMENTS_NOT_CAPTURED,
    COMPARISON_ERROR,
    EXTRA_CALL,
    FINDINGS,
    MATCH_CONFIG_ERROR,
    MISSING_STEP,
    OPTIONS,
    REQUESTED_NOT_EXECUTED,
    STEP_OUT_OF_ORDER,
)
from tracevals.evaluators.trajectory_match.matching import lcs_alignment, maximum_matching
from tracevals.model.args_match import ARGS_MODES, ArgsComparator, ArgsRule, ComparisonError, args_rule
from tracevals.model.asked import by_steps, in_order_of, parallel
from tracevals.model.callables import CallableError, load_callable
from tracevals.model.calls import CAPTURE_HINT
from tracevals.model.case import Case, ExpectedCall
from tracevals.model.findings import NOTE, Finding
from tracevals.model.retries import logical_calls
from tracevals.model.score import Score
from tracevals.model.trajectory import ToolCall, Trajectory, with_handoffs

MATCH_MODES = ("strict", "unordered", "superset", "subset", "in_order")
_ORDERED = ("strict", "in_order")
_EXTRAS_ALLOWED = ("superset", "in_order")


@dataclass
class TrajectoryMatch:
    """Compare executed tool calls with `case.expected_steps` under the case's match and args modes.

    `comparators` maps a tool name to a custom `(expected_args, actual_args) -> bool`, which then
    replaces the case's argument rule for that tool (the task file's `"compare": "module:function"`
    override does the same from the case).
    """

    name: ClassVar[str] = "trajectory_match"
    version: ClassVar[int] = 3  # 3: typed findings; a raising compare function is a finding, not a crash
    findings: ClassVar = FINDINGS
    options: ClassVar = OPTIONS
    comparators: Mapping[str, ArgsComparator] = field(default_factory=dict)

    def verdict_key(self, scope: Scope) -> pl.DataFrame:
        """The batch path: one evaluation per distinct (case, call sequence) (see `screen_dedupe.py`)."""
        from tracevals.evaluators.verdict_keys import call_sequence_keys

        return call_sequence_keys(scope, comparators=tuple(self.comparators))

    def evaluate(self, trajectory: Trajectory, case: Case | None) -> Score | None:
        if case is None or not case.expects_steps:
            return None
        rules = {step.tool: args_rule(case, step.tool) for step in case.expected_steps}
        problem = _config_problem(case.match_mode, rules)
        if problem:
            kind, text, evidence = problem
            found = [kind(text, evidence=evidence)]
            return make_score(self, trajectory, passed=False, score=0.0, reason=text, findings=found)
        errors: dict[str, str] = {}  # compare function -> why it failed, once per attempt
        executed = with_handoffs(trajectory)
        logical = logical_calls(executed)
        best = self._compare(case, rules, executed, errors)
        # other readings of the attempt, whichever reads the case better: a retried call as one step, and the
        # calls one response asked for together in the order of the steps they pair with (`model.asked`)
        readings: list[tuple[list[ToolCall], dict[str, Any]]] = []
        if len(logical) < len(executed):
            readings.append((logical, {"retries_folded": len(executed) - len(logical)}))
        if case.match_mode in _ORDERED and parallel(executed):
            rank = by_steps(case.expected_steps, lambda step, call: self._pairs(step, call, rules[step.tool], errors))
            readings += [(in_order_of(calls, rank), {**marks, "asked_together_reordered": True})
                         for calls, marks in [(executed, {}), *readings]]  # fmt: skip
        for calls, marks in readings:
            other = self._compare(case, rules, calls, errors)
            if (other[0], other[1]) > (best[0], best[1]):
                best = other
                best[3].update(marks)
        passed, score, reason, details, found = best
        gaps = [f"gap: {c.name} requested but not executed" for c in trajectory.tool_calls if c.gap]
        details["problems"] += gaps
        found += [REQUESTED_NOT_EXECUTED(text) for text in gaps]
        notes = list(gaps)
        if "retries_folded" in details:
            notes.append(f"{details['retries_folded']} retries counted as the call they repeat")
        if details.get("asked_together_reordered"):
            notes.append("calls one response asked for together read in the order of the expected steps")
        for reference, why in errors.items():
            text = f"comparison {reference} {why}; its step's arguments count as not matching"
            notes.append(text)
            found.append(COMPARISON_ERROR(text, evidence={"compare": reference}))
        return make_score(
            self, trajectory, passed=passed, score=score, reason="; ".join([reason, *notes]), details=details,
            findings=found,
        )  # fmt: skip

    def _compare(
        self, case: Case, rules: Mapping[str, ArgsRule], actual: Sequence[ToolCall], errors: dict[str, str]
    ) -> tuple[bool, float, str, dict[str, Any], list[Finding]]:
        """(passed, score, reason, details, findings) of `actual` against the case's expected steps."""
        expected, mode = case.expected_steps, case.match_mode
        ok = [[self._pairs(step, call, rules[step.tool], errors) for call in actual] for step in expected]
        if mode in _ORDERED:
            pairs, label = lcs_alignment(ok, len(actual)), "LCS"
        else:
            adjacency = [[j for j, hit in enumerate(row) if hit] for row in ok]
            pairs, label = maximum_matching(adjacency, len(actual)), "matched"
        k, m, n = len(pairs), len(expected), len(actual)
        score, arithmetic = _credit(mode, k, m, n)
        passed = {"strict": k == m == n, "unordered": k == m == n, "subset": k == n}.get(mode, k == m)
        found = _problems(mode, expected, actual, pairs, ok, rules, errors)
        problems = [f.message for f in found]
        head = mode if case.args_mode == "ignore" else f"{mode} (args {case.args_mode})"
        reason = (
            f"{head}: expected [{', '.join(s.tool for s in expected)}], "
            f"actual [{', '.join(c.name for c in actual)}]; {label}={k}, score={arithmetic}"
        )
        details: dict[str, Any] = {
            "mode": mode,
            "args_mode": case.args_mode,
            "expected": [s.tool for s in expected],
            "actual": [c.name for c in actual],
            "pairs": [list(p) for p in pairs],
            label.lower(): k,
            "problems": problems,
        }
        reason = "; ".join([reason, *problems])
        return passed, score, reason, details, found

    def _pairs(self, step: ExpectedCall, call: ToolCall, rule: ArgsRule, errors: dict[str, str]) -> bool:
        if step.tool != call.name:
            return False
        comparator = self.comparators.get(step.tool)
        if comparator is None or step.args is None:
            try:
                return rule.matches(step.args, call.args)
            except ComparisonError as exc:
                errors.setdefault(exc.reference, exc.why)
                return False
        return call.args is not None and comparator(step.args, call.args)


def _config_problem(mode: str, rules: Mapping[str, ArgsRule]) -> tuple[Any, str, dict[str, Any]] | None:
    """(finding kind, sentence, evidence) of a case the evaluator cannot apply at all."""
    if mode not in MATCH_MODES:
        return MATCH_CONFIG_ERROR, f"unknown match mode {mode!r}; valid: {', '.join(MATCH_MODES)}", {"mode": mode}
    for tool, rule in rules.items():
        if rule.mode not in ARGS_MODES:
            text = f"unknown args mode {rule.mode!r} for {tool}; valid: {', '.join(ARGS_MODES)}"
            return MATCH_CONFIG_ERROR, text, {"tool": tool, "args": rule.mode}
        if rule.compare is not None:
            try:
                load_callable(rule.compare)
            except CallableError as exc:
                return COMPARISON_ERROR, f"comparison for {tool} not loaded: {exc}", {"compare": rule.compare}
    return None


def _credit(mode: str, k: int, m: int, n: int) -> tuple[float, str]:
    """The score and its arithmetic: `k` paired calls of `m` expected and `n` actual ones."""
    if mode in ("strict", "unordered"):
        num, den, text = 2 * k, m + n, f"2*{k}/({m}+{n})"
    elif mode == "subset":
        num, den, text = k, n, f"{k}/{n}"
    else:
        num, den, text = k, m, f"{k}/{m}"
    if den == 0:  # nothing executed in subset mode: vacuously inside the expected calls
        return 1.0, "1.000 (no calls executed)"
    return num / den, f"{text}={num / den:.3f}"


def _problems(
    mode: str,
    expected: Sequence[ExpectedCall],
    actual: Sequence[ToolCall],
    pairs: Sequence[tuple[int, int]],
    ok: Sequence[Sequence[bool]],
    rules: Mapping[str, ArgsRule],
    errors: Mapping[str, str],
) -> list[Finding]:
    """Say why the unpaired calls did not pair: out of order, arguments differ or missing, or absent; as
    notes where the mode allows them (missing steps in subset, extra calls in superset / in_order). A
    step whose comparison failed is said by its `comparison_error` finding, not as other arguments."""
    left = [i for i in range(len(expected)) if i not in {p[0] for p in pairs}]
    right = [j for j in range(len(actual)) if j not in {p[1] for p in pairs}]
    missing_note = " (allowed)" if mode == "subset" else ""
    problems: list[Finding] = []
    for i in left:
        step = expected[i]
        where = {"expected_step": i + 1, "tool": step.tool}
        j = next((j for j in right if ok[i][j]), None)  # only possible in ordered modes
        if j is not None:
            problems.append(STEP_OUT_OF_ORDER(f"{step.tool} out of order", evidence={**where, "actual_call": j + 1}))
        elif (j := next((j for j in right if actual[j].name == step.tool), None)) is not None:
            call = actual[j]
            evidence = {**where, "actual_call": j + 1}
            if call.args is None:
                text = f"{step.tool}: args not captured, cannot compare ({CAPTURE_HINT})"
                problems.append(ARGUMENTS_NOT_CAPTURED(text, evidence=evidence))
            elif rules[step.tool].compare not in errors:
                text = (
                    f"{step.tool} args differ ({rules[step.tool].mode}): "
                    f"expected {_brief(step.args)}, got {_brief(call.args)}"
                )
                problems.append(ARGUMENTS_DIFFER(text, evidence=evidence))
        else:
            severity = NOTE if mode == "subset" else None
            problems.append(MISSING_STEP(f"missing {step.tool}{missing_note}", evidence=where, severity=severity))
            continue
        right.remove(j)
    allowed = mode in _EXTRAS_ALLOWED
    extra_note = " (allowed)" if allowed else ""
    problems += [
        EXTRA_CALL(
            f"extra call {actual[j].name}{extra_note}",
            evidence={"actual_call": j + 1, "tool": actual[j].name},
            severity=NOTE if allowed else None,
        )
        for j in right
    ]
    return problems


def _brief(args: Mapping[str, Any] | None, limit: int = 80) -> str:
    text = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
