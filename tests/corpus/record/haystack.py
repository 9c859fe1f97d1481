"""Recorder for Haystack agents (`haystack-ai`) traced by `opentelemetry-haystack`, see run.py for the contract.

    python haystack.py --modes        # {mode: {ENV: value}}
    python haystack.py --scenarios    # the scenarios it supports
    python haystack.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Instrumentation: Haystack's tracing API with the OpenTelemetry tracer that now ships as `opentelemetry-haystack`
(`haystack_integrations.tracing.opentelemetry.OpenTelemetryTracer`, enabled with `haystack.tracing.enable_tracing`,
as its `OpenTelemetryConnector` does). Content (component inputs and outputs) only with
`HAYSTACK_CONTENT_TRACING_ENABLED=true`.

Agents: `haystack.components.agents.Agent` with `OpenAIChatGenerator` (Chat Completions at OPENAI_BASE_URL, model
CORPUS_MODEL) and function `Tool`s; a tool that raises is handed to the model as an error message (the Agent's
default `raise_on_tool_invocation_failure=False`). Each turn is one `agent.run(messages=...)`; multi_turn passes
the first run's messages into the second. handoff: Haystack has no hand-off primitive; its idiom is an agent used
through a tool. The triage agent's tool `transfer_to_billing_agent` (no arguments; it reads the conversation from
the agent's State) runs billing_agent on that conversation plus its own result, and
`exit_conditions=["transfer_to_billing_agent"]` ends the triage run with it.
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

MODES: dict[str, dict[str, str]] = {
    "content": {"HAYSTACK_CONTENT_TRACING_ENABLED": "true"},
    "no_content": {"HAYSTACK_CONTENT_TRACING_ENABLED": "false"},
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
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)

    from haystack import tracing
    from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer

    tracing.enable_tracing(OpenTelemetryTracer(trace.get_tracer("haystack")))
    return provider


def tool(function: Any, **kwargs: Any) -> Any:
    from haystack.tools import create_tool_from_function

    return create_tool_from_function(function, **kwargs)


def build(scenario: str) -> Any:
    from haystack.components.agents import Agent
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage, ToolCall
    from haystack.tools import Tool
    from haystack.utils import Secret

    def generator() -> Any:
        return OpenAIChatGenerator(
            model=os.environ["CORPUS_MODEL"],
            api_base_url=os.environ["OPENAI_BASE_URL"],
            api_key=Secret.from_env_var("OPENAI_API_KEY"),
        )

    if scenario != "handoff":
        return Agent(
            chat_generator=generator(),
            tools=[tool(get_weather), tool(get_time)],
            system_prompt="You are a weather assistant. Use the tools to answer.",
        )
    billing = Agent(
        chat_generator=generator(),
        tools=[tool(issue_refund)],
        system_prompt="You are the billing agent. Refund orders with issue_refund.",
    )

    def transfer_to_billing_agent(messages: list) -> str:
        """Hand the conversation to the billing agent, which handles refunds."""
        call = next(c for c in reversed(messages[-1].tool_calls) if c.tool_name == "transfer_to_billing_agent")
        history = [m for m in messages if not m.is_from("system")]
        history.append(ChatMessage.from_tool("Transferred to billing_agent.", origin=ToolCall(**call.to_dict())))
        result = billing.run(messages=history)
        return result["last_message"].text or ""

    transfer = Tool(
        name="transfer_to_billing_agent",
        description="Hand the conversation to the billing agent, which handles refunds.",
        parameters={"type": "object", "properties": {}},
        function=transfer_to_billing_agent,
        inputs_from_state={"messages": "messages"},
    )
    return Agent(
        chat_generator=generator(),
        tools=[transfer],
        system_prompt="You are the triage agent. Send billing questions to the billing agent.",
        exit_conditions=["transfer_to_billing_agent"],
    )


def run_scenario(scenario: str) -> None:
    from haystack.dataclasses import ChatMessage

    agent = build(scenario)
    history: list[Any] = []
    for turn in SCENARIOS[scenario]["turns"]:
        result = agent.run(messages=[*history, ChatMessage.from_user(turn["user"])])
        history = [m for m in result["messages"] if not m.is_from("system")]
        last = result["last_message"]  # the transfer tool's message when the triage run exits through it
        answer = last.text if last.text is not None else last.tool_call_result.result
        print(f"[{scenario}] {turn['user']!r} -> {answer!r}", file=sys.stderr)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--modes"]:
        print(json.dumps(MODES))
        return 0
    if argv[:1] == ["--scenarios"]:
        print(json.dumps(list(SCENARIOS)))
        return 0
    provider = setup_otel()
    try:
        run_scenario(argv[0])
    finally:
        provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
