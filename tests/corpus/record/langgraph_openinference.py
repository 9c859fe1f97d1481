"""Recorder: LangGraph ReAct agents (langchain-openai) instrumented with OpenInference.

    python langgraph_openinference.py --modes       # {mode: {ENV: value}}
    python langgraph_openinference.py --scenarios   # the scenarios it supports
    python langgraph_openinference.py <scenario>    # run one (see run.py, which serves model and receiver)

Agents are `langchain.agents.create_agent` graphs (the successor of langgraph's deprecated
`create_react_agent`). Single-agent scenarios: one agent named `weather_agent`. Its ToolNode re-raises tool
exceptions by default, so a `wrap_tool_call` middleware turns a ValueError into an error ToolMessage worded
as ToolNode's `handle_tool_errors=True` does ("Error: ValueError(...)"). Handoff: a parent StateGraph with two agents,
`triage_agent` (holding langgraph-supervisor's `transfer_to_billing_agent` handoff tool, which returns a
`Command(goto="billing_agent", graph=Command.PARENT)`) and `billing_agent` (holding `issue_refund`), both
without the error middleware.
Every turn of a scenario runs in one session: one checkpointer thread, and `using_session(thread_id)`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIOS = {k: v for k, v in json.loads((HERE / "scenarios.json").read_text()).items() if not k.startswith("_")}
THREAD_ID = "corpus-thread-1"

MODES = {
    "default": {},
    "hidden": {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
}


def setup_tracing():
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create())
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)

    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)  # TraceConfig from the OPENINFERENCE_* env
    return provider


def make_tools():
    from langchain_core.tools import tool

    weather = {
        "Paris": {"city": "Paris", "forecast": "sunny", "temp_c": 21},
        "London": {"city": "London", "forecast": "rainy", "temp_c": 14},
        "Rome": {"city": "Rome", "forecast": "cloudy", "temp_c": 18},
    }

    @tool
    def get_weather(city: str) -> dict:
        """Get the current weather for a city."""
        if city not in weather:
            raise ValueError(f"unknown city: {city}")
        return weather[city]

    @tool
    def get_time(city: str) -> dict:
        """Get the local time in a city."""
        return {"city": city, "time": "14:00"}

    @tool
    def issue_refund(order_id: int) -> dict:
        """Refund an order."""
        return {"order_id": order_id, "status": "refunded"}

    return get_weather, get_time, issue_refund


def tool_errors():
    """The model gets a tool's ValueError as an error ToolMessage, worded as langgraph's ToolNode words it with
    `handle_tool_errors=True` (create_agent's ToolNode re-raises tool exceptions unless a middleware catches them)."""
    from langchain.agents.middleware import wrap_tool_call
    from langchain_core.messages import ToolMessage

    @wrap_tool_call
    def tool_errors(request, handler):
        try:
            return handler(request)
        except ValueError as exc:
            call = request.tool_call
            return ToolMessage(
                content=f"Error: {exc!r}\n Please fix your mistakes.",
                name=call["name"],
                tool_call_id=call["id"],
                status="error",
            )

    return tool_errors


def build(scenario: str):
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver

    model = ChatOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="sim", model=os.environ["CORPUS_MODEL"])
    get_weather, get_time, issue_refund = make_tools()
    checkpointer = InMemorySaver()
    middleware = [tool_errors()]
    if scenario != "handoff":
        return create_agent(
            model,
            [get_weather, get_time],
            system_prompt="You are weather_agent, a weather assistant.",
            middleware=middleware,
            name="weather_agent",
            checkpointer=checkpointer,
        )

    # No tool-error middleware here: neither agent's tools fail, and OpenLLMetry wraps every middleware hook
    # (even the no-op ones) into spans, which would double this recording's size.
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph_supervisor import create_handoff_tool

    triage = create_agent(
        model,
        [create_handoff_tool(agent_name="billing_agent")],
        system_prompt="You are triage_agent. Hand billing questions to billing_agent.",
        name="triage_agent",
    )
    billing = create_agent(
        model,
        [issue_refund],
        system_prompt="You are billing_agent. You can issue refunds.",
        name="billing_agent",
    )
    graph = StateGraph(MessagesState)
    graph.add_node("triage_agent", triage, destinations=("billing_agent",))
    graph.add_node("billing_agent", billing)
    graph.add_edge(START, "triage_agent")
    return graph.compile(checkpointer=checkpointer)


def run(scenario: str) -> None:
    provider = setup_tracing()
    from openinference.instrumentation import using_session

    try:
        agent = build(scenario)
        config = {"configurable": {"thread_id": THREAD_ID}}
        with using_session(THREAD_ID):
            for turn in SCENARIOS[scenario]["turns"]:
                result = agent.invoke({"messages": [{"role": "user", "content": turn["user"]}]}, config)
                print(f"[{scenario}] {turn['user']!r} -> {result['messages'][-1].content!r}", file=sys.stderr)
    finally:
        provider.shutdown()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--modes"]:
        print(json.dumps(MODES))
    elif argv[:1] == ["--scenarios"]:
        print(json.dumps(list(SCENARIOS)))
    elif len(argv) == 1 and argv[0] in SCENARIOS:
        run(argv[0])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
