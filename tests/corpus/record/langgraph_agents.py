"""The LangGraph agents and scenarios, shared by the recorders of its instrumentations (langgraph_openinference.py,
langgraph_openllmetry.py, langgraph_langfuse.py; the Python mirror of `langchain_js.mjs`), see run.py for the
contract.

Agents are `langchain.agents.create_agent` graphs (langchain-openai's `ChatOpenAI`, or with CORPUS_PROVIDER=gemini
langchain-google-genai's `ChatGoogleGenerativeAI` on the Gemini API; the successor of langgraph's
deprecated `create_react_agent`). Single-agent scenarios: one agent named `weather_agent`. Its ToolNode re-raises
tool exceptions by default, so a `wrap_tool_call` middleware turns a ValueError into an error ToolMessage worded as
ToolNode's `handle_tool_errors=True` does ("Error: ValueError(...)"). Handoff: a parent StateGraph with two agents,
`triage_agent` (holding langgraph-supervisor's `transfer_to_billing_agent` handoff tool, which returns a
`Command(goto="billing_agent", graph=Command.PARENT)`) and `billing_agent` (holding `issue_refund`), both without
the error middleware. Every turn of a scenario runs on one checkpointer thread (`THREAD_ID`). `tool_ends` (played
by the recorders that list `WITH_TOOL_ENDS`): get_weather is a `return_direct=True` tool, so create_agent's graph
ends after the tools node with its ToolMessage as the last message, without calling the model again.

A recorder imports what it needs of `corpus` from here: importing `corpus` takes this folder off the import path.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from corpus import WITH_TOOL_ENDS, described, get_time, get_weather, issue_refund, log, main, otel, turns

__all__ = ["THREAD_ID", "WITH_TOOL_ENDS", "main", "play", "record"]
THREAD_ID = "corpus-thread-1"
LOCAL_TIME = "Get the local time in a city."  # get_time's description in these recordings


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
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    model: Any
    if os.environ.get("CORPUS_PROVIDER") == "gemini":  # langchain-google-genai on the simulated model's Gemini route
        from langchain_google_genai import ChatGoogleGenerativeAI

        root = os.environ["OPENAI_BASE_URL"].removesuffix("/").removesuffix("/v1")
        model = ChatGoogleGenerativeAI(model=os.environ["CORPUS_MODEL"], base_url=root, google_api_key="sim")
    else:
        from langchain_openai import ChatOpenAI

        model = ChatOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="sim", model=os.environ["CORPUS_MODEL"])
    weather, local_time, refund = (tool(f) for f in (get_weather, described(get_time, LOCAL_TIME), issue_refund))
    if scenario == "tool_ends":  # LangChain's way to end the run on a tool's result: create_agent exits after it
        weather = tool(get_weather, return_direct=True)
    checkpointer = InMemorySaver()
    middleware = [tool_errors()]
    if scenario != "handoff":
        return create_agent(
            model,
            [weather, local_time],
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
        [refund],
        system_prompt="You are billing_agent. You can issue refunds.",
        name="billing_agent",
    )
    graph = StateGraph(MessagesState)
    graph.add_node("triage_agent", triage, destinations=("billing_agent",))
    graph.add_node("billing_agent", billing)
    graph.add_edge(START, "triage_agent")
    return graph.compile(checkpointer=checkpointer)


def record(scenario: str, instrument: Callable[[Any], AbstractContextManager[Any]]) -> None:
    """Record a scenario: `instrument(tracer_provider)` instruments LangChain and returns the context every turn
    runs in (a session, where the instrumentation has one)."""
    with otel() as providers:
        session = instrument(providers.tracer)
        with session:
            play(scenario)


def play(scenario: str, callbacks: list[Any] | None = None) -> None:
    """Every turn of a scenario, on one checkpointer thread; `callbacks`: LangChain callback handlers (a tracing
    integration that is one, rather than an instrumentor)."""
    agent = build(scenario)
    config: dict[str, Any] = {"configurable": {"thread_id": THREAD_ID}}
    if callbacks:
        config["callbacks"] = callbacks
    for user in turns(scenario):
        result = agent.invoke({"messages": [{"role": "user", "content": user}]}, config)
        log(scenario, user, result["messages"][-1].content)
