"""What an evaluator found, as kinds: the structured part of a score's details (`details.findings`).

Each finding is `{"kind": <one of the constants below>, "call": "name#position" | None, "problem": <the
sentence the reason shows>}`. Consumers (the release categories in `tracevals.stats.outcomes`, a
user's SQL over `scores.details`) read the kind; the sentence is for people and may change wording.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# retry_discipline
RETRY_BOUND_EXCEEDED = "retry_bound_exceeded"  # a chain held more retries than max_retries
NON_RETRYABLE_RETRIED = "non_retryable_retried"  # a retry of a failure that may not be retried
EARLY_RETRY = "early_retry"  # a retry sooner than the failure's retry-after (or min_backoff_ms)
BLIND_REPLAY = "blind_replay"  # a risky call repeated after a timeout with no read in between
MISSING_IDEMPOTENCY_KEY = "missing_idempotency_key"  # a write or irreversible call without a key
DUPLICATE_SIDE_EFFECT = "duplicate_side_effect"  # a successful risky operation done twice
LOOP = "loop"  # a block of calls repeated with the same outcome (no progress)

RETRY_KINDS = (
    RETRY_BOUND_EXCEEDED,
    NON_RETRYABLE_RETRIED,
    EARLY_RETRY,
    BLIND_REPLAY,
    MISSING_IDEMPOTENCY_KEY,
    DUPLICATE_SIDE_EFFECT,
    LOOP,
)


def finding(kind: str, problem: str, call: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "call": call, "problem": problem}


def findings_of(details: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The well-formed findings of a score's details (none for details written before findings existed)."""
    items: Iterable[Any] = (details or {}).get("findings") or ()
    return [f for f in items if isinstance(f, dict) and isinstance(f.get("kind"), str)]
