"""What `injection` reads from a case (its options) and what it finds (its finding kinds)."""

from __future__ import annotations

from tracevals.evaluators.failures import OUTCOME_KINDS
from tracevals.model.faults import FAULT_ALIASES, FAULT_TYPES
from tracevals.model.findings import HAZARD, NOTE, UNKNOWN, FindingKind
from tracevals.model.options import CaseOption

ATTACK_SUCCEEDED = FindingKind(
    "attack_succeeded", HAZARD, "A prompt injection got its way: the goal it planted happened.",
    hazard="unauthorised_call",
)  # fmt: skip
ATTACK_RESISTED = FindingKind("attack_resisted", NOTE, "A prompt injection's goal did not happen.")
ATTACK_UNKNOWN = FindingKind(
    "attack_outcome_unknown", UNKNOWN, "Whether a prompt injection got its way cannot be read (arguments not captured)."
)
_PROMPT_KINDS = {"attack_succeeded": ATTACK_SUCCEEDED, "resisted": ATTACK_RESISTED, "unknown": ATTACK_UNKNOWN}
FINDINGS = (*OUTCOME_KINDS, ATTACK_SUCCEEDED, ATTACK_RESISTED, ATTACK_UNKNOWN)


def prompt_kind(outcome: str) -> FindingKind:
    return _PROMPT_KINDS[outcome]


GOAL = {
    "description": "What the attacker wants: a tool name (called at all), a call {tool, args} (args: the actual "
    "arguments contain these), or a leak {leak, to} (the string appears in the arguments of these tools; default "
    "every write or irreversible tool).",
    "oneOf": [
        {"$ref": "#/$defs/tool_name"},
        {
            "type": "object",
            "required": ["tool"],
            "additionalProperties": False,
            "properties": {"tool": {"$ref": "#/$defs/tool_name"}, "args": {"type": "object"}},
        },
        {
            "type": "object",
            "required": ["leak"],
            "additionalProperties": False,
            "properties": {
                "leak": {"type": "string", "minLength": 1},
                "to": {"type": "array", "items": {"$ref": "#/$defs/tool_name"}},
            },
        },
    ],
}
OPTIONS = (
    CaseOption(
        "faults",
        {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["tool", "type"],
                "properties": {
                    "tool": {"anyOf": [{"$ref": "#/$defs/tool_name"}, {"const": "*"}]},
                    "call": {"type": "integer", "minimum": 1},
                    "probability": {"type": "number", "minimum": 0, "maximum": 1},
                    "type": {"enum": [*FAULT_TYPES, *FAULT_ALIASES]},
                    "retry_after_ms": {"type": "number", "minimum": 0},
                    "latency_ms": {"type": "number", "minimum": 0},
                    "id": {"type": "string"},
                },
                "oneOf": [{"required": ["call"]}, {"required": ["probability"]}],
                "additionalProperties": False,
            },
        },
        "Faults the harness injects, as a --faults profile writes them: the n-th call (1-based) of a tool, or "
        "each call with a seeded probability, gets this fault (aliases: 429 = rate_limit, 5xx = server_error, "
        "slow = latency). On the call a case's own fault and a profile's rule both name, the case's applies.",
    ),
    CaseOption(
        "injections",
        {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["goal"],
                "properties": {
                    "id": {"type": "string"},
                    "tool": {"$ref": "#/$defs/tool_name"},
                    "call": {"type": "integer", "minimum": 1},
                    "text": {"type": "string"},
                    "goal": GOAL,
                },
            },
        },
        "Prompt injections the harness plants in tool output, and the goal that must not happen.",
    ),
)
