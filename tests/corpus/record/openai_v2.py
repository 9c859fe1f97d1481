"""Recorder for the official OpenAI instrumentation (`opentelemetry-instrumentation-openai-v2`), see run.py.

    python openai_v2.py --modes        # {mode: {ENV: value}}
    python openai_v2.py --scenarios    # the scenarios it supports (no handoff: a plain client has no hand-off)
    python openai_v2.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

The agent is a small hand-written tool loop around the plain `openai` client (Chat Completions at
OPENAI_BASE_URL, model CORPUS_MODEL): call the model with the three tools, run the tools it asks for, send
their results back as `tool` messages (JSON), until it answers without tool calls. A tool that raises is
handed to the model as `Error: <Type>: <message>`. All turns of a scenario share one message history (one
conversation). The instrumentation makes only the model-call spans (and, in the event modes, log records);
the loop itself adds one plain span per user turn, `turn` (no GenAI attributes), so that the model calls of a
turn share a trace. Without it every model call would be a trace of its own.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# Other recorders live beside this file (one is `mcp.py`): keep them from shadowing installed packages.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
SCENARIOS = {k: v for k, v in json.loads((HERE / "scenarios.json").read_text()).items() if not k.startswith("_")}

_LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
MODES: dict[str, dict[str, str]] = {
    "span_only": {**_LATEST, _CAPTURE: "span_only"},
    "event_only": {**_LATEST, _CAPTURE: "event_only"},
    "span_and_event": {**_LATEST, _CAPTURE: "span_and_event"},
    "no_content": {**_LATEST, _CAPTURE: "no_content"},
    "legacy_true": {_CAPTURE: "true"},
    "legacy_no_content": {_CAPTURE: "false"},
}

WEATHER = {
    "Paris": {"city": "Paris", "forecast": "sunny", "temp_c": 21},
    "London": {"city": "London", "forecast": "rainy", "temp_c": 14},
    "Rome": {"city": "Rome", "forecast": "cloudy", "temp_c": 18},
}


def get_weather(city: str) -> dict:
    if city in WEATHER:
        return dict(WEATHER[city])
    raise ValueError(f"unknown city: {city}")


def get_time(city: str) -> dict:
    return {"city": city, "time": "14:00"}


def issue_refund(order_id: int) -> dict:
    return {"order_id": order_id, "status": "refunded"}


TOOLS = {"get_weather": get_weather, "get_time": get_time, "issue_refund": issue_refund}


def _schema(name: str, description: str, param: str, kind: str) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {param: {"type": kind}}, "required": [param]},
        },
    }


TOOL_SCHEMAS = [
    _schema("get_weather", "Get the current weather for a city.", "city", "string"),
    _schema("get_time", "Get the current local time in a city.", "city", "string"),
]
SYSTEM = "You are a weather assistant. Use the tools for weather and time."


def setup_otel() -> tuple[Any, Any]:
    from opentelemetry import _logs, trace
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    _logs.set_logger_provider(logger_provider)
    return tracer_provider, logger_provider


def run_tool(name: str, arguments: str) -> str:
    try:
        result = TOOLS[name](**json.loads(arguments or "{}"))
    except Exception as error:  # handed to the model, as agent loops do
        return f"Error: {type(error).__name__}: {error}"
    return json.dumps(result)


def run_scenario(scenario: str, tracer: Any) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim"))
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for index, turn in enumerate(SCENARIOS[scenario]["turns"]):
        messages.append({"role": "user", "content": turn["user"]})
        with tracer.start_as_current_span("turn", attributes={"corpus.turn": index}):
            for _ in range(8):
                response = client.chat.completions.create(
                    model=os.environ["CORPUS_MODEL"], messages=messages, tools=TOOL_SCHEMAS
                )
                message = response.choices[0].message
                calls = message.tool_calls or []
                entry: dict[str, Any] = {"role": "assistant", "content": message.content}
                if calls:
                    entry["tool_calls"] = [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.function.name, "arguments": call.function.arguments},
                        }
                        for call in calls
                    ]
                messages.append(entry)
                if not calls:
                    break
                for call in calls:
                    messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": call.id,
                            "content": run_tool(call.function.name, call.function.arguments),
                        }
                    )
        print(f"[{scenario}] {turn['user']!r} -> {messages[-1]['content']!r}", file=sys.stderr)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--modes"]:
        print(json.dumps(MODES))
        return 0
    if argv[:1] == ["--scenarios"]:
        print(json.dumps([name for name in SCENARIOS if name != "handoff"]))
        return 0
    scenario = argv[0]
    tracer_provider, logger_provider = setup_otel()
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        run_scenario(scenario, tracer_provider.get_tracer("corpus.openai_v2.loop"))
    finally:
        tracer_provider.shutdown()
        logger_provider.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
