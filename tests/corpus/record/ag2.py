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
from typing import Any

from corpus import INSTRUCTIONS, get_time, get_weather, issue_refund, log, main, otel, turns

_BY_CALLS = {"CORPUS_SCRIPT_ORDER": "calls", "CORPUS_HANDOFF_ARGUMENTS": json.dumps({"objective": "Refund order 42."})}
MODES: dict[str, dict[str, str]] = {
    "content": {**_BY_CALLS, "CORPUS_AG2_CAPTURE_CONTENT": "1"},
    "no_content": {**_BY_CALLS, "CORPUS_AG2_CAPTURE_CONTENT": "0"},
}


def build(scenario: str, provider: Any) -> Any:
    from ag2 import Agent, tool
    from ag2.config import OpenAIConfig
    from ag2.middleware.builtin.telemetry import TelemetryMiddleware

    model = os.environ["CORPUS_MODEL"]
    config = OpenAIConfig(
        model=model, base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim")
    )
    content = os.environ.get("CORPUS_AG2_CAPTURE_CONTENT", "1") == "1"

    def agent(name: str, tools: list[Any]) -> Any:
        telemetry = TelemetryMiddleware(
            tracer_provider=provider, capture_content=content, agent_name=name, provider_name="openai", model_name=model
        )
        return Agent(name, prompt=INSTRUCTIONS[name], config=config, tools=tools, middleware=[telemetry])

    if scenario == "handoff":
        billing = agent("billing_agent", [tool(issue_refund)])
        description = "Hand billing questions to the billing agent, which handles refunds."
        return agent("triage_agent", [billing.as_tool(description=description)])
    return agent("weather_agent", [tool(get_weather), tool(get_time)])


async def run_scenario(scenario: str, provider: Any) -> None:
    agent = build(scenario, provider)
    reply: Any = None
    for user in turns(scenario):
        reply = await (reply.ask(user) if reply is not None else agent.ask(user))
        log(scenario, user, reply.body)


def record(scenario: str) -> None:
    with otel() as providers:
        asyncio.run(run_scenario(scenario, providers.tracer))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
