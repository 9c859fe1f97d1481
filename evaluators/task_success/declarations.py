"""What `task_success` reads from a case (its options) and what it finds (its finding kinds)."""

from __future__ import annotations

from tracevals.model.findings import FAILURE, FindingKind
from tracevals.model.options import CaseOption

CRITERION_NOT_MET = FindingKind(
    "criterion_not_met", FAILURE, "A success criterion the final output does not meet (evidence: which, and its value)."
)
ATTEMPT_RAISED = FindingKind("attempt_raised", FAILURE, "The attempt raised: there is no answer to judge.")
NO_OUTPUT = FindingKind("no_output", FAILURE, "The attempt recorded no output to judge.")
CHECKER_ERROR = FindingKind(
    "checker_error", FAILURE, "The case's checker could not be loaded or raised: the check fails, the run goes on."
)
FINDINGS = (CRITERION_NOT_MET, ATTEMPT_RAISED, NO_OUTPUT, CHECKER_ERROR)

OPTIONS = (
    CaseOption(
        "success_criteria",
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "must_include": {
                    "$ref": "#/$defs/strings",
                    "description": "Strings the output must contain (case-insensitive).",
                },
                "must_not_include": {
                    "$ref": "#/$defs/strings",
                    "description": "Strings the output must not contain (case-insensitive).",
                },
                "regex": {
                    "oneOf": [{"type": "string"}, {"$ref": "#/$defs/strings"}],
                    "description": "Patterns the output must match (re.search); every one must.",
                },
                "json_schema": {
                    "type": "object",
                    "description": "The output, parsed as JSON, must be valid against this schema.",
                },
                "checker": {
                    "description": "A custom checker, as 'module:function', called as f(output, case) and returning "
                    "a bool, a score in [0, 1], or (bool, reason).",
                    "$ref": "#/$defs/callable",
                },
            },
        },
        "Checks on the attempt's final output.",
    ),
)
