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

from corpus import WITHOUT_HANDOFF, described, get_time, get_weather, issue_refund, main, otel, turns

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
AGENT = "weather_agent"


def serve() -> None:
    with otel(service_suffix="-server"):
        from mcp.server.mcpserver import MCPServer

        server = MCPServer("weather")
        for function in (get_weather, described(get_time, "Get the local time in a city."), issue_refund):
            server.tool()(function)
        server.run("stdio")


async def agent(scenario: str) -> None:
    import openai
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from opentelemetry import trace

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
        for user in turns(scenario):
            messages.append({"role": "user", "content": user})
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


def record(scenario: str) -> None:
    with otel() as providers:
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=providers.tracer)
        asyncio.run(agent(scenario))


if __name__ == "__main__":
    if sys.argv[1:] == ["--server"]:
        serve()
    else:
        raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
