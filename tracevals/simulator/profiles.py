"""Behaviour profiles: what the `model` field of a request selects.

A profile is a policy (the code that decides the model's next turn from the conversation and the
conversation's named random decisions) plus the profile's own seed and optional think time. Profiles
live in a registry; the server looks the model name up on every request, so profiles registered
after the server started are served too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from tracevals.simulator.conversation import Conversation, ModelTurn
from tracevals.simulator.errors import ModelNotFound
from tracevals.simulator.rng import Decisions


@runtime_checkable
class Policy(Protocol):
    """Decides the model's next turn. Must be a pure function of its two arguments: the server calls
    it from many threads at once, and determinism rests on it keeping no state between calls."""

    def respond(self, conversation: Conversation, decisions: Decisions) -> ModelTurn: ...


PolicyFn = Callable[[Conversation, Decisions], ModelTurn]


@dataclass(frozen=True)
class _FunctionPolicy:
    fn: PolicyFn

    def respond(self, conversation: Conversation, decisions: Decisions) -> ModelTurn:
        return self.fn(conversation, decisions)


@dataclass(frozen=True)
class Profile:
    name: str
    policy: Policy
    seed: int = 0
    latency_ms: float = 0.0  # think time added to every response of this profile
    description: str = ""


def as_policy(policy: Policy | PolicyFn) -> Policy:
    return policy if isinstance(policy, Policy) else _FunctionPolicy(policy)


class ProfileRegistry:
    """Name -> profile, safe to read while other threads register."""

    def __init__(self) -> None:
        self._profiles: dict[str, Profile] = {}
        self._lock = threading.Lock()

    def add(self, profile: Profile) -> Profile:
        # Re-registering a name replaces it: modules that register at import may be imported twice
        # (tests, reloads), and the newest definition is the one meant.
        with self._lock:
            self._profiles[profile.name] = profile
        return profile

    def register(
        self,
        name: str,
        policy: Policy | PolicyFn,
        *,
        seed: int = 0,
        latency_ms: float = 0.0,
        description: str = "",
    ) -> Profile:
        """Register a profile: `policy` answers each request (a `Policy` or a plain function)."""
        return self.add(Profile(name, as_policy(policy), seed, latency_ms, description))

    def remove(self, name: str) -> None:
        with self._lock:
            self._profiles.pop(name, None)

    def get(self, name: str) -> Profile:
        with self._lock:
            profile = self._profiles.get(name)
            if profile is None:
                raise ModelNotFound(name, sorted(self._profiles))
            return profile

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._profiles)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._profiles


# The default registry (the one a server without its own registry uses); its methods, as functions.
DEFAULT_REGISTRY = ProfileRegistry()
register_profile = DEFAULT_REGISTRY.register
add_profile = DEFAULT_REGISTRY.add  # an already built `Profile`
unregister_profile = DEFAULT_REGISTRY.remove
get_profile = DEFAULT_REGISTRY.get
profile_names = DEFAULT_REGISTRY.names
