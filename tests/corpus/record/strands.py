"""Recorder for Strands Agents (`strands-agents[openai]`) with its native OpenTelemetry telemetry.

    python strands.py --modes        # {mode: {ENV: value}}
    python strands.py --scenarios    # the scenarios it runs
    python strands.py <scenario>     # run one (see run.py)

Telemetry: `StrandsTelemetry(tracer_provider=...)` on a plain SDK TracerProvider with a batch OTLP/HTTP
exporter (Strands emits spans only, no log records). The mode is Strands' own `OTEL_SEMCONV_STABILITY_OPT_IN`:
legacy per-message span events (unset), the latest GenAI conventions with the content in span events
(`gen_ai_latest_experimental`) or on span attributes (`+gen_ai_span_attributes_only`), and the latter with
every sensitive attribute redacted (`gen_ai_unredacted_attributes=` with an empty allow-list).

The session: Strands has no conversation id of its own; the agents get `trace_attributes={"session.id": ...}`
as Strands' docs show, and the Agent object keeps its history between the user turns (multi_turn).

Tool errors: `get_weather` raises ValueError; Strands catches it and hands the model an error toolResult.

Handoff: agents-as-tools with delegation: `billing_agent.as_tool(delegate=True)` (the triage run ends with the
delegate's answer, without another triage model call). The delegate is handed the triage conversation so far
(plus the transfer call's result) instead of a fresh one-line prompt, so that it continues the conversation as a
hand-off does (a thin subclass of Strands' agent-as-tool adapter; see `_Handoff`).
"""

import copy
import json
import os
import sys
from pathlib import Path

MODES = {
    "legacy": {"OTEL_SEMCONV_STABILITY_OPT_IN": ""},
    "latest_events": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"},
    "latest_attributes": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental,gen_ai_span_attributes_only"},
    "redacted": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental,gen_ai_span_attributes_only,"
        "gen_ai_unredacted_attributes="
    },
}
SCENARIOS = ["single", "tool_loop", "parallel", "multi_turn", "tool_error", "handoff"]
HERE = Path(__file__).resolve().parent
# this file is named like the package it records: keep its own folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

WEATHER = {
    "Paris": {"city": "Paris", "forecast": "sunny", "temp_c": 21},
    "London": {"city": "London", "forecast": "rainy", "temp_c": 14},
    "Rome": {"city": "Rome", "forecast": "cloudy", "temp_c": 18},
}


def main() -> int:
    if sys.argv[1:] == ["--modes"]:
        print(json.dumps(MODES))
        return 0
    if sys.argv[1:] == ["--scenarios"]:
        print(json.dumps(SCENARIOS))
        return 0
    scenario_name = sys.argv[1]
    scenario = json.loads((HERE / "scenarios.json").read_text())[scenario_name]

    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    trace.set_tracer_provider(provider)

    from strands import Agent, tool
    from strands.agent._agent_as_tool import _AgentAsTool
    from strands.models.openai import OpenAIModel
    from strands.telemetry import StrandsTelemetry

    StrandsTelemetry(tracer_provider=provider).setup_otlp_exporter()  # batch processor, OTEL_EXPORTER_OTLP_ENDPOINT

    model = OpenAIModel(
        client_args={"base_url": os.environ["OPENAI_BASE_URL"], "api_key": os.environ.get("OPENAI_API_KEY", "sim")},
        model_id=os.environ["CORPUS_MODEL"],
    )
    trace_attributes = {"session.id": f"corpus-{scenario_name}"}

    @tool
    def get_weather(city: str) -> dict:
        """Get the current weather for a city.

        Args:
            city: the city
        """
        if city not in WEATHER:
            raise ValueError(f"unknown city: {city}")
        return dict(WEATHER[city])

    @tool
    def get_time(city: str) -> dict:
        """Get the local time in a city.

        Args:
            city: the city
        """
        return {"city": city, "time": "14:00"}

    @tool
    def issue_refund(order_id: int) -> dict:
        """Refund an order.

        Args:
            order_id: the order to refund
        """
        return {"order_id": order_id, "status": "refunded"}

    class _Handoff(_AgentAsTool):
        """Strands' agent-as-tool adapter, giving the delegate the caller's conversation (a list of messages is a
        valid agent input) ending with the transfer call's result, instead of the call's `input` string alone."""

        async def stream(self, tool_use, invocation_state, **kwargs):  # type: ignore[no-untyped-def]
            parent = invocation_state.get("agent")
            history = copy.deepcopy(parent.messages) if parent is not None else []
            history.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "toolResult": {
                                "toolUseId": tool_use["toolUseId"],
                                "status": "success",
                                "content": [{"text": "Transferred to billing_agent."}],
                            }
                        }
                    ],
                }
            )
            async for event in super().stream({**tool_use, "input": {"input": history}}, invocation_state, **kwargs):
                yield event

    if scenario_name == "handoff":
        billing_agent = Agent(
            model=model,
            name="billing_agent",
            description="Handles billing: refunds orders.",
            system_prompt="You are the billing agent. Refund orders with issue_refund.",
            tools=[issue_refund],
            trace_attributes=trace_attributes,
            callback_handler=None,
        )
        agent = Agent(
            model=model,
            name="triage_agent",
            system_prompt="You are the triage agent. Send billing questions to the billing agent.",
            tools=[_Handoff(billing_agent, name="transfer_to_billing_agent", delegate=True)],
            trace_attributes=trace_attributes,
            callback_handler=None,
        )
    else:
        agent = Agent(
            model=model,
            name="weather_agent",
            system_prompt="You are a weather assistant. Use the tools to answer.",
            tools=[get_weather, get_time],
            trace_attributes=trace_attributes,
            callback_handler=None,
        )

    try:
        for turn in scenario["turns"]:
            result = agent(turn["user"])
            print(f"[{scenario_name}] {turn['user']!r} -> {str(result).strip()!r}", file=sys.stderr)
    finally:
        provider.shutdown()  # flushes the batch processor
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
