"""Recorder for the Langfuse Python SDK (v3+ is built on OpenTelemetry; this is v5), see run.py for the contract.

    python langfuse.py --modes        # {mode: {ENV: value}}
    python langfuse.py --scenarios    # the scenarios it supports
    python langfuse.py <scenario>     # run one scenario, exporting OTLP/HTTP to the Langfuse OTLP path below

Langfuse is an observability SDK, not an agent framework; its users instrument their own agent loop. The agent here
is a small hand-written tool loop on the `openai` client (Chat Completions at OPENAI_BASE_URL, model CORPUS_MODEL),
instrumented the way Langfuse documents: `@observe(as_type="agent")` on each agent run, `@observe(as_type="tool")`
on each tool, Langfuse's OpenAI drop-in (`from langfuse.openai import OpenAI`) for the model calls (generations),
and `propagate_attributes(session_id=...)` around a scenario's turns. Langfuse's own exporter sends OTLP/HTTP
protobuf (gzip) to `<LANGFUSE_BASE_URL>/api/public/otel/v1/traces` with basic auth: the recorder points
LANGFUSE_BASE_URL at run.py's receiver (OTEL_EXPORTER_OTLP_ENDPOINT) with dummy keys.

Mode `masked` passes Langfuse's `mask` hook a function that replaces every input and output with `[REDACTED]`.

A tool that raises is handed to the model as `Error: <Type>: <message>` (the loop catches it after the tool's
observation recorded it). handoff: the triage agent's tool `transfer_to_billing_agent` runs the billing agent on
the conversation so far plus the transfer's result, and the triage run ends with billing's answer.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# this file is named like the package it records: keep its own folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
SCENARIOS = {k: v for k, v in json.loads((HERE / "scenarios.json").read_text()).items() if not k.startswith("_")}

MODES: dict[str, dict[str, str]] = {"default": {}, "masked": {"CORPUS_LANGFUSE_MASK": "1"}}

WEATHER = {
    "Paris": {"city": "Paris", "forecast": "sunny", "temp_c": 21},
    "London": {"city": "London", "forecast": "rainy", "temp_c": 14},
    "Rome": {"city": "Rome", "forecast": "cloudy", "temp_c": 18},
}


def _schema(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(properties)},
        },
    }


CITY = {"city": {"type": "string"}}
SCHEMAS = {
    "get_weather": _schema("get_weather", "Get the current weather for a city.", CITY),
    "get_time": _schema("get_time", "Get the current local time in a city.", CITY),
    "issue_refund": _schema("issue_refund", "Refund an order.", {"order_id": {"type": "integer"}}),
    "transfer_to_billing_agent": _schema(
        "transfer_to_billing_agent", "Hand the conversation to the billing agent, which handles refunds.", {}
    ),
}


def main(argv: list[str]) -> int:
    # One function on purpose: the tools and agents close over the configured client and the scenario.
    if argv[:1] == ["--modes"]:
        print(json.dumps(MODES))
        return 0
    if argv[:1] == ["--scenarios"]:
        print(json.dumps(list(SCENARIOS)))
        return 0
    scenario = argv[0]
    os.environ["LANGFUSE_BASE_URL"] = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]
    os.environ.setdefault("LANGFUSE_PUBLIC_KEY", "pk-lf-corpus")
    os.environ.setdefault("LANGFUSE_SECRET_KEY", "sk-lf-corpus")

    from langfuse import Langfuse, get_client, observe, propagate_attributes
    from langfuse.openai import OpenAI

    if os.environ.get("CORPUS_LANGFUSE_MASK") == "1":
        Langfuse(mask=lambda data, **_: "[REDACTED]")  # Langfuse's masking hook, as a team scrubbing all I/O would
    langfuse = get_client()
    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim"))
    model = os.environ["CORPUS_MODEL"]

    @observe(as_type="tool")
    def get_weather(city: str) -> dict:
        if city in WEATHER:
            return dict(WEATHER[city])
        raise ValueError(f"unknown city: {city}")

    @observe(as_type="tool")
    def get_time(city: str) -> dict:
        return {"city": city, "time": "14:00"}

    @observe(as_type="tool")
    def issue_refund(order_id: int) -> dict:
        return {"order_id": order_id, "status": "refunded"}

    def loop(instructions: str, tools: dict[str, Any], messages: list[dict[str, Any]]) -> str:
        """Call the model, run the tools it asks for, until it answers; `messages` grows in place."""
        while True:
            response = client.chat.completions.create(
                model=model,
                messages=[{"role": "system", "content": instructions}, *messages],
                tools=[SCHEMAS[n] for n in tools],
            )
            message = response.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return message.content or ""
            for call in message.tool_calls:
                name, args = call.function.name, json.loads(call.function.arguments or "{}")
                try:
                    result = tools[name](call.id, messages, **args) if name in HANDOFFS else tools[name](**args)
                    content = result if isinstance(result, str) else json.dumps(result)
                except Exception as error:  # the model gets the failure, as agent frameworks do
                    content = f"Error: {type(error).__name__}: {error}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
                if name in HANDOFFS:
                    return content  # the delegate's answer ends the triage run

    @observe(as_type="agent", name="weather_agent")
    def weather_agent(messages: list[dict[str, Any]]) -> str:
        return loop(
            "You are a weather assistant. Use the tools to answer.",
            {"get_weather": get_weather, "get_time": get_time},
            messages,
        )

    @observe(as_type="agent", name="billing_agent")
    def billing_agent(messages: list[dict[str, Any]]) -> str:
        instructions = "You are the billing agent. Refund orders with issue_refund."
        return loop(instructions, {"issue_refund": issue_refund}, messages)

    @observe(as_type="tool", name="transfer_to_billing_agent")
    def transfer_to_billing_agent(call_id: str, messages: list[dict[str, Any]]) -> str:
        history = [*messages, {"role": "tool", "tool_call_id": call_id, "content": "Transferred to billing_agent."}]
        return billing_agent(history)

    HANDOFFS = {"transfer_to_billing_agent"}

    @observe(as_type="agent", name="triage_agent")
    def triage_agent(messages: list[dict[str, Any]]) -> str:
        return loop(
            "You are the triage agent. Send billing questions to the billing agent.",
            {"transfer_to_billing_agent": transfer_to_billing_agent},
            messages,
        )

    agent = triage_agent if scenario == "handoff" else weather_agent
    messages: list[dict[str, Any]] = []
    try:
        with propagate_attributes(session_id=f"corpus-{scenario}"):
            for turn in SCENARIOS[scenario]["turns"]:
                messages.append({"role": "user", "content": turn["user"]})
                answer = agent(messages)
                print(f"[{scenario}] {turn['user']!r} -> {answer!r}", file=sys.stderr)
    finally:
        langfuse.shutdown()  # flushes Langfuse's span processor
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
