"""Recorder for Google's Gen AI SDK (`google-genai`) under the three instrumentations that trace it, see run.py.

    python google_genai.py --modes        # {mode: {ENV: value}}
    python google_genai.py --scenarios    # the scenarios it supports (no handoff: a plain client has none)
    python google_genai.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

The agent is openai_v2.py's hand-written tool loop in the Gemini API's shapes, as Google's function-calling
documentation writes it: `client.models.generate_content` (the simulated model's Gemini route, at its root URL
through `http_options.base_url`; model CORPUS_MODEL) with the system prompt as `system_instruction`, the tools as
`FunctionDeclaration`s and automatic function calling off; the loop runs the calls the response's
`function_calls` ask for and hands each result back as a `functionResponse` part of one `user` content
(`{"result": <the tool's value>}`, a tool that raises as `{"error": "<Type>: <message>"}`, as the documentation
shows), until the model answers without calls. The Gemini API names no call ids: results are matched by name,
in order. All turns share one history; one plain span `turn` per user turn (no GenAI attributes) makes a turn
one trace. Modes `stream`, `openinference_stream` and `openllmetry_stream` call `generate_content_stream` instead.

Instrumentations, each the only one installed in its modes:
- OpenTelemetry's `opentelemetry-instrumentation-google-genai` (`GoogleGenAiSdkInstrumentor`), content as the
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT modes of the current GenAI conventions, or its legacy events;
- OpenInference's `openinference-instrumentation-google-genai` (`GoogleGenAIInstrumentor`);
- OpenLLMetry's `opentelemetry-instrumentation-google-generativeai` (`GoogleGenerativeAiInstrumentor`).
"""

from __future__ import annotations

import os
from typing import Any

from corpus import SCHEMAS, TOOLS, WITHOUT_HANDOFF, log, main, otel, turns

_LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
MODES: dict[str, dict[str, str]] = {
    "span_only": {**_LATEST, _CAPTURE: "SPAN_ONLY"},
    "event_only": {**_LATEST, _CAPTURE: "EVENT_ONLY"},
    "no_content": {**_LATEST, _CAPTURE: "NO_CONTENT"},
    "legacy": {_CAPTURE: "true"},
    "stream": {**_LATEST, _CAPTURE: "SPAN_ONLY", "CORPUS_STREAM": "1"},
    "openinference": {"CORPUS_INSTRUMENTATION": "openinference"},
    "openllmetry": {"CORPUS_INSTRUMENTATION": "openllmetry", "TRACELOOP_TRACE_CONTENT": "true"},
    "openinference_stream": {"CORPUS_INSTRUMENTATION": "openinference", "CORPUS_STREAM": "1"},
    "openllmetry_stream": {
        "CORPUS_INSTRUMENTATION": "openllmetry",
        "TRACELOOP_TRACE_CONTENT": "true",
        "CORPUS_STREAM": "1",
    },
}
SYSTEM = "You are a weather assistant. Use the tools for weather and time."


def _answer(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A functionResponse's `response`: the tool's value, or what it raised."""
    try:
        return {"result": TOOLS[name](**arguments)}
    except Exception as error:
        return {"error": f"{type(error).__name__}: {error}"}


def run_scenario(scenario: str, tracer: Any) -> None:
    from google import genai
    from google.genai import types

    base = os.environ["OPENAI_BASE_URL"].removesuffix("/").removesuffix("/v1")  # run.py's simulated model
    key = os.environ.get("GEMINI_API_KEY", "sim")
    client = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=base))
    declared = [
        types.FunctionDeclaration(
            name=s["function"]["name"], description=s["function"]["description"],
            parameters_json_schema=s["function"]["parameters"],
        )
        for s in (SCHEMAS["get_weather"], SCHEMAS["get_time"])
    ]  # fmt: skip
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=[types.Tool(function_declarations=declared)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    model = os.environ["CORPUS_MODEL"]
    contents: list[Any] = []
    for index, user in enumerate(turns(scenario)):
        contents.append(types.Content(role="user", parts=[types.Part.from_text(text=user)]))
        answer = ""
        with tracer.start_as_current_span("turn", attributes={"corpus.turn": index}):
            for _ in range(8):
                if os.environ.get("CORPUS_STREAM") == "1":
                    parts = []
                    for chunk in client.models.generate_content_stream(model=model, contents=contents, config=config):
                        parts += chunk.candidates[0].content.parts or [] if chunk.candidates else []
                    content = types.Content(role="model", parts=parts)
                else:
                    response = client.models.generate_content(model=model, contents=contents, config=config)
                    content = response.candidates[0].content
                contents.append(content)
                calls = [p.function_call for p in content.parts or [] if p.function_call]
                answer = "".join(p.text for p in content.parts or [] if p.text)
                if not calls:
                    break
                results = [
                    types.Part.from_function_response(name=c.name, response=_answer(c.name, dict(c.args or {})))
                    for c in calls
                ]
                contents.append(types.Content(role="user", parts=results))
        log(scenario, user, answer)


def record(scenario: str) -> None:
    chosen = os.environ.get("CORPUS_INSTRUMENTATION")
    with otel(logs=True) as providers:
        if chosen == "openinference":
            from openinference.instrumentation.google_genai import GoogleGenAIInstrumentor

            GoogleGenAIInstrumentor().instrument(tracer_provider=providers.tracer)
        elif chosen == "openllmetry":
            from opentelemetry.instrumentation.google_generativeai import GoogleGenerativeAiInstrumentor

            GoogleGenerativeAiInstrumentor().instrument(tracer_provider=providers.tracer)
        else:
            from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

            GoogleGenAiSdkInstrumentor().instrument(tracer_provider=providers.tracer, logger_provider=providers.logger)
        run_scenario(scenario, providers.tracer.get_tracer(f"corpus.google_genai.{chosen or 'opentelemetry'}.loop"))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
