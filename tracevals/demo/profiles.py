"""The two named order-support profiles the demo compares, a disciplined one that makes no mistake (the
demo's variance attribution runs it to show a world's flakiness alone), and `make_profile` for any other
rates.

Both profiles share one seed on purpose: with the same request seed, a mistake drawn at the lower rate
is drawn at the higher one too, so baseline and candidate differ only where their rates differ and the
per-task comparison is a paired one.
"""

from __future__ import annotations

from tracevals.demo.policy import OrderSupportPolicy
from tracevals.demo.rates import BASELINE_RATES, CANDIDATE_RATES, FailureRates
from tracevals.simulator import DEFAULT_REGISTRY, Profile, ProfileRegistry

BASELINE = "order-support-baseline"
CANDIDATE = "order-support-candidate"
DISCIPLINED = "order-support-disciplined"  # no mistakes: every bundled case passes, whatever the seed
PROFILE_SEED = 0
# Longer than the 20 ms retry-after of an injected 429 (see tracevals/harness/faults.py): re-issuing a call in the
# next response waits long enough, firing copies in the same response does not.
LATENCY_MS = 30.0


def make_profile(name: str, rates: FailureRates, seed: int = PROFILE_SEED, latency_ms: float = LATENCY_MS) -> Profile:
    described = ", ".join(f"{k}={v:g}" for k, v in rates.as_dict().items() if v)
    return Profile(
        name=name,
        policy=OrderSupportPolicy(rates),
        seed=seed,
        latency_ms=latency_ms,
        description=f"order support ({described or 'no mistakes'})",
    )


def register_order_support_profiles(registry: ProfileRegistry | None = None) -> tuple[Profile, Profile]:
    """Register baseline, candidate and the disciplined model (in the default registry unless one is
    given); returns baseline and candidate."""
    target = registry if registry is not None else DEFAULT_REGISTRY
    target.add(make_profile(DISCIPLINED, FailureRates.zero()))
    return (
        target.add(make_profile(BASELINE, BASELINE_RATES)),
        target.add(make_profile(CANDIDATE, CANDIDATE_RATES)),
    )
