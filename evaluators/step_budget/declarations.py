"""What `step_budget` reads from a case (its options) and what it finds (its finding kinds)."""

from __future__ import annotations

from tracevals.model.findings import FAILURE, UNKNOWN, FindingKind
from tracevals.model.options import CaseOption

BUDGET_EXCEEDED = FindingKind(
    "budget_exceeded", FAILURE, "A budget the attempt went over (evidence: which, limit, actual)."
)
BUDGET_UNKNOWN = FindingKind(
    "budget_unknown", UNKNOWN, "A budget that cannot be checked (no token counts, a model without a price, no "
    "times): neither within nor over it.",
)  # fmt: skip
FINDINGS = (BUDGET_EXCEEDED, BUDGET_UNKNOWN)

_COUNT = {"type": "integer", "minimum": 0}
OPTIONS = (
    CaseOption(
        "budgets",
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_steps": {"description": "model calls plus executed tool calls", **_COUNT},
                "max_model_calls": {"description": "model calls", **_COUNT},
                "max_tool_calls": {"description": "executed tool calls, all tools", **_COUNT},
                "max_retries_total": {
                    "description": "retries in the whole attempt (max_retries bounds each failed call)",
                    **_COUNT,
                },
                "max_tokens": {"description": "input plus output tokens", **_COUNT},
                "max_input_tokens": {"description": "input tokens", **_COUNT},
                "max_output_tokens": {"description": "output tokens", **_COUNT},
                "max_cost_usd": {
                    "description": "cost in USD (recorded, or from the prices of the case, the scoring config and "
                    "the lake)",
                    "type": "number",
                    "minimum": 0,
                },
                "max_duration_s": {
                    "description": "wall time of the attempt in seconds",
                    "type": "number",
                    "minimum": 0,
                },
                "max_tool_calls_per_tool": {
                    "description": "executed calls of each named tool",
                    "type": "object",
                    "propertyNames": {"$ref": "#/$defs/tool_name"},
                    "additionalProperties": _COUNT,
                },
            },
        },
        "Upper bounds on one attempt, each checked by step_budget.",
        policy=True,
    ),
)
