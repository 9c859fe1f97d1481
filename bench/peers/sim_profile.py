"""A simulated-model profile for the instrumentation benchmark: every request gets the same short answer.

Loaded into the simulator process: `python -m tracevals.simulator --port 0 --load sim_profile` with
bench/peers on PYTHONPATH. No tools, no randomness, no think time: the call costs the client's request
building, one loopback round trip and the parsing of a small response, so what an instrumentor adds
stands out.
"""

from __future__ import annotations

from tracevals.simulator import Conversation, Decisions, ModelTurn, register_profile

MODEL = "bench-echo"


def respond(conversation: Conversation, decisions: Decisions) -> ModelTurn:
    return ModelTurn(content="Order ord_7 has shipped.")


register_profile(MODEL, respond, description="constant short answer (bench/compare_instrumentation.py)")
