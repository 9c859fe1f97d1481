"""Recorder: LangGraph ReAct agents (langchain-openai, see langgraph_agents.py) instrumented with OpenInference.

    python langgraph_openinference.py --modes       # {mode: {ENV: value}}
    python langgraph_openinference.py --scenarios   # the scenarios it supports
    python langgraph_openinference.py <scenario>    # run one (see run.py, which serves model and receiver)

The agents are langgraph_agents.py's. Every turn of a scenario runs in one session: one checkpointer thread, and
`using_session(thread_id)`.
"""

from __future__ import annotations

from typing import Any

from langgraph_agents import THREAD_ID, WITH_TOOL_ENDS, main, record

MODES = {
    "default": {},
    "hidden": {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
    # the same agents on Gemini (langchain-google-genai's ChatGoogleGenerativeAI, the Gemini API)
    "gemini": {"CORPUS_PROVIDER": "gemini"},
}


def instrument(provider: Any) -> Any:
    from openinference.instrumentation import using_session
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)  # TraceConfig from the OPENINFERENCE_* env
    return using_session(THREAD_ID)


if __name__ == "__main__":
    raise SystemExit(main(MODES, lambda scenario: record(scenario, instrument), WITH_TOOL_ENDS))
