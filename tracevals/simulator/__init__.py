"""A simulated model server: deterministic behaviour profiles behind real HTTP.

    from tracevals.simulator import SimulatedModelServer, register_profile

It speaks OpenAI chat completions (`POST /v1/chat/completions`), the OpenAI Responses API
(`POST /v1/responses`) and Anthropic messages (`POST /v1/messages`), each plain or streamed as
server-sent events, so the real `openai` and `anthropic` clients run against it unchanged.

Stdlib only. A request's `model` picks a registered profile; its `seed` (with the profile's seed)
fixes every random decision, so the same request gets the same answer in any order, on any thread.
"""

from tracevals.simulator.conversation import Conversation, Message, ModelTurn, PlannedCall, ToolCall, ToolSpec
from tracevals.simulator.engine import Completion, SimulatedModel, estimate_tokens
from tracevals.simulator.errors import ModelNotFound, SimulatorError
from tracevals.simulator.profiles import (
    DEFAULT_REGISTRY,
    Policy,
    Profile,
    ProfileRegistry,
    add_profile,
    get_profile,
    profile_names,
    register_profile,
    unregister_profile,
)
from tracevals.simulator.rng import Decisions, combine_seeds, rng, stable_hash
from tracevals.simulator.server import SimulatedModelServer

__all__ = [
    "DEFAULT_REGISTRY",
    "Completion",
    "Conversation",
    "Decisions",
    "Message",
    "ModelNotFound",
    "ModelTurn",
    "PlannedCall",
    "Policy",
    "Profile",
    "ProfileRegistry",
    "SimulatedModel",
    "SimulatedModelServer",
    "SimulatorError",
    "ToolCall",
    "ToolSpec",
    "add_profile",
    "combine_seeds",
    "estimate_tokens",
    "get_profile",
    "profile_names",
    "register_profile",
    "rng",
    "stable_hash",
    "unregister_profile",
]
