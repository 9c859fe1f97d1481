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

import os
from typing import Any

from corpus import HANDOFF_TOOL, INSTRUCTIONS, RESPONSES, TOOLS, TRANSFERRED, answered, chat_loop, log, main, turns

MODES: dict[str, dict[str, str]] = {
    "default": {},
    "masked": {"CORPUS_LANGFUSE_MASK": "1"},
    "responses": RESPONSES,  # the same loop on the Responses API (corpus.responses_loop)
}


def record(scenario: str) -> None:
    # One function on purpose: the tools and agents close over the configured client and the scenario.
    os.environ["LANGFUSE_BASE_URL"] = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]
    os.environ.setdefault("LANGFUSE_PUBLIC_KEY", "pk-lf-corpus")
    os.environ.setdefault("LANGFUSE_SECRET_KEY", "sk-lf-corpus")

    from langfuse import Langfuse, get_client, observe, propagate_attributes
    from langfuse.openai import OpenAI

    if os.environ.get("CORPUS_LANGFUSE_MASK") == "1":
        Langfuse(mask=lambda data, **_: "[REDACTED]")  # Langfuse's masking hook, as a team scrubbing all I/O would
    langfuse = get_client()
    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim"))
    get_weather, get_time, issue_refund = (observe(as_type="tool")(f) for f in TOOLS.values())

    @observe(as_type="agent", name="weather_agent")
    def weather_agent(messages: list[dict[str, Any]]) -> str:
        tools = {"get_weather": get_weather, "get_time": get_time}
        return chat_loop(client, INSTRUCTIONS["weather_agent"], tools, messages)

    @observe(as_type="agent", name="billing_agent")
    def billing_agent(messages: list[dict[str, Any]]) -> str:
        return chat_loop(client, INSTRUCTIONS["billing_agent"], {"issue_refund": issue_refund}, messages)

    @observe(as_type="tool", name=HANDOFF_TOOL)
    def transfer_to_billing_agent(call_id: str, messages: list[dict[str, Any]]) -> str:
        history = [*messages, answered(call_id, TRANSFERRED)]
        return billing_agent(history)

    @observe(as_type="agent", name="triage_agent")
    def triage_agent(messages: list[dict[str, Any]]) -> str:
        return chat_loop(client, INSTRUCTIONS["triage_agent"], {HANDOFF_TOOL: transfer_to_billing_agent}, messages)

    agent = triage_agent if scenario == "handoff" else weather_agent
    messages: list[dict[str, Any]] = []
    try:
        with propagate_attributes(session_id=f"corpus-{scenario}"):
            for user in turns(scenario):
                messages.append({"role": "user", "content": user})
                log(scenario, user, agent(messages))
    finally:
        langfuse.shutdown()  # flushes Langfuse's span processor


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
