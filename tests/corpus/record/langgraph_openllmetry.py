"""Recorder: LangGraph ReAct agents (langchain-openai, see langgraph_agents.py) instrumented with OpenLLMetry
(Traceloop's `opentelemetry-instrumentation-langchain`).

    python langgraph_openllmetry.py --modes       # {mode: {ENV: value}}
    python langgraph_openllmetry.py --scenarios   # the scenarios it supports
    python langgraph_openllmetry.py <scenario>    # run one (see run.py, which serves model and receiver)

The agents are langgraph_agents.py's. Every turn of a scenario runs in one session: one checkpointer thread
(langgraph copies `thread_id` into the run metadata, which OpenLLMetry writes as
`traceloop.association.properties.thread_id`; it has no session API).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from langgraph_agents import WITH_TOOL_ENDS, main, record

MODES = {
    "default": {},
    "no_content": {"TRACELOOP_TRACE_CONTENT": "false"},
}


def instrument(provider: Any) -> Any:
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    LangchainInstrumentor().instrument(tracer_provider=provider)  # content per TRACELOOP_TRACE_CONTENT
    return nullcontext()  # no session of its own: the checkpointer thread is the session


if __name__ == "__main__":
    raise SystemExit(main(MODES, lambda scenario: record(scenario, instrument), WITH_TOOL_ENDS))
