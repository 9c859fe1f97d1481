"""Recorder for Microsoft Agent Framework (`agent-framework-core`, `agent-framework-openai`) with its own
OpenTelemetry instrumentation, see run.py.

    python agent_framework.py --modes        # {mode: {ENV: value}}
    python agent_framework.py --scenarios    # the scenarios it supports (no handoff, see below)
    python agent_framework.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Telemetry: the framework's built-in GenAI instrumentation (`agent_framework.observability`), on by default
(`ENABLE_INSTRUMENTATION`), content with `ENABLE_SENSITIVE_DATA`; spans through the global TracerProvider the
recorder installs (`corpus.otel`), as the framework's docs show for "your own OpenTelemetry setup".

Agent: `Agent(OpenAIChatCompletionClient(...), name="weather_agent")` with the scenario's tools as plain
functions (the framework makes them `FunctionTool`s); each turn is one `agent.run(user, session=...)`, all turns
of a scenario in one `AgentSession`. A tool that raises is reported to the model by the framework's
function-invocation loop.

No handoff: the framework's hand-off is a workflow orchestration (`HandoffBuilder`), whose participants the
scenario's scripted model cannot tell apart.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from corpus import INSTRUCTIONS, TOOLS, WITHOUT_HANDOFF, log, main, otel, turns

MODES: dict[str, dict[str, str]] = {
    "sensitive": {"ENABLE_INSTRUMENTATION": "true", "ENABLE_SENSITIVE_DATA": "true"},
    "default": {"ENABLE_INSTRUMENTATION": "true", "ENABLE_SENSITIVE_DATA": "false"},
}


def build() -> Any:
    from agent_framework import Agent
    from agent_framework.openai import OpenAIChatCompletionClient

    client = OpenAIChatCompletionClient(
        model=os.environ["CORPUS_MODEL"],
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY", "sim"),
    )
    tools = [TOOLS["get_weather"], TOOLS["get_time"]]
    return Agent(client, INSTRUCTIONS["weather_agent"], name="weather_agent", tools=tools)


async def run_scenario(scenario: str) -> None:
    agent = build()
    session = agent.create_session()
    for user in turns(scenario):
        response = await agent.run(user, session=session)
        log(scenario, user, response.text)


def record(scenario: str) -> None:
    with otel():
        asyncio.run(run_scenario(scenario))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
