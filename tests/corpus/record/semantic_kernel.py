"""Recorder for Semantic Kernel agents (`semantic-kernel`) with its own OpenTelemetry diagnostics, see run.py.

    python semantic_kernel.py --modes        # {mode: {ENV: value}}
    python semantic_kernel.py --scenarios    # the scenarios it supports (no handoff, see below)
    python semantic_kernel.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Telemetry: Semantic Kernel's built-in GenAI diagnostics, switched on by
`SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS` (spans) and `..._SENSITIVE` (content, which Semantic
Kernel writes as Python log records with an `event.name`). The recorder wires them as Semantic Kernel's telemetry
sample does: a TracerProvider, and a LoggerProvider whose `LoggingHandler` sits on the root logger behind a
`logging.Filter("semantic_kernel")` at level INFO (so Semantic Kernel's other INFO logs are exported too).

Agent: `ChatCompletionAgent('weather_agent')` with `OpenAIChatCompletion(ai_model_id=CORPUS_MODEL)` on an
`AsyncOpenAI` client at OPENAI_BASE_URL and a plugin `Weather` (get_weather, get_time) as kernel functions; the
agent's default function choice (auto) invokes them. Each turn is one `agent.get_response(messages=..., thread=...)`;
all turns of a scenario share one `ChatHistoryAgentThread`. A kernel function that raises is reported to the model
by Semantic Kernel's auto-invocation loop.

No handoff: Semantic Kernel's hand-off primitive (`HandoffOrchestration`) passes the delegate only the messages
its members answered with; a member that hands off answers nothing, so the delegate starts from the user's message
alone, and the scenario's scripted model (which needs the conversation to show the transfer) cannot play it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Annotated, Any

HERE = Path(__file__).resolve().parent
# this file is named like the package it records: keep its own folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
SCENARIOS = {
    k: v
    for k, v in json.loads((HERE / "scenarios.json").read_text()).items()
    if not k.startswith("_") and k != "handoff"
}

_ON = "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"
MODES: dict[str, dict[str, str]] = {
    "sensitive": {_ON: "true", f"{_ON}_SENSITIVE": "true"},
    "diagnostics": {_ON: "true", f"{_ON}_SENSITIVE": "false"},
}

WEATHER = {
    "Paris": {"city": "Paris", "forecast": "sunny", "temp_c": 21},
    "London": {"city": "London", "forecast": "rainy", "temp_c": 14},
    "Rome": {"city": "Rome", "forecast": "cloudy", "temp_c": 18},
}


def setup_otel() -> tuple[Any, Any]:
    from opentelemetry import _logs, trace
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    _logs.set_logger_provider(logger_provider)
    handler = LoggingHandler(logger_provider=logger_provider)
    handler.addFilter(logging.Filter("semantic_kernel"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return tracer_provider, logger_provider


def build() -> Any:
    from openai import AsyncOpenAI
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
    from semantic_kernel.functions import kernel_function

    class Weather:
        @kernel_function(description="Get the current weather for a city.")
        def get_weather(self, city: Annotated[str, "the city"]) -> dict:
            if city in WEATHER:
                return dict(WEATHER[city])
            raise ValueError(f"unknown city: {city}")

        @kernel_function(description="Get the current local time in a city.")
        def get_time(self, city: Annotated[str, "the city"]) -> dict:
            return {"city": city, "time": "14:00"}

    client = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim"))
    service = OpenAIChatCompletion(ai_model_id=os.environ["CORPUS_MODEL"], async_client=client)
    return ChatCompletionAgent(
        service=service,
        name="weather_agent",
        instructions="You are a weather assistant. Use the tools to answer.",
        plugins=[Weather()],
    )


async def run_scenario(scenario: str) -> None:
    from semantic_kernel.agents import ChatHistoryAgentThread

    agent = build()
    thread = ChatHistoryAgentThread()
    for turn in SCENARIOS[scenario]["turns"]:
        response = await agent.get_response(messages=turn["user"], thread=thread)
        thread = response.thread
        print(f"[{scenario}] {turn['user']!r} -> {str(response.content)!r}", file=sys.stderr)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--modes"]:
        print(json.dumps(MODES))
        return 0
    if argv[:1] == ["--scenarios"]:
        print(json.dumps(list(SCENARIOS)))
        return 0
    tracer_provider, logger_provider = setup_otel()
    try:
        asyncio.run(run_scenario(argv[0]))
    finally:
        tracer_provider.shutdown()
        logger_provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
