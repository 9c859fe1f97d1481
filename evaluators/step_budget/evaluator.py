"""`step_budget`: did the attempt stay within its budgets?

Budgets come from the case's `budgets` (or the scoring config's, which a case overrides key by key):

| key | measures |
|---|---|
| `max_steps` | model calls + executed tool calls |
| `max_model_calls` | model calls |
| `max_tool_calls` | executed tool calls, all tools |
| `max_tool_calls_per_tool` | executed calls of each named tool (one check per tool) |
| `max_retries_total` | retries in the attempt (see `retries.py`) |
| `max_tokens` / `max_input_tokens` / `max_output_tokens` | tokens over all model calls |
| `max_cost_usd` | the cost the spans recorded, else tokens at the case's or config's `prices` (over the defaults) |
| `max_duration_s` | wall time of the attempt |

Each budget is one check: within (actual <= limit), exceeded (a `budget_exceeded` finding, which fails
the attempt), or unknown (the data is missing: model calls without token counts, a model without a
price, no times; a `budget_unknown` finding). Unknown is neither a pass nor a fail: Score = checks
within / checks known (1 when none is known), passed when none is exceeded; the reason counts the
unknown ones. Not applicable when there are no budgets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from tracevals.evaluators.evaluator import Screened, executed_calls, make_score, share
from tracevals.evaluators.step_budget.declarations import BUDGET_EXCEEDED, BUDGET_UNKNOWN, FINDINGS, OPTIONS
from tracevals.model.case import Case
from tracevals.model.prices import cost as usage_cost
from tracevals.model.prices import with_defaults
from tracevals.model.retries import retry_count
from tracevals.model.score import Score
from tracevals.model.trajectory import Trajectory

BUDGET_KEYS = (
    "max_steps",
    "max_model_calls",
    "max_tool_calls",
    "max_tool_calls_per_tool",
    "max_retries_total",
    "max_tokens",
    "max_input_tokens",
    "max_output_tokens",
    "max_cost_usd",
    "max_duration_s",
)
_LABELS = {
    "max_steps": "steps",
    "max_model_calls": "model calls",
    "max_tool_calls": "tool calls",
    "max_retries_total": "retries",
    "max_tokens": "tokens",
    "max_input_tokens": "input tokens",
    "max_output_tokens": "output tokens",
    "max_cost_usd": "cost_usd",
    "max_duration_s": "duration_s",
}
Measure = tuple[float | None, str | None]  # (actual, why unknown)


@dataclass
class StepBudget(Screened):
    """Steps, tool calls (total and per tool), retries, tokens, cost and wall time within budgets."""

    name: ClassVar[str] = "step_budget"
    version: ClassVar[int] = 2  # 2: typed findings; an unknown check is left out of the score
    findings: ClassVar = FINDINGS
    options: ClassVar = OPTIONS
    screen_function: ClassVar[str] = "tracevals.evaluators.step_budget.screen:screen_budget"

    def evaluate(self, trajectory: Trajectory, case: Case | None) -> Score | None:
        budgets = dict(case.budgets) if case is not None else {}
        if not budgets:
            return None
        measures = measure_all(trajectory, case.prices if case is not None else {})
        checks: list[dict[str, Any]] = []
        for key in BUDGET_KEYS:
            if key not in budgets:
                continue
            if key == "max_tool_calls_per_tool":
                counts = Counter(c.name for c in executed_calls(trajectory))
                for tool, limit in sorted(budgets[key].items()):
                    checks.append(_check(f"calls of {tool}", limit, (float(counts[tool]), None)))
            else:
                checks.append(_check(_LABELS[key], budgets[key], measures[key]))
        return self.verdict(trajectory, checks)

    def verdict(self, trajectory: Trajectory, checks: list[dict[str, Any]]) -> Score:
        """The score of these checks (`_check`'s, in `BUDGET_KEYS` order): what `evaluate` returns, and what
        the screen copies to every trace whose checks say the same (`screen.settled`)."""
        within = sum(1 for c in checks if c["status"] == "within")
        exceeded = [c for c in checks if c["status"] == "exceeded"]
        unknown = [c for c in checks if c["status"] == "unknown"]
        score, arithmetic = share(within, len(checks) - len(unknown))
        parts = [f"{len(checks)} budgets, {len(exceeded)} exceeded, {len(unknown)} unknown; score={arithmetic}"]
        parts += [f"{c['label']} {_num(c['actual'])} > {_num(c['limit'])}" for c in exceeded]
        parts += [f"{c['label']} unknown ({c['why']})" for c in unknown]
        details = {
            "budgets": len(checks),
            "exceeded": [{k: c[k] for k in ("label", "limit", "actual")} for c in exceeded],
            "unknown": [{k: c[k] for k in ("label", "limit", "why")} for c in unknown],
        }
        found = [
            BUDGET_EXCEEDED(
                f"{c['label']} {_num(c['actual'])} > {_num(c['limit'])}",
                evidence={"budget": c["label"], "limit": c["limit"], "actual": c["actual"]},
            )
            for c in exceeded
        ]
        found += [
            BUDGET_UNKNOWN(f"{c['label']} unknown ({c['why']})", evidence={"budget": c["label"], "limit": c["limit"]})
            for c in unknown
        ]
        return make_score(self, trajectory, score=score, reason="; ".join(parts), details=details, findings=found)


def measure_all(trajectory: Trajectory, prices: Mapping[str, tuple[float, float]]) -> dict[str, Measure]:
    """Every budgeted quantity of `trajectory` (per-tool counts aside)."""
    calls = executed_calls(trajectory)
    tokens_known = trajectory.model_calls == 0 or trajectory.input_tokens + trajectory.output_tokens > 0
    no_tokens = "model calls recorded no token counts"

    def tokens(value: int) -> Measure:
        return (float(value), None) if tokens_known else (None, no_tokens)

    timed = trajectory.start_ms > 0 and trajectory.end_ms > 0
    return {
        "max_steps": (float(trajectory.model_calls + len(calls)), None),
        "max_model_calls": (float(trajectory.model_calls), None),
        "max_tool_calls": (float(len(calls)), None),
        "max_retries_total": (float(retry_count(calls)), None),
        "max_tokens": tokens(trajectory.input_tokens + trajectory.output_tokens),
        "max_input_tokens": tokens(trajectory.input_tokens),
        "max_output_tokens": tokens(trajectory.output_tokens),
        "max_cost_usd": cost_usd(trajectory, prices),
        "max_duration_s": (trajectory.duration_ms / 1000, None) if timed else (None, "start or end time not recorded"),
    }


def cost_usd(trajectory: Trajectory, prices: Mapping[str, tuple[float, float]]) -> Measure:
    """The recorded cost, else each model's tokens at its price (USD per million tokens)."""
    if trajectory.cost_usd is not None:
        return trajectory.cost_usd, None
    if trajectory.model_calls == 0:
        return 0.0, None
    if not trajectory.model_usage:
        return None, "no per-model token counts recorded"
    total, unpriced = usage_cost(trajectory.model_usage, with_defaults(prices))
    if unpriced:
        return None, f"no price for model {unpriced[0]!r}"
    return total, None


def _check(label: str, limit: float, measure: Measure) -> dict[str, Any]:
    actual, why = measure
    if actual is None:
        return {"label": label, "limit": limit, "actual": None, "status": "unknown", "why": why}
    status = "within" if actual <= limit else "exceeded"
    return {"label": label, "limit": limit, "actual": actual, "status": status}


def _num(value: float | None) -> str:
    """Counts as integers, money and seconds with four significant digits."""
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"
