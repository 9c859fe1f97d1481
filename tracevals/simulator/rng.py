"""Keyed randomness for simulated models: every random decision is a pure function of its seed and name.

A simulated model must answer the same conversation the same way no matter how many other requests
the server handled before it, or in which order concurrent attempts arrived. So there is no shared
random stream: each decision draws from its own generator, seeded by a stable hash (sha256, never
the salted built-in `hash()`) of the conversation's seed and the decision's name. Keying by name also
keeps a decision stable across the successive requests of one conversation: "does this model send
the message twice?" gets the same answer on every turn, so a policy can act on it consistently.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

_SEP = "\x1f"  # a separator no seed or decision name contains, so ("a", "bc") != ("ab", "c")
_SCALE = float(1 << 63)


def stable_hash(*parts: object) -> int:
    """A 63-bit integer from any parts, identical across processes, platforms and Python versions."""
    digest = hashlib.sha256(_SEP.join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def combine_seeds(request_seed: int | None, profile_seed: int) -> int:
    """The seed of one conversation: the request's `seed` parameter mixed with the profile's own seed.

    A request without a seed is as deterministic as one with seed 0 would be, under a distinct key,
    because a reproducible stand-in is worth more than imitating a provider's sampling noise.
    """
    return stable_hash("conversation", profile_seed, "none" if request_seed is None else request_seed)


def rng(seed: int, name: str) -> random.Random:
    """A generator private to one named decision of one conversation."""
    return random.Random(stable_hash(seed, name))


class Decisions:
    """The named random decisions of one conversation (see the module docstring)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def uniform(self, name: str) -> float:
        """A number in [0, 1) fixed by (seed, name)."""
        return stable_hash(self.seed, name) / _SCALE

    def chance(self, name: str, rate: float) -> bool:
        """True with probability `rate`; the comparison with one shared uniform per name means that,
        under the same seed, a profile with a higher rate fails on a superset of the conversations a
        lower rate fails on, so two profiles compare pairwise (common random numbers)."""
        if rate <= 0.0:
            return False
        if rate >= 1.0:
            return True
        return self.uniform(name) < rate

    def choice(self, name: str, options: Sequence[T]) -> T:
        if not options:
            raise ValueError(f"decision {name!r}: no options to choose from")
        return options[rng(self.seed, name).randrange(len(options))]

    def randint(self, name: str, low: int, high: int) -> int:
        """An integer in [low, high], both ends included."""
        return rng(self.seed, name).randint(low, high)

    def derive(self, *parts: object) -> int:
        """A stable integer from this conversation's seed and `parts` (ids, fingerprints)."""
        return stable_hash(self.seed, *parts)
