"""Recorder for LlamaIndex agents (`llama-index-core` agent workflows) traced by OpenInference, see run.py.

    python llama_index.py --modes        # {mode: {ENV: value}}
    python llama_index.py --scenarios    # the scenarios it supports
    python llama_index.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Instrumentation: `openinference-instrumentation-llama-index` (`LlamaIndexInstrumentor`, which hooks LlamaIndex's own
instrumentation dispatcher), content on by default; the `OPENINFERENCE_HIDE_*` variables of its `TraceConfig`
hide it. The model is `OpenAILike` (Chat Completions at OPENAI_BASE_URL, model CORPUS_MODEL, function calling on).

Agents: `FunctionAgent` (the agent-workflow API), streamed as LlamaIndex does by default. Each turn is one
`agent.run(user_msg, memory=memory)`; all turns of a scenario share one `ChatMemoryBuffer` (a reused workflow
`Context` loses its memory between runs in llama-index-workflows 2.26) and one
`using_session("corpus-<scenario>")` (OpenInference's `session.id`). A tool that raises is caught by the workflow
and handed to the model as an error tool output. handoff: `AgentWorkflow` of triage_agent
(`can_handoff_to=["billing_agent"]`) and billing_agent: LlamaIndex's own hand-off tool `handoff(to_agent, reason)`,
whose arguments the scripted model gets from `CORPUS_HANDOFF_ARGUMENTS`.
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

_HANDOFF = {"CORPUS_HANDOFF_ARGUMENTS": json.dumps({"to_agent": "billing_agent", "reason": "a refund"})}
_HIDE = {
    "OPENINFERENCE_HIDE_INPUTS": "true",
    "OPENINFERENCE_HIDE_OUTPUTS": "true",
    "OPENINFERENCE_HIDE_INPUT_MESSAGES": "true",
    "OPENINFERENCE_HIDE_OUTPUT_MESSAGES": "true",
    "OPENINFERENCE_HIDE_INPUT_TEXT": "true",
    "OPENINFERENCE_HIDE_OUTPUT_TEXT": "true",
}
MODES: dict[str, dict[str, str]] = {
    "openinference": {**_HANDOFF},
    "openinference_hidden": {**_HANDOFF, **_HIDE},
}

WEATHER = {
    "Paris": {"city": "Paris", "forecast": "sunny", "temp_c": 21},
    "London": {"city": "London", "forecast": "rainy", "temp_c": 14},
    "Rome": {"city": "Rome", "forecast": "cloudy", "temp_c": 18},
}


def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    if city in WEATHER:
        return dict(WEATHER[city])
    raise ValueError(f"unknown city: {city}")


def get_time(city: str) -> dict:
    """Get the current local time in a city."""
    return {"city": city, "time": "14:00"}


def issue_refund(order_id: int) -> dict:
    """Refund an order."""
    return {"order_id": order_id, "status": "refunded"}


def setup_otel() -> Any:
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    LlamaIndexInstrumentor().instrument(tracer_provider=provider)
    return provider


def build(scenario: str) -> Any:
    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
    from llama_index.llms.openai_like import OpenAILike

    llm = OpenAILike(
        model=os.environ["CORPUS_MODEL"],
        api_base=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY", "sim"),
        is_chat_model=True,
        is_function_calling_model=True,
        context_window=32000,
        # LlamaIndex agents stream; without this an OpenAI-compatible server sends no usage in a stream
        additional_kwargs={"stream_options": {"include_usage": True}},
    )
    if scenario == "handoff":
        triage = FunctionAgent(
            name="triage_agent",
            description="Sends billing questions to the billing agent.",
            system_prompt="You are the triage agent. Hand billing questions to billing_agent.",
            llm=llm,
            tools=[],
            can_handoff_to=["billing_agent"],
        )
        billing = FunctionAgent(
            name="billing_agent",
            description="Handles refunds.",
            system_prompt="You are the billing agent. Refund orders with issue_refund.",
            llm=llm,
            tools=[issue_refund],
        )
        return AgentWorkflow(agents=[triage, billing], root_agent="triage_agent")
    return FunctionAgent(
        name="weather_agent",
        description="Answers questions about the weather.",
        system_prompt="You are a weather assistant. Use the tools to answer.",
        llm=llm,
        tools=[get_weather, get_time],
    )


async def run_scenario(scenario: str) -> None:
    from llama_index.core.memory import ChatMemoryBuffer
    from openinference.instrumentation import using_session

    agent = build(scenario)
    memory = ChatMemoryBuffer.from_defaults()  # the conversation across turns (LlamaIndex's default memory class)
    with using_session(f"corpus-{scenario}"):
        for turn in SCENARIOS[scenario]["turns"]:
            result = await agent.run(user_msg=turn["user"], memory=memory)
            print(f"[{scenario}] {turn['user']!r} -> {str(result)!r}", file=sys.stderr)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--modes"]:
        print(json.dumps(MODES))
        return 0
    if argv[:1] == ["--scenarios"]:
        print(json.dumps(list(SCENARIOS)))
        return 0
    provider = setup_otel()
    try:
        asyncio.run(run_scenario(argv[0]))
    finally:
        provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
