"""Recorder for AutoGen AgentChat (`autogen-agentchat` + `autogen-ext[openai]`), see run.py for the contract.

    python autogen_agentchat.py --modes        # {mode: {ENV: value}}
    python autogen_agentchat.py --scenarios    # the scenarios it supports
    python autogen_agentchat.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Telemetry: AutoGen's own OpenTelemetry spans (autogen-core's GenAI helpers: `create_agent` / `invoke_agent` /
`execute_tool`, and the agent runtime's message spans when a team runs), read from the global TracerProvider.
AutoGen itself traces no model call, so the `openai_v2_*` modes add OpenTelemetry's official OpenAI instrumentation
(`opentelemetry-instrumentation-openai-v2`) for the `chat` spans, with its content switch. The `openinference*` modes
(`CORPUS_INSTRUMENTATION=openinference`) instead install OpenInference's AgentChat instrumentor
(`openinference-instrumentation-autogen-agentchat`, Arize Phoenix's `AutogenAgentChatInstrumentor`), which wraps the
agents, teams, tool calls and the OpenAI model client itself (AutoGen's own spans stay, they read the global
provider); every run of a scenario is in `using_session("corpus-<scenario>")` (OpenInference's `session.id`), and
`openinference_hidden` sets the `OPENINFERENCE_HIDE_*` variables of its `TraceConfig`.

Agents: `AssistantAgent` with `OpenAIChatCompletionClient` (Chat Completions at OPENAI_BASE_URL, model
CORPUS_MODEL), `max_tool_iterations=5` and `reflect_on_tool_use=True`, so the model answers after its tools (the
default would end the run with a tool-call summary instead of a model answer). A tool that raises is caught by
the agent and handed to the model as an error result. multi_turn: two `agent.run()` calls on one agent (it keeps
its model context). handoff: a `Swarm` team (AgentChat's hand-off primitive) of triage_agent
(`handoffs=["billing_agent"]`) and billing_agent, ended by `TextMessageTermination("billing_agent")`; billing's
model context replaces the hand-off's user message by the triage's transfer call and result (see
`handoff_context`).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from corpus import (
    INSTRUCTIONS,
    OPENINFERENCE,
    OPENINFERENCE_HIDDEN,
    get_time,
    get_weather,
    issue_refund,
    log,
    main,
    openinference,
    otel,
    session,
    turns,
)

_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
MODES: dict[str, dict[str, str]] = {
    "openai_v2_span_only": {**_LATEST, _CAPTURE: "span_only"},
    "openai_v2_no_content": {**_LATEST, _CAPTURE: "no_content"},
    "openinference": OPENINFERENCE,
    "openinference_hidden": {**OPENINFERENCE, **OPENINFERENCE_HIDDEN},
}


def model_client() -> Any:
    from autogen_core.models import ModelInfo
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    info = ModelInfo(vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False)
    return OpenAIChatCompletionClient(
        model=os.environ["CORPUS_MODEL"],
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY", "sim"),
        model_info=info,
    )


def handoff_context(triage: Any) -> Any:
    """Billing's model context: Swarm hands over the triage's hand-off message as a *user* message and, when the
    hand-off was the only tool call, without the call itself. The scripted model (like any model continuing a
    hand-off) needs the conversation to show the transfer, so the triage's transfer call and its result, taken
    from the triage's own context, stand in for that user message."""
    from autogen_core.model_context import UnboundedChatCompletionContext
    from autogen_core.models import AssistantMessage, FunctionExecutionResultMessage, LLMMessage, UserMessage

    class HandoffContext(UnboundedChatCompletionContext):
        async def add_message(self, message: LLMMessage) -> None:
            if isinstance(message, UserMessage) and message.source == triage.name:
                mine = await triage.model_context.get_messages()
                calls = [m for m in mine if isinstance(m, AssistantMessage) and isinstance(m.content, list)]
                results = [m for m in mine if isinstance(m, FunctionExecutionResultMessage)]
                if calls and results:
                    await super().add_message(calls[-1])
                    await super().add_message(results[-1])
                    return
            await super().add_message(message)

    return HandoffContext()


async def run_scenario(scenario: str) -> None:
    from autogen_agentchat.agents import AssistantAgent

    client = model_client()
    if scenario == "handoff":
        from autogen_agentchat.conditions import TextMessageTermination
        from autogen_agentchat.teams import Swarm

        triage = AssistantAgent(
            "triage_agent",
            model_client=client,
            handoffs=["billing_agent"],
            system_message="You are the triage agent. Hand billing questions to billing_agent.",
        )
        billing = AssistantAgent(
            "billing_agent",
            model_client=client,
            tools=[issue_refund],
            max_tool_iterations=5,
            reflect_on_tool_use=True,
            system_message=INSTRUCTIONS["billing_agent"],
            model_context=handoff_context(triage),
        )
        team = Swarm([triage, billing], termination_condition=TextMessageTermination("billing_agent"))
        for user in turns(scenario):
            with session(scenario):
                result = await team.run(task=user)
            log(scenario, user, result.messages[-1].to_text())
        return
    agent = AssistantAgent(
        "weather_agent",
        model_client=client,
        tools=[get_weather, get_time],
        max_tool_iterations=5,
        reflect_on_tool_use=True,
        system_message=INSTRUCTIONS["weather_agent"],
    )
    for user in turns(scenario):
        with session(scenario):
            result = await agent.run(task=user)
        log(scenario, user, result.messages[-1].to_text())
    await client.close()


def record(scenario: str) -> None:
    with otel(logs=True) as providers:
        if openinference():
            from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor

            AutogenAgentChatInstrumentor().instrument(tracer_provider=providers.tracer)
            asyncio.run(run_scenario(scenario))
            return
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=providers.tracer, logger_provider=providers.logger)
        asyncio.run(run_scenario(scenario))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
