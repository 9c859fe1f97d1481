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
import os
from typing import Any

from corpus import HANDOFF_TOOL, INSTRUCTIONS, TOOLS, TRANSFERRED, described, log, main, otel, turns

MODES = {
    "v5_content": {"PAI_INSTRUMENTATION_VERSION": "5", "PAI_INCLUDE_CONTENT": "1"},
    "v6_content": {"PAI_INSTRUMENTATION_VERSION": "6", "PAI_INCLUDE_CONTENT": "1"},
    "v2_content": {"PAI_INSTRUMENTATION_VERSION": "2", "PAI_INCLUDE_CONTENT": "1"},
    "no_content": {"PAI_INSTRUMENTATION_VERSION": "5", "PAI_INCLUDE_CONTENT": "0"},
    # the same spans through OpenInference's span processor (`openinference-instrumentation-pydantic-ai`, Arize
    # Phoenix's way for Pydantic AI), which adds its attributes to them
    "openinference": {"PAI_INSTRUMENTATION_VERSION": "5", "PAI_INCLUDE_CONTENT": "1", "CORPUS_OPENINFERENCE": "1"},
}


def record(scenario_name: str) -> None:
    with otel() as providers:
        if os.environ.get("CORPUS_OPENINFERENCE") == "1":
            from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor

            providers.tracer.add_span_processor(OpenInferenceSpanProcessor())
        asyncio.run(run(scenario_name, build(scenario_name, providers.tracer)))


def build(scenario_name: str, provider: Any) -> Any:
    import warnings

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
            return TOOLS["get_weather"](city)
        except ValueError as error:
            raise ToolFailed(str(error)) from error

    if scenario_name != "handoff":
        tools = [get_weather, described(TOOLS["get_time"], "Get the local time in a city.", resolved=True)]
        return Agent(model, name="weather_agent", instructions=INSTRUCTIONS["weather_agent"], tools=tools)
    billing_agent = Agent(
        model,
        name="billing_agent",
        instructions=INSTRUCTIONS["billing_agent"],
        tools=[described(TOOLS["issue_refund"], resolved=True)],
    )

    async def transfer_to_billing_agent(ctx: RunContext[None]) -> str:
        """Hand the conversation to the billing agent, which handles refunds."""
        transferred = ToolReturnPart(tool_name=HANDOFF_TOOL, content=TRANSFERRED, tool_call_id=ctx.tool_call_id or "")
        result = await billing_agent.run(
            message_history=[*ctx.messages, ModelRequest(parts=[transferred])], usage=ctx.usage
        )
        return result.output

    return Agent(
        model,
        name="triage_agent",
        instructions=INSTRUCTIONS["triage_agent"],
        output_type=[ToolOutput(transfer_to_billing_agent, name=HANDOFF_TOOL), str],
    )


async def run(scenario_name: str, agent: Any) -> None:
    history = None
    for user in turns(scenario_name):
        result = await agent.run(user, message_history=history)
        log(scenario_name, user, result.output)
        history = result.all_messages()


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
