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
import logging
import os
from typing import Annotated, Any

from corpus import INSTRUCTIONS, TOOLS, WITHOUT_HANDOFF, log, main, otel, turns

_ON = "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"
MODES: dict[str, dict[str, str]] = {
    "sensitive": {_ON: "true", f"{_ON}_SENSITIVE": "true"},
    "diagnostics": {_ON: "true", f"{_ON}_SENSITIVE": "false"},
}


def export_logs(logger_provider: Any) -> None:
    """Semantic Kernel's content is Python log records: a `LoggingHandler` on the root logger, behind a
    `logging.Filter("semantic_kernel")`, at level INFO, as Semantic Kernel's telemetry sample wires it."""
    from opentelemetry.sdk._logs import LoggingHandler

    handler = LoggingHandler(logger_provider=logger_provider)
    handler.addFilter(logging.Filter("semantic_kernel"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def build() -> Any:
    from openai import AsyncOpenAI
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
    from semantic_kernel.functions import kernel_function

    class Weather:  # a plugin's kernel functions are methods, their arguments described with Annotated
        @kernel_function(description="Get the current weather for a city.")
        def get_weather(self, city: Annotated[str, "the city"]) -> dict:
            return TOOLS["get_weather"](city)

        @kernel_function(description="Get the current local time in a city.")
        def get_time(self, city: Annotated[str, "the city"]) -> dict:
            return TOOLS["get_time"](city)

    client = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim"))
    service = OpenAIChatCompletion(ai_model_id=os.environ["CORPUS_MODEL"], async_client=client)
    return ChatCompletionAgent(
        service=service, name="weather_agent", instructions=INSTRUCTIONS["weather_agent"], plugins=[Weather()]
    )


async def run_scenario(scenario: str) -> None:
    from semantic_kernel.agents import ChatHistoryAgentThread

    agent = build()
    thread = ChatHistoryAgentThread()
    for user in turns(scenario):
        response = await agent.get_response(messages=user, thread=thread)
        thread = response.thread
        log(scenario, user, str(response.content))


def record(scenario: str) -> None:
    with otel(logs=True) as providers:
        export_logs(providers.logger)
        asyncio.run(run_scenario(scenario))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
