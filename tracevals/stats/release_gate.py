"""The release gate: thresholds over a baseline→candidate comparison, a verdict and reasons a person can act on.

Two kinds of check. **Floors** judge the candidate alone, so they apply from the first run on (day one,
no baseline yet): ``min_pass_rate``, ``min_pass_at_1``, ``min_pass_hat_k``, ``forbid`` (categories and
hazards), ``min_consistency``, ``strict_env``. **Comparisons** need a baseline that ran the same tasks:
``max_task_regression``, ``max_regression``, ``fail_on_significant_regression``; with nothing to compare
(no baseline attempts, no task both ran) each says so and is *not judged* (neither passed nor failed).
The verdict: FAIL when a judged check failed; NOT JUDGED when none failed and a comparison could not be
judged; PASS otherwise.

Checks (each one optional; the defaults forbid ``do_not_ship`` tasks and a significant regression):

- ``min_pass_rate``: the share of the candidate's attempts that passed (pooled over tasks).
- ``min_pass_hat_k`` at ``at_k``: the candidate's pass^k (default k: its headline k).
- ``min_pass_at_1``: the candidate's pass@1.
- ``max_task_regression``: no task's pass rate may drop by more than this (baseline rate - candidate rate).
- ``max_regression``: the paired mean pass@1 drop over the tasks both ran may not exceed this.
- ``forbid``: release categories (``do_not_ship`` …) or hazard kinds (``silent_failure`` …, or a
  plugin's) that must not occur in any candidate task.
- ``fail_on_significant_regression``: the sign test says the candidate is significantly worse.
- ``min_consistency``: the candidate's share of tasks whose attempts all gave an equivalent result
  (see :mod:`tracevals.stats.consistency`).
- ``strict_env``: baseline and candidate differ in nothing but what ``vary`` names, and each variant
  ran in one environment (see :mod:`tracevals.stats.environment`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from tracevals.stats.categories import CATEGORIES, CATEGORY_LABELS, HAZARD_KINDS, hazard_label
from tracevals.stats.compare import Comparison
from tracevals.stats.consistency import Properties
from tracevals.stats.summary import VariantSummary

__all__ = ["FAIL", "NOT_JUDGED", "PASS", "GateCheck", "GateResult", "GateThresholds", "run_gate"]

PASS, FAIL, NOT_JUDGED = "pass", "fail", "not_judged"


@dataclass(frozen=True)
class GateThresholds:
    """What the candidate must meet. ``None`` switches a check off."""

    min_pass_hat_k: float | None = None
    at_k: int | None = None
    min_pass_rate: float | None = None
    min_pass_at_1: float | None = None
    max_task_regression: float | None = None
    max_regression: float | None = None
    forbid: tuple[str, ...] = ("do_not_ship",)
    fail_on_significant_regression: bool = True
    min_consistency: float | None = None
    strict_env: bool = False
    vary: tuple[str, ...] = ()
    hazards: tuple[str, ...] = field(default=HAZARD_KINDS, compare=False)  # the hazard kinds `forbid` may name

    def __post_init__(self) -> None:
        for name in (
            "min_pass_hat_k", "min_pass_at_1", "min_pass_rate", "max_task_regression", "max_regression",
            "min_consistency",
        ):  # fmt: skip
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        if self.at_k is not None and self.at_k < 1:
            raise ValueError(f"at_k must be >= 1, got {self.at_k}")
        unknown = [f for f in self.forbid if f not in CATEGORIES and f not in self.hazards]
        if unknown:
            valid = ", ".join((*CATEGORIES, *self.hazards))
            raise ValueError(f"forbid: unknown category or hazard {', '.join(unknown)}; valid: {valid}")

    @classmethod
    def from_mapping(
        cls, values: Mapping[str, Any], source: str = "thresholds", hazards: tuple[str, ...] = HAZARD_KINDS
    ) -> GateThresholds:
        """Thresholds from a parsed YAML/JSON mapping (keys with ``-`` or ``_``); ValueError names bad keys.
        ``hazards``: the hazard kinds ``forbid`` may name (the built-in ones and the plugins')."""
        names = {f.name for f in fields(cls)} - {"hazards"}
        kwargs: dict[str, Any] = {}
        for key, value in values.items():
            name = str(key).replace("-", "_")
            if name not in names:
                raise ValueError(f"{source}: unknown key {key!r}; valid: {', '.join(sorted(names))}")
            if name in ("forbid", "vary"):
                value = (value,) if isinstance(value, str) else tuple(value or ())
            elif value is not None and not _TYPE_OK[name](value):
                raise ValueError(f"{source}: {key} must be {_TYPE_NAMES[name]}, got {value!r}")
            kwargs[name] = value
        try:
            return cls(**kwargs, hazards=hazards)
        except ValueError as exc:  # a value out of its range: named with where it came from, as a bad key is
            raise ValueError(f"{source}: {exc}") from None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPE_OK = {
    "min_pass_hat_k": _number,
    "min_pass_at_1": _number,
    "min_pass_rate": _number,
    "max_task_regression": _number,
    "max_regression": _number,
    "min_consistency": _number,
    "at_k": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "fail_on_significant_regression": lambda v: isinstance(v, bool),
    "strict_env": lambda v: isinstance(v, bool),
}
_TYPE_NAMES = {name: "a number between 0 and 1" for name in _TYPE_OK} | {
    "at_k": "a whole number >= 1",
    "fail_on_significant_regression": "true or false",
    "strict_env": "true or false",
}


@dataclass(frozen=True)
class GateCheck:
    """One threshold's outcome: ``message`` says what was measured, against what, and what to look at.
    ``judged`` False: the check had nothing to measure (no baseline, one day only); it neither passes
    nor fails, and says why."""

    name: str
    passed: bool
    message: str
    threshold: Any = None
    value: Any = None
    tasks: list[str] = field(default_factory=list)
    judged: bool = True

    @property
    def status(self) -> str:
        """``pass``, ``fail`` or ``not_judged``."""
        return NOT_JUDGED if not self.judged else PASS if self.passed else FAIL


def not_judged(name: str, why: str, threshold: Any = None) -> GateCheck:
    """A check with nothing to measure: neither a pass nor a fail."""
    return GateCheck(name, True, why, threshold, None, judged=False)


@dataclass(frozen=True)
class GateResult:
    """The verdict (see the module docstring): ``passed`` when no judged check failed."""

    baseline: str
    candidate: str
    checks: list[GateCheck]

    @property
    def passed(self) -> bool:
        """True when no judged check failed (a check not judged neither passes nor fails)."""
        return all(c.passed for c in self.checks if c.judged)

    @property
    def verdict(self) -> str:
        """``fail`` when a judged check failed, ``not_judged`` when none did and one could not be judged,
        else ``pass``."""
        if not self.passed:
            return FAIL
        return NOT_JUDGED if any(not c.judged for c in self.checks) else PASS

    @property
    def failures(self) -> list[GateCheck]:
        """The checks that failed, in check order."""
        return [c for c in self.checks if c.judged and not c.passed]


def run_gate(
    base: VariantSummary | None,
    cand: VariantSummary,
    comparison: Comparison | None,
    thresholds: GateThresholds,
    consistency: Properties | None = None,
    env_problems: Sequence[str] | None = None,
) -> GateResult:
    """Apply every enabled threshold to the candidate (and its comparison with the baseline; None: no
    baseline ran, so every comparison is not judged while the floors still apply). ``consistency`` is the
    candidate's properties (for ``min_consistency``), ``env_problems`` what the environment comparison
    found (for ``strict_env``); a floor whose input is missing fails, saying so."""
    t = thresholds
    checks: list[GateCheck] = []
    if t.min_pass_rate is not None:
        ok = cand.pooled_rate >= t.min_pass_rate - 1e-12
        rate = f"{cand.passes}/{cand.runs} = {cand.pooled_rate:.3f}"
        msg = f"pass rate {rate} (every attempt of {cand.n_tasks} tasks) vs minimum {t.min_pass_rate:g}"
        checks.append(GateCheck("min_pass_rate", ok, msg, t.min_pass_rate, cand.pooled_rate))
    if t.min_pass_hat_k is not None:
        checks.append(_pass_hat_k(cand, t.min_pass_hat_k, t.at_k))
    if t.min_pass_at_1 is not None:
        ok = cand.pass_at_1 >= t.min_pass_at_1
        msg = (
            f"pass@1 {cand.pass_at_1:.3f} (mean of {cand.n_tasks} tasks, n = {cand.runs}) "
            f"vs minimum {t.min_pass_at_1:g}"
        )
        checks.append(GateCheck("min_pass_at_1", ok, msg, t.min_pass_at_1, cand.pass_at_1))
    for name in t.forbid:
        checks.append(_forbidden(cand, name))
    checks += _comparisons(base, comparison, t)
    if t.min_consistency is not None:
        checks.append(_consistency(consistency, t.min_consistency))
    if t.strict_env:
        checks.append(_strict_env(env_problems))
    baseline = comparison.baseline if comparison is not None else base.variant if base is not None else "no baseline"
    return GateResult(baseline, cand.variant, checks)


def _comparisons(base: VariantSummary | None, comparison: Comparison | None, t: GateThresholds) -> list[GateCheck]:
    """The checks that need a baseline: not judged, saying why, when there is nothing to compare."""
    wanted = [
        (name, threshold)
        for name, threshold, on in (
            ("max_task_regression", t.max_task_regression, t.max_task_regression is not None),
            ("max_regression", t.max_regression, t.max_regression is not None),
            ("significant_regression", comparison.alpha if comparison else None, t.fail_on_significant_regression),
        )
        if on
    ]
    why = None
    if comparison is None:
        why = "no baseline attempts in the selection" if base is None else "no comparison"
    elif comparison.common_tasks == 0:
        why = f"no task ran under both {comparison.baseline} and {comparison.candidate}"
    if why is not None:
        return [not_judged(name, f"nothing to compare: {why}", threshold) for name, threshold in wanted]
    assert comparison is not None
    checks = []
    if t.max_task_regression is not None:
        checks.append(_task_regression(comparison, t.max_task_regression))
    if t.max_regression is not None:
        checks.append(_overall_regression(comparison, t.max_regression))
    if t.fail_on_significant_regression:
        worse = comparison.significant and comparison.regressed > comparison.improved
        checks.append(
            GateCheck("significant_regression", not worse, comparison.statement, comparison.alpha, comparison.p_value)
        )
    return checks


def _pass_hat_k(cand: VariantSummary, minimum: float, at_k: int | None) -> GateCheck:
    k = at_k or cand.k
    if k not in cand.pass_hat_k:
        msg = (
            f"pass^{k} cannot be estimated: the candidate's smallest task has {cand.k_cap} attempts; "
            f"run at least {k} attempts per task, or gate at k <= {cand.k_cap}"
        )
        return GateCheck("min_pass_hat_k", False, msg, minimum, None)
    value = cand.pass_hat_k[k]
    msg = f"pass^{k} {value:.3f} over {cand.n_tasks} tasks (n = {cand.runs}) vs minimum {minimum:g}"
    return GateCheck("min_pass_hat_k", value >= minimum, msg, minimum, value)


def _task_regression(cmp: Comparison, limit: float) -> GateCheck:
    # A tiny tolerance so that "drop exactly the limit" passes despite float rounding of c/n.
    over = [d for d in cmp.regressions if -d.delta > limit + 1e-12]
    if not over:
        worst = cmp.regressions[0] if cmp.regressions else None
        shown = f"largest task drop {-worst.delta:.3f} ({worst.task_id})" if worst else "no task regressed"
        return GateCheck(
            "max_task_regression", True, f"{shown}, within {limit:g}", limit, -worst.delta if worst else 0.0
        )
    listed = "; ".join(
        f"{d.task_id} fell from {d.baseline_c}/{d.baseline_n} to {d.candidate_c}/{d.candidate_n} ({d.delta:+.3f})"
        for d in over[:5]
    )
    more = f" and {len(over) - 5} more" if len(over) > 5 else ""
    msg = f"{len(over)} {_tasks(len(over))} dropped more than {limit:g}: {listed}{more}"
    return GateCheck("max_task_regression", False, msg, limit, -over[0].delta, [d.task_id for d in over])


def _overall_regression(cmp: Comparison, limit: float) -> GateCheck:
    drop = -cmp.pass_at_1_delta
    if math.isnan(drop):
        return not_judged("max_regression", "nothing to compare: no task ran under both variants", limit)
    msg = (
        f"pass@1 changed by {cmp.pass_at_1_delta:+.3f} (paired mean over {cmp.common_tasks} tasks) "
        f"vs allowed drop {limit:g}"
    )
    return GateCheck("max_regression", drop <= limit + 1e-12, msg, limit, cmp.pass_at_1_delta)


def _forbidden(cand: VariantSummary, name: str) -> GateCheck:
    if name in CATEGORIES:
        hits = [c for c in cand.categories if c.category == name]
        label = CATEGORY_LABELS[name]
        details = [f"{c.task_id} ({'; '.join(c.reasons)})" for c in hits]
    else:
        hits = [c for c in cand.categories if c.hazard_attempts.get(name)]
        label = hazard_label(name)
        details = [f"{c.task_id} ({c.hazard_attempts[name]} attempts)" for c in hits]
    if not hits:
        return GateCheck(f"forbid:{name}", True, f"no task is {label}", name, 0)
    more = f"; and {len(hits) - 3} more" if len(hits) > 3 else ""
    msg = f"{len(hits)} {_tasks(len(hits))} {label}: {'; '.join(details[:3])}{more}"
    return GateCheck(f"forbid:{name}", False, msg, name, len(hits), [c.task_id for c in hits])


def _consistency(props: Properties | None, minimum: float) -> GateCheck:
    if props is None or props.measured_tasks == 0:
        why = "no task of the candidate has two attempts" if props is not None else "no consistency figures"
        return GateCheck("min_consistency", False, f"consistency cannot be measured: {why}; run -k 2 or more", minimum)
    value = props.consistency
    off = [t for t in props.tasks if t.n >= 2 and not t.consistent]
    listed = "; ".join(f"{t.task_id} ({t.output_classes} results in {t.n} attempts)" for t in off[:5])
    more = f" and {len(off) - 5} more" if len(off) > 5 else ""
    msg = (
        f"consistency {value:.3f} ({props.consistent_tasks}/{props.measured_tasks} tasks gave one result) "
        f"vs minimum {minimum:g}" + (f"; inconsistent: {listed}{more}" if off else "")
    )
    return GateCheck("min_consistency", value >= minimum - 1e-12, msg, minimum, value, [t.task_id for t in off])


def _strict_env(problems: Sequence[str] | None) -> GateCheck:
    if problems is None:
        return GateCheck("strict_env", False, "no environment recorded for the compared variants", True)
    if not problems:
        return GateCheck("strict_env", True, "baseline and candidate ran in one environment, but for --vary", True, 0)
    more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
    return GateCheck("strict_env", False, "; ".join(problems[:3]) + more, True, len(problems))


def _tasks(n: int) -> str:
    return "task" if n == 1 else "tasks"
