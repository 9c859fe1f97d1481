"""Recorder for Agno (`agno`) traced by OpenInference, see run.py for the contract.

    python agno.py --modes        # {mode: {ENV: value}}
    python agno.py --scenarios    # the scenarios it supports
    python agno.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Instrumentation: `openinference-instrumentation-agno` (`AgnoInstrumentor`: agent and team runs, model calls, tool
calls), content on by default. Model: Agno's `OpenAIChat(id=CORPUS_MODEL, base_url=OPENAI_BASE_URL)`.

Agents: `Agent(name="weather_agent", tools=[get_weather, get_time])` with an `InMemoryDb`, a fixed
`session_id="corpus-<scenario>"` and `add_history_to_context=True`, so multi_turn's second `agent.run()` sees the
first turn. A tool that raises is caught by Agno and its error handed to the model. handoff: an Agno `Team` in
`mode="route"` (its router pattern: the leader hands the task to one member and returns the member's answer); the
team is the triage (name triage_agent), billing_agent its member. The leader calls Agno's
`delegate_task_to_member(member_id, task)`; the member starts a conversation of its own from the task, so
the mode scripts the model by call order and names member and task through CORPUS_HANDOFF_ARGUMENTS.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# this file is named like the package it records: keep its own folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
SCENARIOS = {k: v for k, v in json.loads((HERE / "scenarios.json").read_text()).items() if not k.startswith("_")}

_DELEGATE = {"member_id": "billing_agent", "task": "Refund order 42."}
MODES: dict[str, dict[str, str]] = {
    "openinference": {"CORPUS_SCRIPT_ORDER": "calls", "CORPUS_HANDOFF_ARGUMENTS": json.dumps(_DELEGATE)},
}

WEATHER = {
    "Paris": {"city": "Paris", "forecast": "sunny", "temp_c": 21},
    "London": {"city": "London", "forecast": "rainy", "temp_c": 14},
    "Rome": {"city": "Rome", "forecast": "cloudy", "temp_c": 18},
}


def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    if city in WEATHER:
        return dict(WEATHER[city])
    raise ValueError(f"unknown city: {city}")


def get_time(city: str) -> dict:
    """Get the current local time in a city."""
    return {"city": city, "time": "14:00"}


def issue_refund(order_id: int) -> dict:
    """Refund an order."""
    return {"order_id": order_id, "status": "refunded"}


def setup_otel() -> Any:
    from openinference.instrumentation.agno import AgnoInstrumentor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    AgnoInstrumentor().instrument(tracer_provider=provider)
    return provider


def build(scenario: str) -> Any:
    from agno.agent import Agent
    from agno.db.in_memory import InMemoryDb
    from agno.models.openai import OpenAIChat
    from agno.team import Team

    def model() -> Any:
        return OpenAIChat(
            id=os.environ["CORPUS_MODEL"],
            base_url=os.environ["OPENAI_BASE_URL"],
            api_key=os.environ.get("OPENAI_API_KEY", "sim"),
        )

    if scenario == "handoff":
        billing = Agent(
            id="billing_agent",
            name="billing_agent",
            model=model(),
            tools=[issue_refund],
            instructions="You are the billing agent. Refund orders with issue_refund.",
        )
        return Team(
            name="triage_agent",
            mode="route",
            model=model(),
            members=[billing],
            instructions="You are the triage agent. Send billing questions to the billing agent.",
            session_id=f"corpus-{scenario}",
        )
    return Agent(
        name="weather_agent",
        model=model(),
        tools=[get_weather, get_time],
        instructions="You are a weather assistant. Use the tools to answer.",
        db=InMemoryDb(),
        session_id=f"corpus-{scenario}",
        add_history_to_context=True,
    )


def main(argv: list[str]) -> int:
    if argv[:1] == ["--modes"]:
        print(json.dumps(MODES))
        return 0
    if argv[:1] == ["--scenarios"]:
        print(json.dumps(list(SCENARIOS)))
        return 0
    scenario = argv[0]
    os.environ["AGNO_TELEMETRY"] = "false"  # Agno's own usage telemetry to its service
    provider = setup_otel()
    try:
        agent = build(scenario)
        for turn in SCENARIOS[scenario]["turns"]:
            result = agent.run(turn["user"])
            print(f"[{scenario}] {turn['user']!r} -> {result.content!r}", file=sys.stderr)
    finally:
        provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
