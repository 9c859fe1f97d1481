"""Recorder for the OpenAI Agents SDK traced by OpenLIT (`openlit.init()`), see run.py.

    python openai_agents_openlit.py --modes        # {mode: {ENV: value}}
    python openai_agents_openlit.py --scenarios    # the scenarios it supports
    python openai_agents_openlit.py <scenario>     # run one scenario (OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT)

The agents, tools, sessions and turns are openai_agents.py's (Chat Completions, `OpenAIChatCompletionsModel`; the
`responses` mode the Responses API). The SDK's own exporter is removed (`set_trace_processors([])`) first, then
`openlit.init()` is called as a user calls it, with every instrumentation it enables by default, metrics off: its
openai-agents instrumentation installs its own `TracingProcessor` (`set_trace_processors([processor])`, so it must
come after the removal) and wraps `Agent.__init__`; its OpenAI instrumentation traces the client underneath. It
reuses the global tracer and logger providers corpus.py sets up. Content: OpenLIT's `capture_message_content`, which
`openlit.init()` itself turns off when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false. OpenLIT has no
session API of its own; the run's `group_id` (the SQLiteSession id) is what it may export.
"""

from __future__ import annotations

from openai_agents import RESPONSES, main, otel, run_to_the_end  # imports corpus (it leaves the path)

_BRIDGE = {"CORPUS_INSTRUMENTATION": "openlit"}  # openai_agents.run_scenario: no OpenInference session
MODES: dict[str, dict[str, str]] = {
    "default": _BRIDGE,
    "no_content": {**_BRIDGE, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"},
    "responses": {**_BRIDGE, **RESPONSES},
}


def record(scenario: str) -> None:
    with otel(logs=True):
        from agents import set_trace_processors

        set_trace_processors([])  # drop the SDK's own exporter to OpenAI's trace endpoint
        import openlit

        openlit.init(application_name="corpus", disable_metrics=True)
        run_to_the_end(scenario)


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
