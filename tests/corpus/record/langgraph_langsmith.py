"""Recorder: LangGraph ReAct agents (langchain-openai, see langgraph_agents.py) traced by LangSmith's OpenTelemetry
export (`langsmith[otel]`): LangChain's own tracer (LangSmith's) turns every run into an OpenTelemetry span.

    python langgraph_langsmith.py --modes       # {mode: {ENV: value}}
    python langgraph_langsmith.py --scenarios   # the scenarios it supports
    python langgraph_langsmith.py <scenario>    # run one (see run.py, which serves model and receiver)

Set up as LangSmith documents it for an OpenTelemetry backend other than LangSmith: LANGSMITH_TRACING=true,
LANGSMITH_OTEL_ENABLED=true and LANGSMITH_OTEL_ONLY=true (spans to OTEL_EXPORTER_OTLP_ENDPOINT only, nothing to
LangSmith's API; a dummy key). LangSmith builds its own TracerProvider with an OTLP/HTTP exporter from the
OTEL_EXPORTER_OTLP_* variables. The agents are langgraph_agents.py's; every turn runs on one checkpointer thread,
whose id is the run's `thread_id` metadata (LangSmith's conversation key).
"""

from __future__ import annotations

import os

from langgraph_agents import main, play

MODES: dict[str, dict[str, str]] = {"default": {}}


def record(scenario: str) -> None:
    os.environ.update(LANGSMITH_TRACING="true", LANGSMITH_OTEL_ENABLED="true", LANGSMITH_OTEL_ONLY="true")
    os.environ.setdefault("LANGSMITH_API_KEY", "lsv2-corpus")
    from langchain_core.tracers.langchain import wait_for_all_tracers

    try:
        play(scenario)
    finally:
        wait_for_all_tracers()  # LangChain's tracer hands its runs to LangSmith's client in the background
        from opentelemetry import trace

        provider = trace.get_tracer_provider()
        if hasattr(provider, "shutdown"):
            provider.shutdown()  # flushes LangSmith's span processor


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
