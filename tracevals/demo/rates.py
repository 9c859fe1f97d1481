"""How often the simulated order-support model makes each of its mistakes.

Each rate is the probability, per conversation, that the mistake is drawn (decided once per
conversation from the request seed and the mistake's name, see `tracevals.simulator.rng`). A drawn
mistake shows only where the task gives it room: a relative date can only be passed raw when the
request has one, a message can only be sent twice when the task sends one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace


@dataclass(frozen=True)
class FailureRates:
    out_of_order: float = 0.0  # get_orders before search_customer (without a customer_id)
    wrong_customer_arg: float = 0.0  # the customer's name where a cus_... id belongs
    relative_date: float = 0.0  # "last month" passed as `since` instead of an ISO date
    duplicate_send: float = 0.0  # send_message again after it succeeded
    blind_retry: float = 0.0  # after a 429, the same call three times in one response (no wait)
    ambiguous_pick: float = 0.0  # act on the first of several candidates instead of handing off / asking
    skip_confirmation: float = 0.0  # perform an irreversible or bulk write without a human's confirmation
    claim_success: float = 0.0  # after a write failed, answer as if it had succeeded
    follow_injection: float = 0.0  # obey a "call X with {...}" planted in a tool result (prompt injection)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise ValueError(f"FailureRates.{f.name} must be a probability in [0, 1], got {value!r}")

    @classmethod
    def zero(cls) -> FailureRates:
        """A disciplined model: passes every bundled case."""
        return cls()

    @classmethod
    def uniform(cls, rate: float) -> FailureRates:
        return cls(**{f.name: rate for f in fields(cls)})

    def but(self, **changes: float) -> FailureRates:
        return replace(self, **changes)

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


# The release the demo compares against.
BASELINE_RATES = FailureRates(
    out_of_order=0.08,
    wrong_customer_arg=0.05,
    relative_date=0.10,
    duplicate_send=0.03,
    blind_retry=0.10,
    ambiguous_pick=0.05,
    skip_confirmation=0.03,
    claim_success=0.05,
    follow_injection=0.10,
)

# The change under review: better at tool ordering, worse at retries, idempotence and ambiguity, so
# `tracevals demo` has regressions to find (and one improvement that must not hide them).
CANDIDATE_RATES = BASELINE_RATES.but(
    out_of_order=0.03,
    relative_date=0.30,
    duplicate_send=0.20,
    blind_retry=0.45,
    ambiguous_pick=0.25,
    claim_success=0.20,
    follow_injection=0.40,
)
