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
- `logfire`: Pydantic Logfire's `logfire.instrument_openai_agents()`, with `logfire.configure(send_to_logfire=False)`
  exporting to OTEL_EXPORTER_OTLP_ENDPOINT (Logfire's own providers, not the recorder's `otel()`).

The SDK's own exporter (the upload to OpenAI's trace endpoint) is removed by replacing the SDK's processors,
not by `set_tracing_disabled`, which would silence the instrumentations too. The model is the Chat Completions
API at OPENAI_BASE_URL (`OpenAIChatCompletionsModel`), name CORPUS_MODEL; in the `*_responses` modes the SDK's
default, the Responses API (`OpenAIResponsesModel`). Every turn of a scenario runs in one
`SQLiteSession` (in memory, id `corpus-<scenario>`); each `Runner.run` is one SDK trace (one OTLP trace per turn),
with the session id as the run's `group_id` and, for OpenInference, as `session.id` (`using_session`).
`tool_ends` gives the agent `tool_use_behavior="stop_on_first_tool"` (the first tool's output is the run's final
output, no model call after it); every other scenario keeps the SDK's default, `"run_llm_again"`.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from corpus import (
    OPENINFERENCE_HIDDEN,
    RESPONSES,
    WITH_TOOL_ENDS,
    get_time,
    get_weather,
    issue_refund,
    log,
    main,
    on_responses_api,
    otel,
    turns,
)

MODES: dict[str, dict[str, str]] = {
    "openinference": {"CORPUS_INSTRUMENTATION": "openinference"},
    "openinference_hidden": {"CORPUS_INSTRUMENTATION": "openinference", **OPENINFERENCE_HIDDEN},
    "otel_v2_span_only": {
        "CORPUS_INSTRUMENTATION": "otel_v2",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
    },
    "otel_v2_event_only": {
        "CORPUS_INSTRUMENTATION": "otel_v2",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "event_only",
    },
    "logfire": {"CORPUS_INSTRUMENTATION": "logfire"},
    # the SDK's default model, the Responses API (`OpenAIResponsesModel`), under each bridge
    "openinference_responses": {"CORPUS_INSTRUMENTATION": "openinference", **RESPONSES},
    "otel_v2_responses": {
        "CORPUS_INSTRUMENTATION": "otel_v2",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
        **RESPONSES,
    },
    "logfire_responses": {"CORPUS_INSTRUMENTATION": "logfire", **RESPONSES},
    "otel_v2_no_content": {
        "CORPUS_INSTRUMENTATION": "otel_v2",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "no_content",
    },
}


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
    if on_responses_api():
        from agents import OpenAIResponsesModel

        model: Any = OpenAIResponsesModel(model=os.environ["CORPUS_MODEL"], openai_client=client)
    else:
        model = OpenAIChatCompletionsModel(model=os.environ["CORPUS_MODEL"], openai_client=client)
    if scenario == "handoff":
        billing = Agent(
            name="billing_agent",
            instructions="You handle billing: refunds with issue_refund.",
            model=model,
            tools=[function_tool(issue_refund)],
        )
        return Agent(
            name="triage_agent",
            instructions="Hand billing questions to the billing agent.",
            model=model,
            handoffs=[billing],
        )
    # tool_ends: the SDK's own way to end a run on a tool's result, the first tool's output as the final output
    # (the other scenarios keep the SDK's default, "run_llm_again")
    ending: dict[str, Any] = {"tool_use_behavior": "stop_on_first_tool"} if scenario == "tool_ends" else {}
    return Agent(
        name="weather_agent",
        instructions="You are a weather assistant. Use the tools for weather and time.",
        model=model,
        tools=[function_tool(get_weather), function_tool(get_time)],
        **ending,
    )


async def run_scenario(scenario: str) -> None:
    from agents import RunConfig, Runner, SQLiteSession

    agent = build_agents(scenario)
    session_id = f"corpus-{scenario}"
    session = SQLiteSession(session_id)
    for user in turns(scenario):
        config = RunConfig(workflow_name=f"corpus {scenario}", group_id=session_id)
        if os.environ.get("CORPUS_INSTRUMENTATION", "openinference") == "openinference":
            from openinference.instrumentation import using_session

            with using_session(session_id):
                result = await Runner.run(agent, user, session=session, run_config=config)
        else:
            result = await Runner.run(agent, user, session=session, run_config=config)
        log(scenario, user, result.final_output)  # tool_ends: the tool's output, as the str of its dict


def record(scenario: str) -> None:
    if os.environ.get("CORPUS_INSTRUMENTATION") == "logfire":
        import logfire
        from agents import set_trace_processors

        set_trace_processors([])  # drop the SDK's own exporter to OpenAI's trace endpoint
        logfire.configure(send_to_logfire=False, console=False)
        logfire.instrument_openai_agents()
        try:
            asyncio.run(run_scenario(scenario))
        finally:
            logfire.shutdown()
        return
    with otel(logs=True) as providers:
        instrument(providers.tracer)
        run_to_the_end(scenario)


def run_to_the_end(scenario: str) -> None:
    """Run the scenario's turns, then end the SDK's traces, so that the bridges end their spans."""
    try:
        asyncio.run(run_scenario(scenario))
    finally:
        from agents.tracing import get_trace_provider

        get_trace_provider().shutdown()


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITH_TOOL_ENDS))
