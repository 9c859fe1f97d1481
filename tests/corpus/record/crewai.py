"""Recorder for CrewAI (`crewai`) traced by OpenInference, see run.py for the contract.

    python crewai.py --modes        # {mode: {ENV: value}}
    python crewai.py --scenarios    # the scenarios it supports
    python crewai.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Instrumentation: `openinference-instrumentation-crewai` (crews, tasks, agents, tool use) together with
`openinference-instrumentation-openai` for the model calls, as OpenInference documents for CrewAI; content on by
default. Mode `openllmetry`: OpenLLMetry's `opentelemetry-instrumentation-crewai` and
`opentelemetry-instrumentation-openai` instead. CrewAI's own telemetry and tracing (to its service) are switched
off with CREWAI_DISABLE_TELEMETRY / CREWAI_TRACING_ENABLED before import. The model is CrewAI's native OpenAI
provider (`LLM(model="openai/<model>", base_url=OPENAI_BASE_URL)`).

Agents and tasks: one `Agent(role="weather_agent", tools=[get_weather, get_time])` and one `Task` per user turn
whose description is the user's text; each turn is one `Crew(...).kickoff()`. CrewAI has no conversation: a crew
run is a task, so multi_turn is two kickoffs of the same agent, the second unaware of the first (the mode scripts
the model by call order, `CORPUS_SCRIPT_ORDER=calls`). A tool that raises is caught by CrewAI and its error handed
to the model. handoff: CrewAI's own delegation: triage_agent (`allow_delegation=True`) and billing_agent in one
crew; the triage agent calls CrewAI's `Delegate work to coworker` tool (task, context and coworker scripted through
CORPUS_HANDOFF_ARGUMENTS), billing_agent runs that as a task of its own (a new conversation), and the triage agent
answers with its result. tool_ends: get_weather is a `@tool("get_weather", result_as_answer=True)`, so its result
is the task's answer without a model call after it.
"""

from __future__ import annotations

import json
import os

from corpus import TOOLS, WITH_TOOL_ENDS, log, main, otel, turns

_DELEGATE = {
    "task": "Refund order 42.",
    "context": "The user asked: Please refund order 42.",
    "coworker": "billing_agent",
}
MODES: dict[str, dict[str, str]] = {
    "openinference": {"CORPUS_SCRIPT_ORDER": "calls", "CORPUS_HANDOFF_ARGUMENTS": json.dumps(_DELEGATE)},
    # OpenLLMetry's (Traceloop's) CrewAI and OpenAI instrumentations instead, content by default
    "openllmetry": {
        "CORPUS_SCRIPT_ORDER": "calls",
        "CORPUS_HANDOFF_ARGUMENTS": json.dumps(_DELEGATE),
        "CORPUS_INSTRUMENTATION": "openllmetry",
    },
}


def run_scenario(scenario: str) -> None:
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool

    llm = LLM(
        model=f"openai/{os.environ['CORPUS_MODEL']}",
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY", "sim"),
    )
    tools = {name: tool(name)(function) for name, function in TOOLS.items()}
    if scenario == "tool_ends":  # CrewAI's way to end the task on a tool's result: the result is the answer
        tools["get_weather"] = tool("get_weather", result_as_answer=True)(TOOLS["get_weather"])
    if scenario == "handoff":
        billing = Agent(
            role="billing_agent",
            goal="Refund orders with issue_refund.",
            backstory="You are the billing agent.",
            tools=[tools["issue_refund"]],
            llm=llm,
            allow_delegation=False,
        )
        triage = Agent(
            role="triage_agent",
            goal="Send billing questions to the billing agent.",
            backstory="You are the triage agent.",
            llm=llm,
            allow_delegation=True,
        )
        agents = [triage, billing]
    else:
        agents = [
            Agent(
                role="weather_agent",
                goal="Answer questions about the weather and the time.",
                backstory="You are a weather assistant. Use the tools to answer.",
                tools=[tools["get_weather"], tools["get_time"]],
                llm=llm,
                allow_delegation=False,
            )
        ]
    for user in turns(scenario):
        task = Task(description=user, expected_output="A short answer.", agent=agents[0])
        log(scenario, user, Crew(agents=agents, tasks=[task]).kickoff().raw)


def record(scenario: str) -> None:
    os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"  # CrewAI's own telemetry to its service
    os.environ["CREWAI_TRACING_ENABLED"] = "false"  # and its own tracing platform
    with otel() as providers:
        if os.environ.get("CORPUS_INSTRUMENTATION") == "openllmetry":
            from opentelemetry.instrumentation.crewai import CrewAIInstrumentor as TraceloopCrewAI
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor as TraceloopOpenAI

            TraceloopCrewAI().instrument(tracer_provider=providers.tracer)
            TraceloopOpenAI().instrument(tracer_provider=providers.tracer)
        else:
            from openinference.instrumentation.crewai import CrewAIInstrumentor
            from openinference.instrumentation.openai import OpenAIInstrumentor

            CrewAIInstrumentor().instrument(tracer_provider=providers.tracer)
            OpenAIInstrumentor().instrument(tracer_provider=providers.tracer)
        run_scenario(scenario)


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITH_TOOL_ENDS))
