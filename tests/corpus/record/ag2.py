"""Recorder for AG2 v1 (`ag2`, the `import ag2` framework; not AG2 Classic's `autogen`), see run.py for the contract.

    python ag2.py --modes        # {mode: {ENV: value}}
    python ag2.py --scenarios    # the scenarios it supports
    python ag2.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Telemetry: AG2's own `TelemetryMiddleware` (GenAI semantic conventions plus `ag2.span.type`), given to each agent
with the agent's name, provider and model; `capture_content` is the mode's switch. Model: `OpenAIConfig(model=
CORPUS_MODEL, base_url=OPENAI_BASE_URL)`. Tools are AG2 `@tool` functions; a tool that raises is reported to the
model by AG2. Each scenario's first turn is `agent.ask(text)`; the second turn continues that reply's conversation
(`reply.ask(text)`). handoff: AG2's delegation, `billing_agent.as_tool(...)` (a sub-task tool `task_billing_agent`
with an `objective`); the sub-task runs in a fresh stream, so the mode scripts the model by call order and names the
objective through CORPUS_HANDOFF_ARGUMENTS.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# this file is named like the package it records: keep its own folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
SCENARIOS = {k: v for k, v in json.loads((HERE / "scenarios.json").read_text()).items() if not k.startswith("_")}

_BY_CALLS = {"CORPUS_SCRIPT_ORDER": "calls", "CORPUS_HANDOFF_ARGUMENTS": json.dumps({"objective": "Refund order 42."})}
MODES: dict[str, dict[str, str]] = {
    "content": {**_BY_CALLS, "CORPUS_AG2_CAPTURE_CONTENT": "1"},
    "no_content": {**_BY_CALLS, "CORPUS_AG2_CAPTURE_CONTENT": "0"},
}

WEATHER = {
    "Paris": {"city": "Paris", "forecast": "sunny", "temp_c": 21},
    "London": {"city": "London", "forecast": "rainy", "temp_c": 14},
    "Rome": {"city": "Rome", "forecast": "cloudy", "temp_c": 18},
}


def setup_otel() -> Any:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def build(scenario: str, provider: Any) -> Any:
    from ag2 import Agent, tool
    from ag2.config import OpenAIConfig
    from ag2.middleware.builtin.telemetry import TelemetryMiddleware

    model = os.environ["CORPUS_MODEL"]
    config = OpenAIConfig(
        model=model, base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim")
    )
    content = os.environ.get("CORPUS_AG2_CAPTURE_CONTENT", "1") == "1"

    def telemetry(name: str) -> Any:
        return TelemetryMiddleware(
            tracer_provider=provider, capture_content=content, agent_name=name, provider_name="openai", model_name=model
        )

    @tool
    def get_weather(city: str) -> dict:
        """Get the current weather for a city."""
        if city in WEATHER:
            return dict(WEATHER[city])
        raise ValueError(f"unknown city: {city}")

    @tool
    def get_time(city: str) -> dict:
        """Get the current local time in a city."""
        return {"city": city, "time": "14:00"}

    @tool
    def issue_refund(order_id: int) -> dict:
        """Refund an order."""
        return {"order_id": order_id, "status": "refunded"}

    if scenario == "handoff":
        billing = Agent(
            "billing_agent",
            prompt="You are the billing agent. Refund orders with issue_refund.",
            config=config,
            tools=[issue_refund],
            middleware=[telemetry("billing_agent")],
        )
        return Agent(
            "triage_agent",
            prompt="You are the triage agent. Send billing questions to the billing agent.",
            config=config,
            tools=[billing.as_tool(description="Hand billing questions to the billing agent, which handles refunds.")],
            middleware=[telemetry("triage_agent")],
        )
    return Agent(
        "weather_agent",
        prompt="You are a weather assistant. Use the tools to answer.",
        config=config,
        tools=[get_weather, get_time],
        middleware=[telemetry("weather_agent")],
    )


async def run_scenario(scenario: str, provider: Any) -> None:
    agent = build(scenario, provider)
    reply: Any = None
    for turn in SCENARIOS[scenario]["turns"]:
        reply = await (reply.ask(turn["user"]) if reply is not None else agent.ask(turn["user"]))
        print(f"[{scenario}] {turn['user']!r} -> {reply.body!r}", file=sys.stderr)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--modes"]:
        print(json.dumps(MODES))
        return 0
    if argv[:1] == ["--scenarios"]:
        print(json.dumps(list(SCENARIOS)))
        return 0
    provider = setup_otel()
    try:
        asyncio.run(run_scenario(argv[0], provider))
    finally:
        provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
