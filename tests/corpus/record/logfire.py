"""Recorder for Pydantic Logfire (`logfire`) tracing a hand-written agent loop, see run.py for the contract.

    python logfire.py --modes        # {mode: {ENV: value}}
    python logfire.py --scenarios    # the scenarios it supports
    python logfire.py <scenario>     # run one scenario, exporting OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT

Logfire is an observability SDK on OpenTelemetry. `logfire.configure(send_to_logfire=False)` with
OTEL_EXPORTER_OTLP_ENDPOINT set makes Logfire export to that endpoint (OTLP/HTTP protobuf) instead of its own
service. The agent is a small tool loop on the `openai` client (Chat Completions at OPENAI_BASE_URL, model
CORPUS_MODEL), instrumented with Logfire's own pieces: `logfire.instrument_openai()` for the model calls, a
`logfire.span("{agent_name} run", ...)` per agent run that carries the app's `session.id` (the scenario's
conversation id, as OpenInference and Langfuse name it), and `@logfire.instrument(..., record_return=True)` on each
tool. Logfire scrubs attributes whose names match its default patterns (`session` among them): mode `default`
keeps that, mode `scrubbing_off` passes `scrubbing=False`.

A tool that raises is handed to the model as `Error: <Type>: <message>` (the loop catches it after the tool's span
recorded it). handoff: the triage agent's tool `transfer_to_billing_agent` runs the billing agent on the
conversation so far plus the transfer's result, and the triage run ends with billing's answer.
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

MODES: dict[str, dict[str, str]] = {"default": {}, "scrubbing_off": {"CORPUS_LOGFIRE_SCRUBBING": "0"}}

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
    session_id = f"corpus-{scenario}"

    import logfire
    from openai import OpenAI

    scrubbing = None if os.environ.get("CORPUS_LOGFIRE_SCRUBBING", "1") == "1" else False
    logfire.configure(send_to_logfire=False, console=False, scrubbing=scrubbing)  # type: ignore[arg-type]
    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim"))
    logfire.instrument_openai(client)
    model = os.environ["CORPUS_MODEL"]

    @logfire.instrument("get_weather", record_return=True)
    def get_weather(city: str) -> dict:
        if city in WEATHER:
            return dict(WEATHER[city])
        raise ValueError(f"unknown city: {city}")

    @logfire.instrument("get_time", record_return=True)
    def get_time(city: str) -> dict:
        return {"city": city, "time": "14:00"}

    @logfire.instrument("issue_refund", record_return=True)
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
                    result = tools[name](call.id, messages) if name in HANDOFFS else tools[name](**args)
                    content = result if isinstance(result, str) else json.dumps(result)
                except Exception as error:  # the model gets the failure, as agent frameworks do
                    content = f"Error: {type(error).__name__}: {error}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
                if name in HANDOFFS:
                    return content  # the delegate's answer ends the triage run

    def agent_run(name: str, instructions: str, tools: dict[str, Any], messages: list[dict[str, Any]]) -> str:
        with logfire.span("{agent_name} run", agent_name=name, **{"session.id": session_id}) as span:
            answer = loop(instructions, tools, messages)
            span.set_attribute("final_result", answer)
            return answer

    def billing_agent(messages: list[dict[str, Any]]) -> str:
        instructions = "You are the billing agent. Refund orders with issue_refund."
        return agent_run("billing_agent", instructions, {"issue_refund": issue_refund}, messages)

    @logfire.instrument("transfer_to_billing_agent", extract_args=False, record_return=True)
    def transfer_to_billing_agent(call_id: str, messages: list[dict[str, Any]]) -> str:
        history = [*messages, {"role": "tool", "tool_call_id": call_id, "content": "Transferred to billing_agent."}]
        return billing_agent(history)

    HANDOFFS = {"transfer_to_billing_agent"}

    def agent(messages: list[dict[str, Any]]) -> str:
        if scenario == "handoff":
            instructions = "You are the triage agent. Send billing questions to the billing agent."
            return agent_run("triage_agent", instructions, {HANDOFFS.copy().pop(): transfer_to_billing_agent}, messages)
        instructions = "You are a weather assistant. Use the tools to answer."
        return agent_run("weather_agent", instructions, {"get_weather": get_weather, "get_time": get_time}, messages)

    messages: list[dict[str, Any]] = []
    try:
        for turn in SCENARIOS[scenario]["turns"]:
            messages.append({"role": "user", "content": turn["user"]})
            answer = agent(messages)
            print(f"[{scenario}] {turn['user']!r} -> {answer!r}", file=sys.stderr)
    finally:
        logfire.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
