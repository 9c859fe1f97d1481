"""What `trajectory_match` reads from a case (its options) and what it finds (its finding kinds)."""

from __future__ import annotations

from tracevals.model.findings import FAILURE, NOTE, FindingKind
from tracevals.model.options import CaseOption

MISSING_STEP = FindingKind(
    "missing_step", FAILURE, "An expected step no call made (a note in subset mode, which allows it)."
)
EXTRA_CALL = FindingKind(
    "extra_call", FAILURE, "A call no expected step asks for (a note in superset and in_order modes, which allow it)."
)
STEP_OUT_OF_ORDER = FindingKind("step_out_of_order", FAILURE, "An expected step made, but out of order.")
ARGUMENTS_DIFFER = FindingKind(
    "arguments_differ", FAILURE, "The step's tool was called, with arguments its rule does not accept."
)
ARGUMENTS_NOT_CAPTURED = FindingKind(
    "arguments_not_captured", FAILURE, "The step's tool was called, but its arguments were not captured to compare."
)
COMPARISON_ERROR = FindingKind(
    "comparison_error", FAILURE, "A case's `compare` callable could not be loaded or raised: that step's arguments "
    "count as not matching, and the run goes on.",
)  # fmt: skip
MATCH_CONFIG_ERROR = FindingKind("match_config_error", FAILURE, "The case's match mode or argument mode is unknown.")
REQUESTED_NOT_EXECUTED = FindingKind(
    "requested_not_executed", NOTE, "A tool call a model requested and no span executed (a gap): counted as not made."
)
FINDINGS = (
    MISSING_STEP, EXTRA_CALL, STEP_OUT_OF_ORDER, ARGUMENTS_DIFFER, ARGUMENTS_NOT_CAPTURED, COMPARISON_ERROR,
    MATCH_CONFIG_ERROR, REQUESTED_NOT_EXECUTED,
)  # fmt: skip

_ARGS_MODE = {"enum": ["exact", "ignore", "superset", "subset"]}
OPTIONS = (
    CaseOption(
        "expected_steps",
        {
            "type": "array",
            "items": {
                "oneOf": [
                    {"$ref": "#/$defs/tool_name"},
                    {
                        "type": "object",
                        "required": ["tool"],
                        "additionalProperties": False,
                        "properties": {"tool": {"$ref": "#/$defs/tool_name"}, "args": {"type": "object"}},
                    },
                ]
            },
        },
        'The tool calls a good attempt makes: a tool name, or {"tool": name, "args": {...}}.',
    ),
    CaseOption(
        "match",
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "mode": {"enum": ["strict", "unordered", "superset", "subset", "in_order"]},
                "args": _ARGS_MODE,
                "overrides": {
                    "description": "Per tool: another argument mode, only these (dotted) key paths compared, "
                    "and/or a custom comparison 'module:function' called as f(expected_args, actual_args) -> "
                    'bool. Shorthand: a mode alone ("ignore") or a list of key paths (["customer_id"]).',
                    "type": "object",
                    "propertyNames": {"$ref": "#/$defs/tool_name"},
                    "additionalProperties": {
                        "oneOf": [
                            {
                                "type": "object",
                                "additionalProperties": False,
                                "minProperties": 1,
                                "properties": {
                                    "args": _ARGS_MODE,
                                    "keys": {"$ref": "#/$defs/strings", "minItems": 1},
                                    "compare": {"$ref": "#/$defs/callable"},
                                },
                            },
                            _ARGS_MODE,
                            {"$ref": "#/$defs/strings", "minItems": 1},
                        ]
                    },
                },
            },
        },
        "How expected_steps are compared with the executed calls.",
    ),
)
