"""Recorder: a small agent loop over the `openai` client whose tools live on an MCP server (`mcp` SDK 2.x).

    python mcp.py --modes | --scenarios | <scenario>      (the client: the agent loop)
    python mcp.py --server                                (the MCP server over stdio, started by the client)

See run.py for the contract. Telemetry on both sides, exported to the same OTLP endpoint:
- the MCP SDK's own OpenTelemetry support (mcp 2.x ships it on by default): a CLIENT span per outbound request
  (`MCP send tools/call get_weather`) that injects W3C trace context into the request's `_meta`, and a SERVER
  span per inbound message (`tools/call get_weather`) in the server process, parented on that context;
- `opentelemetry-instrumentation-openai-v2` for the chat-completions calls (content per mode);
- one application span per user turn, `invoke_agent weather_agent` (GenAI conventions), written by this loop
  so that a turn's model calls and tool calls share a trace.
OpenLLMetry's `opentelemetry-instrumentation-mcp` 0.62.4 fails at `instrument()` against mcp 2.x (it wraps
`mcp.client.streamable_http.streamablehttp_client`, gone in 2.x), so it is not used.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
# This file is named like the package it records: keep its own folder off the import path.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
SCENARIO_FILE = os.path.join(HERE, "scenarios.json")


def _scenarios() -> dict[str, Any]:
    with open(SCENARIO_FILE) as f:
        return json.load(f)


MODES = {
    "content": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
    },
    "no_content": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "NO_CONTENT",
    },
}
SCENARIOS = ["single", "tool_loop", "parallel", "multi_turn", "tool_error"]
AGENT = "weather_agent"


def setup(service_suffix: str = "") -> Any:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()
    if service_suffix:
        resource = resource.merge(Resource({SERVICE_NAME: resource.attributes[SERVICE_NAME] + service_suffix}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def serve() -> None:
    provider = setup("-server")
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("weather")
    weather = {
        "Paris": {"city": "Paris", "forecast": "sunny", "temp_c": 21},
        "London": {"city": "London", "forecast": "rainy", "temp_c": 14},
        "Rome": {"city": "Rome", "forecast": "cloudy", "temp_c": 18},
    }

    @server.tool()
    def get_weather(city: str) -> dict:
        """Get the current weather for a city."""
        if city not in weather:
            raise ValueError(f"unknown city: {city}")
        return dict(weather[city])

    @server.tool()
    def get_time(city: str) -> dict:
        """Get the local time in a city."""
        return {"city": city, "time": "14:00"}

    @server.tool()
    def issue_refund(order_id: int) -> dict:
        """Refund an order."""
        return {"order_id": order_id, "status": "refunded"}

    try:
        server.run("stdio")
    finally:
        provider.shutdown()


async def agent(scenario: str) -> None:
    import openai
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from opentelemetry import trace

    turns = _scenarios()[scenario]["turns"]
    tracer = trace.get_tracer("corpus.mcp_agent")
    # The stdio client passes the server only a safe subset of the environment: hand it the OTel settings.
    env = {k: v for k, v in os.environ.items() if k.startswith("OTEL_")}
    params = StdioServerParameters(command=sys.executable, args=[os.path.abspath(__file__), "--server"], env=env)
    model = openai.AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="sim", max_retries=0)
    conversation_id = f"corpus-mcp-{scenario}"
    async with Client(params) as client:
        listed = await client.list_tools()
        tools = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema},
            }
            for t in listed.tools
        ]
        messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a weather assistant."}]
        for turn in turns:
            messages.append({"role": "user", "content": turn["user"]})
            with tracer.start_as_current_span(
                f"invoke_agent {AGENT}",
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": AGENT,
                    "gen_ai.conversation.id": conversation_id,
                    "gen_ai.provider.name": "openai",
                },
            ):
                for _ in range(8):
                    reply = await model.chat.completions.create(
                        model=os.environ["CORPUS_MODEL"], messages=messages, tools=tools
                    )
                    message = reply.choices[0].message
                    messages.append(message.model_dump(exclude_none=True, exclude={"refusal", "annotations", "audio"}))
                    if not message.tool_calls:
                        print(f"[{scenario}] {message.content!r}", file=sys.stderr)
                        break

                    async def call(tool_call: Any) -> dict[str, Any]:
                        result = await client.call_tool(
                            tool_call.function.name, json.loads(tool_call.function.arguments or "{}")
                        )
                        text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
                        return {"role": "tool", "tool_call_id": tool_call.id, "content": text}

                    messages += await asyncio.gather(*(call(c) for c in message.tool_calls))


def run(scenario: str) -> None:
    provider = setup()
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=provider)
    try:
        asyncio.run(agent(scenario))
    finally:
        provider.shutdown()


def main() -> int:
    if sys.argv[1:] == ["--modes"]:
        print(json.dumps(MODES))
    elif sys.argv[1:] == ["--scenarios"]:
        print(json.dumps(SCENARIOS))
    elif sys.argv[1:] == ["--server"]:
        serve()
    else:
        run(sys.argv[1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
