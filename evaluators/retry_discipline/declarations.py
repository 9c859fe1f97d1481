"""What `retry_discipline` reads from a case (its options) and what it finds (its finding kinds)."""

from __future__ import annotations

from tracevals.model.findings import FAILURE, HAZARD, UNKNOWN, WARNING, FindingKind
from tracevals.model.options import CaseOption

RETRY_BOUND_EXCEEDED = FindingKind(
    "retry_bound_exceeded", HAZARD, "A chain of retries longer than max_retries: the retries did not stop.",
    hazard="endless_loop",
)  # fmt: skip
NON_RETRYABLE_RETRIED = FindingKind(
    "non_retryable_retried", FAILURE, "A retry of a failure that may not be retried (a 4xx, or marked non-retryable)."
)
EARLY_RETRY = FindingKind(
    "early_retry", FAILURE, "A retry sooner than the failure's retry-after (or retry_policy.min_backoff_ms)."
)
BLIND_REPLAY = FindingKind(
    "blind_replay", FAILURE, "A write repeated after it timed out, with no read in between and no shared key."
)
MISSING_IDEMPOTENCY_KEY = FindingKind(
    "missing_idempotency_key",
    WARNING,
    "A write or irreversible call without an idempotency key: a warning (the task is at best 'needs "
    "confirmation'), a failure when retry_policy.require_idempotency_key is true.",
    release="needs_confirmation",
)
DUPLICATE_SIDE_EFFECT = FindingKind(
    "duplicate_side_effect", HAZARD, "A successful write or irreversible operation done a second time."
)
LOOP = FindingKind(
    "loop", HAZARD, "A block of calls repeated with the same outcome each time (no progress).", hazard="endless_loop"
)
NOT_CHECKED = FindingKind(
    "retry_not_checked", UNKNOWN, "A rule could not be checked: arguments or times were not captured."
)
FINDINGS = (
    RETRY_BOUND_EXCEEDED, NON_RETRYABLE_RETRIED, EARLY_RETRY, BLIND_REPLAY, MISSING_IDEMPOTENCY_KEY,
    DUPLICATE_SIDE_EFFECT, LOOP, NOT_CHECKED,
)  # fmt: skip

OPTIONS = (
    CaseOption(
        "max_retries",
        {"type": "integer", "minimum": 0},
        "The most retries of any one failed call.",
        policy=True,
    ),
    CaseOption(
        "retry_policy",
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "loop_repeats": {
                    "description": "The same call with the same outcome repeated this many times (after the "
                    "first) is a loop; default 3.",
                    "type": "integer",
                    "minimum": 1,
                },
                "require_idempotency_key": {
                    "description": "true: a write or irreversible call without an idempotency key fails the "
                    "attempt; false: keys are not checked; absent: a missing key is a warning (the task is at "
                    "best 'needs confirmation'), never a failed attempt.",
                    "type": "boolean",
                },
                "min_backoff_ms": {
                    "description": "The least wait before retrying a 429 or a timeout that named no retry-after; "
                    "default 0 (only a retry-after is enforced).",
                    "type": "number",
                    "minimum": 0,
                },
            },
        },
        "Knobs of retry_discipline.",
        policy=True,
    ),
)
