"""Recorder for Haystack agents (`haystack-ai`) traced by `opentelemetry-haystack` or by OpenInference, see run.py for
the contract.

    python haystack.py --modes        # {mode: {ENV: value}}
    python haystack.py --scenarios    # the scenarios it supports
    python haystack.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Instrumentation: Haystack's tracing API with the OpenTelemetry tracer that now ships as `opentelemetry-haystack`
(`haystack_integrations.tracing.opentelemetry.OpenTelemetryTracer`, enabled with `haystack.tracing.enable_tracing`,
as its `OpenTelemetryConnector` does). Content (component inputs and outputs) only with
`HAYSTACK_CONTENT_TRACING_ENABLED=true`. The `openinference*` modes (`CORPUS_INSTRUMENTATION=openinference`) instead
install OpenInference's instrumentor (`openinference-instrumentation-haystack`, `HaystackInstrumentor`) and leave
Haystack's own tracer off (a user picks one; since Haystack 3.0 it no longer turns itself on when OpenTelemetry is
configured). That instrumentor wraps the `run` of the component classes registered when it runs (and, in a Pipeline, of
the components the Pipeline runs): the recorder imports Agent and OpenAIChatGenerator first, as a script with its
imports at the top does; instrumenting before they are imported leaves an Agent run outside a Pipeline untraced. Every
run is in `using_session("corpus-<scenario>")` (OpenInference's `session.id`), and `openinference_hidden` sets the
`OPENINFERENCE_HIDE_*` variables of its `TraceConfig`.

Agents: `haystack.components.agents.Agent` with `OpenAIChatGenerator` (Chat Completions at OPENAI_BASE_URL, model
CORPUS_MODEL) and function `Tool`s; a tool that raises is handed to the model as an error message (the Agent's
default `raise_on_tool_invocation_failure=False`). Each turn is one `agent.run(messages=...)`; multi_turn passes
the first run's messages into the second. handoff: Haystack has no hand-off primitive; its idiom is an agent used
through a tool. The triage agent's tool `transfer_to_billing_agent` (no arguments; it reads the conversation from
the agent's State) runs billing_agent on that conversation plus its own result, and
`exit_conditions=["transfer_to_billing_agent"]` ends the triage run with it.
"""

from __future__ import annotations

import os
from typing import Any

from corpus import (
    INSTRUCTIONS,
    OPENINFERENCE,
    OPENINFERENCE_HIDDEN,
    TRANSFERRED,
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

MODES: dict[str, dict[str, str]] = {
    "content": {"HAYSTACK_CONTENT_TRACING_ENABLED": "true"},
    "no_content": {"HAYSTACK_CONTENT_TRACING_ENABLED": "false"},
    # OpenInference's Haystack instrumentor instead of Haystack's own tracer, content on by default
    "openinference": OPENINFERENCE,
    "openinference_hidden": {**OPENINFERENCE, **OPENINFERENCE_HIDDEN},
}


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
            system_prompt=INSTRUCTIONS["weather_agent"],
        )
    billing = Agent(
        chat_generator=generator(),
        tools=[tool(issue_refund)],
        system_prompt=INSTRUCTIONS["billing_agent"],
    )

    def transfer_to_billing_agent(messages: list) -> str:
        """Hand the conversation to the billing agent, which handles refunds."""
        call = next(c for c in reversed(messages[-1].tool_calls) if c.tool_name == "transfer_to_billing_agent")
        history = [m for m in messages if not m.is_from("system")]
        history.append(ChatMessage.from_tool(TRANSFERRED, origin=ToolCall(**call.to_dict())))
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
        system_prompt=INSTRUCTIONS["triage_agent"],
        exit_conditions=["transfer_to_billing_agent"],
    )


def run_scenario(scenario: str) -> None:
    from haystack.dataclasses import ChatMessage

    agent = build(scenario)
    history: list[Any] = []
    for user in turns(scenario):
        with session(scenario):
            result = agent.run(messages=[*history, ChatMessage.from_user(user)])
        history = [m for m in result["messages"] if not m.is_from("system")]
        last = result["last_message"]  # the transfer tool's message when the triage run exits through it
        log(scenario, user, last.text if last.text is not None else last.tool_call_result.result)


def record(scenario: str) -> None:
    with otel() as providers:
        if openinference():
            # the instrumentor wraps the component classes registered by then: import them first
            from haystack.components.agents import Agent  # noqa: F401
            from haystack.components.generators.chat import OpenAIChatGenerator  # noqa: F401
            from openinference.instrumentation.haystack import HaystackInstrumentor

            HaystackInstrumentor().instrument(tracer_provider=providers.tracer)
            run_scenario(scenario)
            return
        from haystack import tracing
        from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer
        from opentelemetry import trace

        tracing.enable_tracing(OpenTelemetryTracer(trace.get_tracer("haystack")))
        run_scenario(scenario)


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
