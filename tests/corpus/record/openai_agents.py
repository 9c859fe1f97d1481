"""Recorder for the OpenAI Agents SDK (`openai-agents`), see run.py for the contract.

    python openai_agents.py --modes        # {mode: {ENV: value}}
    python openai_agents.py --scenarios    # the scenarios it supports
    python openai_agents.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Two instrumentations bridge the SDK's own tracing (its `TracingProcessor` hooks) to OpenTelemetry; the mode's
`CORPUS_INSTRUMENTATION` picks one:

- `openinference`: `openinference-instrumentation-openai-agents` (OpenInference attributes, content by default;
  the `OPENINFERENCE_HIDE_*` variables of its `TraceConfig` hide it).
- `otel_v2`: `opentelemetry-instrumentation-openai-agents-v2` (GenAI semantic conventions; content mode from
  `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`).

The SDK's own exporter (the upload to OpenAI's trace endpoint) is removed by replacing the SDK's processors,
not by `set_tracing_disabled`, which would silence the instrumentations too. The model is the Chat Completions
API at OPENAI_BASE_URL (`OpenAIChatCompletionsModel`), name CORPUS_MODEL. Every turn of a scenario runs in one
`SQLiteSession` (in memory, id `corpus-<scenario>`); each `Runner.run` is one SDK trace (one OTLP trace per turn),
with the session id as the run's `group_id` and, for OpenInference, as `session.id` (`using_session`).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# Other recorders live beside this file (one is `mcp.py`): keep them from shadowing installed packages.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
SCENARIOS = {k: v for k, v in json.loads((HERE / "scenarios.json").read_text()).items() if not k.startswith("_")}

_HIDE = {
    "OPENINFERENCE_HIDE_INPUTS": "true",
    "OPENINFERENCE_HIDE_OUTPUTS": "true",
    "OPENINFERENCE_HIDE_INPUT_MESSAGES": "true",
    "OPENINFERENCE_HIDE_OUTPUT_MESSAGES": "true",
    "OPENINFERENCE_HIDE_INPUT_TEXT": "true",
    "OPENINFERENCE_HIDE_OUTPUT_TEXT": "true",
}

MODES: dict[str, dict[str, str]] = {
    "openinference": {"CORPUS_INSTRUMENTATION": "openinference"},
    "openinference_hidden": {"CORPUS_INSTRUMENTATION": "openinference", **_HIDE},
    "otel_v2_span_only": {
        "CORPUS_INSTRUMENTATION": "otel_v2",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
    },
    "otel_v2_event_only": {
        "CORPUS_INSTRUMENTATION": "otel_v2",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "event_only",
    },
    "otel_v2_no_content": {
        "CORPUS_INSTRUMENTATION": "otel_v2",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "no_content",
    },
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
    from opentelemetry.sdk._logs import LoggerProvider
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
    return tracer_provider, logger_provider


def instrument(tracer_provider: Any) -> None:
    from agents import set_trace_processors

    set_trace_processors([])  # drop the SDK's own exporter to OpenAI's trace endpoint
    which = os.environ.get("CORPUS_INSTRUMENTATION", "openinference")
    if which == "openinference":
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        OpenAIAgentsInstrumentor().instrument(tracer_provider=tracer_provider)
    elif which == "otel_v2":
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor as V2

        V2().instrument(tracer_provider=tracer_provider)
    else:
        raise SystemExit(f"unknown CORPUS_INSTRUMENTATION {which!r}")


def build_agents(scenario: str) -> Any:
    from agents import Agent, OpenAIChatCompletionsModel, function_tool
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim"))
    model = OpenAIChatCompletionsModel(model=os.environ["CORPUS_MODEL"], openai_client=client)

    @function_tool
    def get_weather(city: str) -> dict:
        """Get the current weather for a city."""
        if city in WEATHER:
            return dict(WEATHER[city])
        raise ValueError(f"unknown city: {city}")

    @function_tool
    def get_time(city: str) -> dict:
        """Get the current local time in a city."""
        return {"city": city, "time": "14:00"}

    @function_tool
    def issue_refund(order_id: int) -> dict:
        """Refund an order."""
        return {"order_id": order_id, "status": "refunded"}

    if scenario == "handoff":
        billing = Agent(
            name="billing_agent",
            instructions="You handle billing: refunds with issue_refund.",
            model=model,
            tools=[issue_refund],
        )
        return Agent(
            name="triage_agent",
            instructions="Hand billing questions to the billing agent.",
            model=model,
            handoffs=[billing],
        )
    return Agent(
        name="weather_agent",
        instructions="You are a weather assistant. Use the tools for weather and time.",
        model=model,
        tools=[get_weather, get_time],
    )


async def run_scenario(scenario: str) -> None:
    from agents import RunConfig, Runner, SQLiteSession

    agent = build_agents(scenario)
    session_id = f"corpus-{scenario}"
    session = SQLiteSession(session_id)
    for turn in SCENARIOS[scenario]["turns"]:
        config = RunConfig(workflow_name=f"corpus {scenario}", group_id=session_id)
        if os.environ.get("CORPUS_INSTRUMENTATION", "openinference") == "openinference":
            from openinference.instrumentation import using_session

            with using_session(session_id):
                result = await Runner.run(agent, turn["user"], session=session, run_config=config)
        else:
            result = await Runner.run(agent, turn["user"], session=session, run_config=config)
        print(f"[{scenario}] {turn['user']!r} -> {result.final_output!r}", file=sys.stderr)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--modes"]:
        print(json.dumps(MODES))
        return 0
    if argv[:1] == ["--scenarios"]:
        print(json.dumps(list(SCENARIOS)))
        return 0
    scenario = argv[0]
    tracer_provider, logger_provider = setup_otel()
    instrument(tracer_provider)
    try:
        asyncio.run(run_scenario(scenario))
    finally:
        from agents.tracing import get_trace_provider

        get_trace_provider().shutdown()  # ends the SDK's traces, so the bridges end their spans
        tracer_provider.shutdown()
        logger_provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
