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
import os
from typing import Any

from corpus import HANDOFF_TOOL, INSTRUCTIONS, TOOLS, TRANSFERRED, described, log, main, turns

MODES = {
    "legacy": {"OTEL_SEMCONV_STABILITY_OPT_IN": ""},
    "latest_events": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"},
    "latest_attributes": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental,gen_ai_span_attributes_only"},
    "redacted": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental,gen_ai_span_attributes_only,"
        "gen_ai_unredacted_attributes="
    },
}
# Strands reads a tool's description, and its arguments', from the docstring (an Args section): worded so here,
# with types for annotations (this recorder always had them)
ARGS = "\n\nArgs:\n    "
get_weather = described(TOOLS["get_weather"], f"Get the current weather for a city.{ARGS}city: the city", True)
get_time = described(TOOLS["get_time"], f"Get the local time in a city.{ARGS}city: the city", True)
issue_refund = described(TOOLS["issue_refund"], f"Refund an order.{ARGS}order_id: the order to refund", True)


def record(scenario_name: str) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider(resource=Resource.create())  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    trace.set_tracer_provider(provider)
    try:
        agent = build(scenario_name, provider)
        for user in turns(scenario_name):
            log(scenario_name, user, str(agent(user)).strip())
    finally:
        provider.shutdown()  # flushes the batch processor


def build(scenario_name: str, provider: Any) -> Any:
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
                                "content": [{"text": TRANSFERRED}],
                            }
                        }
                    ],
                }
            )
            async for event in super().stream({**tool_use, "input": {"input": history}}, invocation_state, **kwargs):
                yield event

    def agent(name: str, tools: list[Any], **options: Any) -> Any:
        return Agent(
            model=model,
            name=name,
            system_prompt=INSTRUCTIONS[name],
            tools=tools,
            trace_attributes=trace_attributes,
            callback_handler=None,
            **options,
        )

    if scenario_name == "handoff":
        billing_agent = agent("billing_agent", [tool(issue_refund)], description="Handles billing: refunds orders.")
        return agent("triage_agent", [_Handoff(billing_agent, name=HANDOFF_TOOL, delegate=True)])
    return agent("weather_agent", [tool(get_weather), tool(get_time)])


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
