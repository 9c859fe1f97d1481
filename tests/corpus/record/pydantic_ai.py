"""Recorder for Pydantic AI (`pydantic-ai-slim[openai]`) with its built-in OpenTelemetry instrumentation.

    python pydantic_ai.py --modes        # {mode: {ENV: value}}
    python pydantic_ai.py --scenarios    # the scenarios it runs
    python pydantic_ai.py <scenario>     # run one (see run.py)

Instrumentation: `Agent.instrument_all(InstrumentationSettings(...))` with plain OpenTelemetry SDK providers
(no logfire). Pydantic AI emits spans only (no log records), so only a TracerProvider is set up. The mode
chooses the instrumentation data-format `version` (2 = legacy span names `agent run` / `running tool`;
5 = the default; 6 = tool results in `role='tool'` messages) and `include_content`.

Tool errors: `get_weather` raises `ValueError` as `_tools` says; Pydantic AI would abort the run on a plain
exception, so the registered tool wraps it and re-raises it as `ToolFailed(str(error))` (a terminal tool
failure the model sees, without retry instructions) from the original ValueError.

Handoff: Pydantic AI has no hand-off primitive; its idiom is delegation through a tool. The triage agent's
output function `transfer_to_billing_agent` (an output tool, so the triage run ends with the delegate's
answer instead of calling the model again) runs `billing_agent` on the conversation so far (plus the
transfer tool's return), sharing the run's usage (`usage=ctx.usage`) as Pydantic AI's delegation docs do.
"""

import asyncio
import json
import os
import sys
from pathlib import Path

MODES = {
    "v5_content": {"PAI_INSTRUMENTATION_VERSION": "5", "PAI_INCLUDE_CONTENT": "1"},
    "v6_content": {"PAI_INSTRUMENTATION_VERSION": "6", "PAI_INCLUDE_CONTENT": "1"},
    "v2_content": {"PAI_INSTRUMENTATION_VERSION": "2", "PAI_INCLUDE_CONTENT": "1"},
    "no_content": {"PAI_INSTRUMENTATION_VERSION": "5", "PAI_INCLUDE_CONTENT": "0"},
}
SCENARIOS = ["single", "tool_loop", "parallel", "multi_turn", "tool_error", "handoff"]
HERE = Path(__file__).resolve().parent
# this file is named like the package it records: keep its own folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

WEATHER = {
    "Paris": {"city": "Paris", "forecast": "sunny", "temp_c": 21},
    "London": {"city": "London", "forecast": "rainy", "temp_c": 14},
    "Rome": {"city": "Rome", "forecast": "cloudy", "temp_c": 18},
}


def _get_weather(city: str) -> dict:
    if city not in WEATHER:
        raise ValueError(f"unknown city: {city}")
    return dict(WEATHER[city])


def main() -> int:
    if sys.argv[1:] == ["--modes"]:
        print(json.dumps(MODES))
        return 0
    if sys.argv[1:] == ["--scenarios"]:
        print(json.dumps(SCENARIOS))
        return 0
    scenario_name = sys.argv[1]
    scenario = json.loads((HERE / "scenarios.json").read_text())[scenario_name]

    import warnings

    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_EXPORTER_OTLP_ENDPOINT
    trace.set_tracer_provider(provider)

    from pydantic_ai import Agent, RunContext, ToolFailed, ToolOutput
    from pydantic_ai.messages import ModelRequest, ToolReturnPart
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    version = int(os.environ.get("PAI_INSTRUMENTATION_VERSION", "5"))
    include_content = os.environ.get("PAI_INCLUDE_CONTENT", "1") == "1"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # versions 2-4 warn that they are deprecated
        settings = InstrumentationSettings(
            tracer_provider=provider,
            include_content=include_content,
            version=version,  # type: ignore[arg-type]
        )
    Agent.instrument_all(settings)

    model = OpenAIChatModel(
        os.environ["CORPUS_MODEL"],
        provider=OpenAIProvider(
            base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim")
        ),
    )

    def get_weather(city: str) -> dict:
        """Get the current weather for a city."""
        try:
            return _get_weather(city)
        except ValueError as error:
            raise ToolFailed(str(error)) from error

    def get_time(city: str) -> dict:
        """Get the local time in a city."""
        return {"city": city, "time": "14:00"}

    def issue_refund(order_id: int) -> dict:
        """Refund an order."""
        return {"order_id": order_id, "status": "refunded"}

    async def run() -> None:
        if scenario_name == "handoff":
            billing_agent = Agent(
                model,
                name="billing_agent",
                instructions="You are the billing agent. Refund orders with issue_refund.",
                tools=[issue_refund],
            )

            async def transfer_to_billing_agent(ctx: RunContext[None]) -> str:
                """Hand the conversation to the billing agent, which handles refunds."""
                history = [
                    *ctx.messages,
                    ModelRequest(
                        parts=[
                            ToolReturnPart(
                                tool_name="transfer_to_billing_agent",
                                content="Transferred to billing_agent.",
                                tool_call_id=ctx.tool_call_id or "",
                            )
                        ]
                    ),
                ]
                result = await billing_agent.run(message_history=history, usage=ctx.usage)
                return result.output

            triage_agent = Agent(
                model,
                name="triage_agent",
                instructions="You are the triage agent. Send billing questions to the billing agent.",
                output_type=[ToolOutput(transfer_to_billing_agent, name="transfer_to_billing_agent"), str],
            )
            agent = triage_agent
        else:
            agent = Agent(
                model,
                name="weather_agent",
                instructions="You are a weather assistant. Use the tools to answer.",
                tools=[get_weather, get_time],
            )
        history = None
        for turn in scenario["turns"]:
            result = await agent.run(turn["user"], message_history=history)
            print(f"[{scenario_name}] {turn['user']!r} -> {result.output!r}", file=sys.stderr)
            history = result.all_messages()

    try:
        asyncio.run(run())
    finally:
        provider.shutdown()  # flushes the batch processor
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
