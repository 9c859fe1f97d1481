"""Recorder for the OpenAI Agents SDK under OpenLLMetry (Traceloop's `opentelemetry-instrumentation-openai-agents`),
see run.py.

    python openai_agents_openllmetry.py --modes        # {mode: {ENV: value}}
    python openai_agents_openllmetry.py --scenarios    # the scenarios it supports
    python openai_agents_openllmetry.py <scenario>     # run one scenario (OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT)

The agents, tools, sessions and turns are openai_agents.py's (Chat Completions, `OpenAIChatCompletionsModel`; the
`*_responses` mode the Responses API). The SDK's own exporter is removed (`set_trace_processors([])`), then
OpenLLMetry's openai-agents instrumentation bridges the SDK's tracing to OpenTelemetry. `with_openai` also installs
OpenLLMetry's OpenAI instrumentation, as `Traceloop.init()` does when both are installed: the model calls are then
traced twice, by the agents bridge and by the client. Content is on by default (`TRACELOOP_TRACE_CONTENT`);
`no_content` turns it off.
"""

from __future__ import annotations

import os

from openai_agents import RESPONSES, main, otel, run_to_the_end  # imports corpus (it leaves the path)

_BRIDGE = {"CORPUS_INSTRUMENTATION": "openllmetry"}  # openai_agents.run_scenario: no OpenInference session
MODES: dict[str, dict[str, str]] = {
    "default": _BRIDGE,
    "no_content": {**_BRIDGE, "TRACELOOP_TRACE_CONTENT": "false"},
    "with_openai": {**_BRIDGE, "CORPUS_WITH_OPENAI": "1"},
    "responses": {**_BRIDGE, **RESPONSES},
}


def record(scenario: str) -> None:
    with otel(logs=True) as providers:
        from agents import set_trace_processors
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        set_trace_processors([])  # drop the SDK's own exporter to OpenAI's trace endpoint
        OpenAIAgentsInstrumentor().instrument(tracer_provider=providers.tracer)
        if os.environ.get("CORPUS_WITH_OPENAI"):
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor

            OpenAIInstrumentor().instrument(tracer_provider=providers.tracer)
        run_to_the_end(scenario)


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
