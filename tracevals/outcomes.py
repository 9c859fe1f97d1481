"""From scored trajectories to per-attempt outcomes, the input of the statistics.

An attempt passed when every evaluator that applied to it passed. A retry is a tool call that
repeats the call just before it (same tool, same arguments) after that call failed; an attempt
"passed first time" when it passed with no retry.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise

from tracevals.evaluators.model import Score, ToolCall, Trajectory
from tracevals.stats import Outcome

# USD per million tokens (input, output). The simulated models are priced like a small hosted model,
# so that the demo's cost column means something; unknown models cost 0 and say so in the docs.
DEFAULT_PRICES: Mapping[str, tuple[float, float]] = {
    "order-support-baseline": (0.15, 0.60),
    "order-support-candidate": (0.15, 0.60),
}


def count_retries(calls: Sequence[ToolCall]) -> int:
    retries = 0
    for previous, current in pairwise(calls):
        if previous.failed and current.name == previous.name and current.args == previous.args:
            retries += 1
    return retries


def cost_usd(
    model: str | None, input_tokens: int, output_tokens: int, prices: Mapping[str, tuple[float, float]] = DEFAULT_PRICES
) -> float:
    price_in, price_out = prices.get(model or "", (0.0, 0.0))
    return (input_tokens * price_in + output_tokens * price_out) / 1_000_000


def outcomes(
    trajectories: Iterable[Trajectory],
    scores: Iterable[Score],
    models: Mapping[str, str] | None = None,
    prices: Mapping[str, tuple[float, float]] = DEFAULT_PRICES,
) -> list[Outcome]:
    """One `Outcome` per harness attempt (trajectories without a task or variant are skipped).

    `models` maps a variant to the model it used, for pricing.
    """
    by_trace: dict[str, list[Score]] = defaultdict(list)
    for s in scores:
        if s.trace_id is not None:
            by_trace[s.trace_id].append(s)
    result = []
    for t in trajectories:
        if t.task_id is None or t.variant is None:
            continue
        verdicts = by_trace.get(t.trace_id, [])
        passed = bool(verdicts) and all(s.passed for s in verdicts)
        retries = count_retries(t.tool_calls)
        model = (models or {}).get(t.variant)
        result.append(
            Outcome(
                variant=t.variant,
                task_id=t.task_id,
                attempt=t.attempt or 0,
                passed=passed,
                first_pass=passed and retries == 0,
                retries=retries,
                handoff=t.handed_off,
                latency_ms=t.duration_ms,
                cost=cost_usd(model, t.input_tokens, t.output_tokens, prices),
                tokens=t.input_tokens + t.output_tokens,
                error=t.error_type,
            )
        )
    return result
