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

import os
from typing import Any

from corpus import HANDOFF_TOOL, INSTRUCTIONS, RESPONSES, TOOLS, TRANSFERRED, answered, chat_loop, log, main, turns

MODES: dict[str, dict[str, str]] = {
    "default": {},
    "scrubbing_off": {"CORPUS_LOGFIRE_SCRUBBING": "0"},
    "responses": RESPONSES,  # the same loop on the Responses API (corpus.responses_loop)
}


def record(scenario: str) -> None:
    # One function on purpose: the tools and agents close over the configured client and the scenario.
    session_id = f"corpus-{scenario}"

    import logfire
    from openai import OpenAI

    scrubbing = None if os.environ.get("CORPUS_LOGFIRE_SCRUBBING", "1") == "1" else False
    logfire.configure(send_to_logfire=False, console=False, scrubbing=scrubbing)  # type: ignore[arg-type]
    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim"))
    logfire.instrument_openai(client)
    get_weather, get_time, issue_refund = (logfire.instrument(n, record_return=True)(TOOLS[n]) for n in TOOLS)

    def agent_run(name: str, tools: dict[str, Any], messages: list[dict[str, Any]]) -> str:
        with logfire.span("{agent_name} run", agent_name=name, **{"session.id": session_id}) as span:
            answer = chat_loop(client, INSTRUCTIONS[name], tools, messages)
            span.set_attribute("final_result", answer)
            return answer

    @logfire.instrument(HANDOFF_TOOL, extract_args=False, record_return=True)
    def transfer_to_billing_agent(call_id: str, messages: list[dict[str, Any]]) -> str:
        history = [*messages, answered(call_id, TRANSFERRED)]
        return agent_run("billing_agent", {"issue_refund": issue_refund}, history)

    def agent(messages: list[dict[str, Any]]) -> str:
        if scenario == "handoff":
            return agent_run("triage_agent", {HANDOFF_TOOL: transfer_to_billing_agent}, messages)
        return agent_run("weather_agent", {"get_weather": get_weather, "get_time": get_time}, messages)

    messages: list[dict[str, Any]] = []
    try:
        for user in turns(scenario):
            messages.append({"role": "user", "content": user})
            log(scenario, user, agent(messages))
    finally:
        logfire.shutdown()


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
