"""The context an agent function receives for one attempt (the agent contract).

An agent is any callable `agent(input: str, ctx: AttemptContext) -> str`, sync or async. The context
carries what makes attempts differ by construction, frozen by the harness so a run can be repeated:
the attempt's seed, session id, idempotency key, clock and locale, plus free-form settings (such as
the model endpoint) that the harness passes through untouched.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

AttemptKey = tuple[str, str, int]  # (variant, task_id, attempt): one attempt of a run
# What ties a trace (its trajectory, its scores) to a session and, from a harness run, to an attempt: the
# same columns in the lake's views and score rows as fields of `Trajectory` and `Score`.
ATTEMPT_FIELDS = ("session_id", "run_id", "task_id", "attempt", "variant")


def attempt_fields(row: Any) -> dict[str, Any]:
    """The `ATTEMPT_FIELDS` of a row (a mapping of column -> value), as keyword arguments."""
    return {name: row[name] for name in ATTEMPT_FIELDS}


def derive_seed(*parts: object) -> int:
    """A stable 63-bit seed from any parts (stable across processes, unlike `hash()`)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True)
class AttemptContext:
    run_id: str
    task_id: str
    attempt: int
    variant: str
    seed: int
    session_id: str
    idempotency_key: str
    now: datetime = field(default_factory=lambda: datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc))
    locale: str = "en_US"
    settings: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_attempt(
        cls,
        run_id: str,
        task_id: str,
        attempt: int,
        variant: str,
        base_seed: int = 0,
        **settings: Any,
    ) -> AttemptContext:
        key = f"{run_id}:{variant}:{task_id}:{attempt}"
        return cls(
            run_id=run_id,
            task_id=task_id,
            attempt=attempt,
            variant=variant,
            # The same seed for every variant: common random numbers make the per-task comparison
            # of two variants a paired one.
            seed=derive_seed(base_seed, task_id, attempt),
            session_id=f"sess-{derive_seed(key):016x}",
            idempotency_key=key,
            settings=dict(settings),
        )
