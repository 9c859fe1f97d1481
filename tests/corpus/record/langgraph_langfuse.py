"""Recorder: LangGraph ReAct agents (langchain-openai, see langgraph_agents.py) traced by Langfuse's LangChain
callback handler (`langfuse.langchain.CallbackHandler`, Langfuse Python SDK v5 on OpenTelemetry).

    python langgraph_langfuse.py --modes       # {mode: {ENV: value}}
    python langgraph_langfuse.py --scenarios   # the scenarios it supports
    python langgraph_langfuse.py <scenario>    # run one (see run.py, which serves model and receiver)

The agents are langgraph_agents.py's; the handler goes into each invocation's `callbacks` and every turn runs
inside `propagate_attributes(session_id=THREAD_ID)`, as Langfuse documents for LangChain. Langfuse exports with its
own OTLP/HTTP exporter to `<LANGFUSE_BASE_URL>/api/public/otel/v1/traces`: the recorder points LANGFUSE_BASE_URL at
run.py's receiver, with dummy keys.
"""

from __future__ import annotations

import os

from langgraph_agents import THREAD_ID, main, play

MODES: dict[str, dict[str, str]] = {"default": {}}


def record(scenario: str) -> None:
    os.environ["LANGFUSE_BASE_URL"] = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]
    os.environ.setdefault("LANGFUSE_PUBLIC_KEY", "pk-lf-corpus")
    os.environ.setdefault("LANGFUSE_SECRET_KEY", "sk-lf-corpus")

    from langfuse import get_client, propagate_attributes
    from langfuse.langchain import CallbackHandler

    langfuse = get_client()
    try:
        with propagate_attributes(session_id=THREAD_ID):
            play(scenario, callbacks=[CallbackHandler()])
    finally:
        langfuse.shutdown()  # flushes Langfuse's span processor


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
