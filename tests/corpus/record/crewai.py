"""Recorder for CrewAI (`crewai`) traced by OpenInference, see run.py for the contract.

    python crewai.py --modes        # {mode: {ENV: value}}
    python crewai.py --scenarios    # the scenarios it supports
    python crewai.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Instrumentation: `openinference-instrumentation-crewai` (crews, tasks, agents, tool use) together with
`openinference-instrumentation-openai` for the model calls, as OpenInference documents for CrewAI; content on by
default. CrewAI's own telemetry and tracing (to its service) are switched off with CREWAI_DISABLE_TELEMETRY /
CREWAI_TRACING_ENABLED before import. The model is CrewAI's native OpenAI provider (`LLM(model="openai/<model>",
base_url=OPENAI_BASE_URL)`).

Agents and tasks: one `Agent(role="weather_agent", tools=[get_weather, get_time])` and one `Task` per user turn
whose description is the user's text; each turn is one `Crew(...).kickoff()`. CrewAI has no conversation: a crew
run is a task, so multi_turn is two kickoffs of the same agent, the second unaware of the first (the mode scripts
the model by call order, `CORPUS_SCRIPT_ORDER=calls`). A tool that raises is caught by CrewAI and its error handed
to the model. handoff: CrewAI's own delegation: triage_agent (`allow_delegation=True`) and billing_agent in one
crew; the triage agent calls CrewAI's `Delegate work to coworker` tool (task, context and coworker scripted through
CORPUS_HANDOFF_ARGUMENTS), billing_agent runs that as a task of its own (a new conversation), and the triage agent
answers with its result.
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

_DELEGATE = {
    "task": "Refund order 42.",
    "context": "The user asked: Please refund order 42.",
    "coworker": "billing_agent",
}
MODES: dict[str, dict[str, str]] = {
    "openinference": {"CORPUS_SCRIPT_ORDER": "calls", "CORPUS_HANDOFF_ARGUMENTS": json.dumps(_DELEGATE)},
}

WEATHER = {
    "Paris": {"city": "Paris", "forecast": "sunny", "temp_c": 21},
    "London": {"city": "London", "forecast": "rainy", "temp_c": 14},
    "Rome": {"city": "Rome", "forecast": "cloudy", "temp_c": 18},
}


def setup_otel() -> Any:
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    CrewAIInstrumentor().instrument(tracer_provider=provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    return provider


def build_tools() -> dict[str, Any]:
    from crewai.tools import tool

    @tool("get_weather")
    def get_weather(city: str) -> dict:
        """Get the current weather for a city."""
        if city in WEATHER:
            return dict(WEATHER[city])
        raise ValueError(f"unknown city: {city}")

    @tool("get_time")
    def get_time(city: str) -> dict:
        """Get the current local time in a city."""
        return {"city": city, "time": "14:00"}

    @tool("issue_refund")
    def issue_refund(order_id: int) -> dict:
        """Refund an order."""
        return {"order_id": order_id, "status": "refunded"}

    return {"get_weather": get_weather, "get_time": get_time, "issue_refund": issue_refund}


def run_scenario(scenario: str) -> None:
    from crewai import LLM, Agent, Crew, Task

    llm = LLM(
        model=f"openai/{os.environ['CORPUS_MODEL']}",
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY", "sim"),
    )
    tools = build_tools()
    if scenario == "handoff":
        billing = Agent(
            role="billing_agent",
            goal="Refund orders with issue_refund.",
            backstory="You are the billing agent.",
            tools=[tools["issue_refund"]],
            llm=llm,
            allow_delegation=False,
        )
        triage = Agent(
            role="triage_agent",
            goal="Send billing questions to the billing agent.",
            backstory="You are the triage agent.",
            llm=llm,
            allow_delegation=True,
        )
        agents = [triage, billing]
    else:
        agents = [
            Agent(
                role="weather_agent",
                goal="Answer questions about the weather and the time.",
                backstory="You are a weather assistant. Use the tools to answer.",
                tools=[tools["get_weather"], tools["get_time"]],
                llm=llm,
                allow_delegation=False,
            )
        ]
    for turn in SCENARIOS[scenario]["turns"]:
        task = Task(description=turn["user"], expected_output="A short answer.", agent=agents[0])
        result = Crew(agents=agents, tasks=[task]).kickoff()
        print(f"[{scenario}] {turn['user']!r} -> {result.raw!r}", file=sys.stderr)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--modes"]:
        print(json.dumps(MODES))
        return 0
    if argv[:1] == ["--scenarios"]:
        print(json.dumps(list(SCENARIOS)))
        return 0
    os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"  # CrewAI's own telemetry to its service
    os.environ["CREWAI_TRACING_ENABLED"] = "false"  # and its own tracing platform
    provider = setup_otel()
    try:
        run_scenario(argv[0])
    finally:
        provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
