"""Recorder for Agno (`agno`) traced by OpenInference, see run.py for the contract.

    python agno.py --modes        # {mode: {ENV: value}}
    python agno.py --scenarios    # the scenarios it supports
    python agno.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Instrumentation: `openinference-instrumentation-agno` (`AgnoInstrumentor`: agent and team runs, model calls, tool
calls), content on by default; in the `openllmetry*` modes OpenLLMetry's (Traceloop's)
`opentelemetry-instrumentation-agno` instead, alone or (`openllmetry_with_openai`) beside its OpenAI instrumentation,
as `Traceloop.init()` installs both (content on by default, `TRACELOOP_TRACE_CONTENT`). Model: Agno's
`OpenAIChat(id=CORPUS_MODEL, base_url=OPENAI_BASE_URL)`.

Agents: `Agent(name="weather_agent", tools=[get_weather, get_time])` with an `InMemoryDb`, a fixed
`session_id="corpus-<scenario>"` and `add_history_to_context=True`, so multi_turn's second `agent.run()` sees the
first turn. A tool that raises is caught by Agno and its error handed to the model. handoff: an Agno `Team` in
`mode="route"` (its router pattern: the leader hands the task to one member and returns the member's answer); the
team is the triage (name triage_agent), billing_agent its member. The leader calls Agno's
`delegate_task_to_member(member_id, task)`; the member starts a conversation of its own from the task, so
the mode scripts the model by call order and names member and task through CORPUS_HANDOFF_ARGUMENTS.
"""

from __future__ import annotations

import json
import os
from typing import Any

from corpus import INSTRUCTIONS, get_time, get_weather, issue_refund, log, main, otel, turns

_DELEGATE = {"member_id": "billing_agent", "task": "Refund order 42."}
_SCRIPT = {"CORPUS_SCRIPT_ORDER": "calls", "CORPUS_HANDOFF_ARGUMENTS": json.dumps(_DELEGATE)}
_OPENLLMETRY = {**_SCRIPT, "CORPUS_INSTRUMENTATION": "openllmetry"}
MODES: dict[str, dict[str, str]] = {
    "openinference": _SCRIPT,
    "openllmetry": _OPENLLMETRY,
    "openllmetry_with_openai": {**_OPENLLMETRY, "CORPUS_WITH_OPENAI": "1"},
    "openllmetry_no_content": {**_OPENLLMETRY, "TRACELOOP_TRACE_CONTENT": "false"},
}


def build(scenario: str) -> Any:
    from agno.agent import Agent
    from agno.db.in_memory import InMemoryDb
    from agno.models.openai import OpenAIChat
    from agno.team import Team

    def model() -> Any:
        return OpenAIChat(
            id=os.environ["CORPUS_MODEL"],
            base_url=os.environ["OPENAI_BASE_URL"],
            api_key=os.environ.get("OPENAI_API_KEY", "sim"),
        )

    if scenario == "handoff":
        billing = Agent(
            id="billing_agent",
            name="billing_agent",
            model=model(),
            tools=[issue_refund],
            instructions=INSTRUCTIONS["billing_agent"],
        )
        return Team(
            name="triage_agent",
            mode="route",
            model=model(),
            members=[billing],
            instructions=INSTRUCTIONS["triage_agent"],
            session_id=f"corpus-{scenario}",
        )
    return Agent(
        name="weather_agent",
        model=model(),
        tools=[get_weather, get_time],
        instructions=INSTRUCTIONS["weather_agent"],
        db=InMemoryDb(),
        session_id=f"corpus-{scenario}",
        add_history_to_context=True,
    )


def record(scenario: str) -> None:
    os.environ["AGNO_TELEMETRY"] = "false"  # Agno's own usage telemetry to its service
    with otel() as providers:
        if os.environ.get("CORPUS_INSTRUMENTATION") == "openllmetry":
            from opentelemetry.instrumentation.agno import AgnoInstrumentor as Traceloop

            Traceloop().instrument(tracer_provider=providers.tracer)
            if os.environ.get("CORPUS_WITH_OPENAI"):
                from opentelemetry.instrumentation.openai import OpenAIInstrumentor

                OpenAIInstrumentor().instrument(tracer_provider=providers.tracer)
        else:
            from openinference.instrumentation.agno import AgnoInstrumentor

            AgnoInstrumentor().instrument(tracer_provider=providers.tracer)
        agent = build(scenario)
        for user in turns(scenario):
            log(scenario, user, agent.run(user).content)


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
