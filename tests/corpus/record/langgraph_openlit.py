"""Recorder: LangGraph ReAct agents (langchain-openai, see langgraph_agents.py) traced by OpenLIT (`openlit.init()`).

    python langgraph_openlit.py --modes       # {mode: {ENV: value}}
    python langgraph_openlit.py --scenarios   # the scenarios it supports
    python langgraph_openlit.py <scenario>    # run one (see run.py, which serves model and receiver)

The agents are langgraph_agents.py's. `openlit.init()` is called as a user calls it, before the agents are built
(OpenLIT's LangGraph instrumentation wraps `StateGraph.add_node` / `compile`), with every instrumentation it enables
by default (LangChain's callbacks, LangGraph, the openai client underneath langchain-openai, httpx ...), metrics
off; it reuses the global tracer and logger providers corpus.py sets up (as it does any application's), so spans
and its log records go to OTEL_EXPORTER_OTLP_ENDPOINT. Content: OpenLIT's `capture_message_content`, which
`openlit.init()` itself turns off when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false. Every turn of a
scenario runs on one checkpointer thread; OpenLIT has no session API of its own.
"""

from __future__ import annotations

from langgraph_agents import main, otel, play

MODES: dict[str, dict[str, str]] = {
    "default": {},
    "no_content": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"},
}


def record(scenario: str) -> None:
    with otel(logs=True):
        import openlit

        openlit.init(application_name="corpus", disable_metrics=True)
        play(scenario)


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
