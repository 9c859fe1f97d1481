"""Recorder for LlamaIndex agents (`llama-index-core` agent workflows) traced by OpenInference, see run.py.

    python llama_index.py --modes        # {mode: {ENV: value}}
    python llama_index.py --scenarios    # the scenarios it supports
    python llama_index.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Instrumentation: `openinference-instrumentation-llama-index` (`LlamaIndexInstrumentor`, which hooks LlamaIndex's own
instrumentation dispatcher), content on by default; the `OPENINFERENCE_HIDE_*` variables of its `TraceConfig`
hide it. Mode `openllmetry`: OpenLLMetry's `opentelemetry-instrumentation-llamaindex` instead (Traceloop's
`traceloop.*` and GenAI attributes; `using_session` then sets nothing it reads). The model is `OpenAILike` (Chat
Completions at OPENAI_BASE_URL, model CORPUS_MODEL, function calling on).

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
from typing import Any

from corpus import INSTRUCTIONS, OPENINFERENCE_HIDDEN, get_time, get_weather, issue_refund, log, main, otel, turns

_HANDOFF = {"CORPUS_HANDOFF_ARGUMENTS": json.dumps({"to_agent": "billing_agent", "reason": "a refund"})}
MODES: dict[str, dict[str, str]] = {
    "openinference": {**_HANDOFF},
    "openinference_hidden": {**_HANDOFF, **OPENINFERENCE_HIDDEN},
    # OpenLLMetry's (Traceloop's) `opentelemetry-instrumentation-llamaindex` instead; content by default
    "openllmetry": {**_HANDOFF, "CORPUS_INSTRUMENTATION": "openllmetry"},
}


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
            system_prompt=INSTRUCTIONS["billing_agent"],
            llm=llm,
            tools=[issue_refund],
        )
        return AgentWorkflow(agents=[triage, billing], root_agent="triage_agent")
    return FunctionAgent(
        name="weather_agent",
        description="Answers questions about the weather.",
        system_prompt=INSTRUCTIONS["weather_agent"],
        llm=llm,
        tools=[get_weather, get_time],
    )


async def run_scenario(scenario: str) -> None:
    from llama_index.core.memory import ChatMemoryBuffer
    from openinference.instrumentation import using_session

    agent = build(scenario)
    memory = ChatMemoryBuffer.from_defaults()  # the conversation across turns (LlamaIndex's default memory class)
    with using_session(f"corpus-{scenario}"):
        for user in turns(scenario):
            result = await agent.run(user_msg=user, memory=memory)
            log(scenario, user, str(result))


def record(scenario: str) -> None:
    with otel() as providers:
        if os.environ.get("CORPUS_INSTRUMENTATION") == "openllmetry":
            from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor as Traceloop

            Traceloop().instrument(tracer_provider=providers.tracer)
        else:
            from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

            LlamaIndexInstrumentor().instrument(tracer_provider=providers.tracer)
        asyncio.run(run_scenario(scenario))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
