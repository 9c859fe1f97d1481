"""The simulated model itself, independent of any wire format: conversation in, completion out.

Everything a response contains is derived from the request and the profile (ids, tool call ids, the
turn, token counts), so the same request always gets the same completion, whichever thread serves it
and whatever else the server is doing. Only `time.sleep` for the configured latency touches the
outside world, so that a model round trip takes time the way a provider's does.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from tracevals.simulator.conversation import Conversation, ModelTurn
from tracevals.simulator.profiles import DEFAULT_REGISTRY, Profile, ProfileRegistry
from tracevals.simulator.rng import Decisions, combine_seeds, stable_hash

CHARS_PER_TOKEN = 4  # the usual rough ratio for English text; a stand-in, never a real tokenizer


def estimate_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN


def prompt_text(conversation: Conversation) -> str:
    """Everything the model reads, flattened, for the token estimate (tool schemas count too)."""
    parts: list[str] = []
    for m in conversation.messages:
        parts.append(m.content)
        parts.extend(c.name + c.arguments for c in m.tool_calls)
    parts.extend(json.dumps({"name": t.name, "parameters": dict(t.parameters)}) for t in conversation.tools)
    return "".join(parts)


def completion_text(turn: ModelTurn) -> str:
    return (turn.content or "") + "".join(c.name + c.arguments_json() for c in turn.tool_calls)


@dataclass(frozen=True)
class Completion:
    profile: Profile
    turn: ModelTurn
    response_id: str
    tool_call_ids: tuple[str, ...]
    prompt_tokens: int
    completion_tokens: int
    key: str = ""  # 16 hex digits fixed by the request: each wire format derives its own ids from it

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class SimulatedModel:
    def __init__(self, registry: ProfileRegistry | None = None, latency_ms: float = 0.0) -> None:
        self.registry = registry if registry is not None else DEFAULT_REGISTRY
        self.latency_ms = latency_ms  # the "network" part, added to each profile's own think time

    def complete(self, conversation: Conversation) -> Completion:
        profile = self.registry.get(conversation.model)
        seed = combine_seeds(conversation.seed, profile.seed)
        turn = profile.policy.respond(conversation, Decisions(seed))
        prompt = prompt_text(conversation)
        fingerprint = stable_hash(profile.name, seed, len(conversation.messages), prompt)
        # Ids derive from the conversation so far: unique within a conversation (it grows every turn)
        # and reproducible across runs, which makes recorded traces diffable.
        call_ids = tuple(f"call_{stable_hash(fingerprint, 'call', i):016x}" for i in range(len(turn.tool_calls)))
        delay_s = (self.latency_ms + profile.latency_ms) / 1000.0
        if delay_s > 0:
            time.sleep(delay_s)
        return Completion(
            profile=profile,
            turn=turn,
            response_id=f"chatcmpl-sim{fingerprint:016x}",
            tool_call_ids=call_ids,
            prompt_tokens=estimate_tokens(prompt),
            completion_tokens=estimate_tokens(completion_text(turn)),
            key=f"{fingerprint:016x}",
        )
