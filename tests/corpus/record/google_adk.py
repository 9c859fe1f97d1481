"""Recorder for Google ADK (`google-adk`) with its native OpenTelemetry spans (and log records).

    python google_adk.py --modes        # {mode: {ENV: value}}
    python google_adk.py --scenarios    # the scenarios it runs
    python google_adk.py <scenario>     # run one (see run.py)

Instrumentation: ADK's own tracer (`gcp.vertex.agent`) and GenAI log events (`opentelemetry._logs`), with plain
OpenTelemetry SDK providers (a TracerProvider with a BatchSpanProcessor + OTLPSpanExporter, a LoggerProvider
with a BatchLogRecordProcessor + OTLPLogExporter) installed globally before ADK is imported. No
`google.adk.telemetry.setup` helpers and no Cloud exporters. The mode sets ADK's telemetry env vars
(`ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN`, `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`,
`ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS`).

Model: in the `gemini*` modes ADK's own `Gemini(model=<CORPUS_MODEL>, base_url=<the simulated model's root URL>)`
(google-genai speaking the Gemini API to the simulated model's Gemini route, as ADK speaks to Gemini); else
ADK's `LiteLlm(model="openai/<CORPUS_MODEL>", api_base=OPENAI_BASE_URL, api_key=...)` (litellm speaks the
OpenAI Chat Completions API to the simulated model; not streamed).

Tool errors: `get_weather` raises `ValueError` as `_tools` says; a raising ADK tool aborts the run, so the agent
has an `on_tool_error_callback` (ADK's own hook) that answers the call with `{"error": str(error)}`, the
function response the model then sees.

Handoff: ADK's sub-agent mechanism: `triage_agent` has `sub_agents=[billing_agent]`, ADK offers it the
`transfer_to_agent` tool, and billing_agent (tool issue_refund) continues the same invocation. The scenario's
scripted hand-off call carries no arguments while `transfer_to_agent` requires `agent_name`, so triage's
`before_tool_callback` fills in `agent_name="billing_agent"` (in place, the call then runs ADK's own tool).
ADK then shows billing_agent triage's call and its result as user-role "For context: [triage_agent] called tool
..." messages; the scripted model counts assistant messages since the last user message and would hand off
again, so billing_agent's `before_model_callback` puts triage's own events (the transfer function call, role
model, and its function response) back in place of those relayed messages before each of its model calls.

Every user turn of a scenario runs in one ADK session (InMemoryRunner, same user and session id).
"""

import asyncio
import os
from typing import Any

from corpus import INSTRUCTIONS, described, get_time, get_weather, issue_refund, log, main, otel, turns

MODES = {
    # ADK's defaults: schema v2 (OTel GenAI semconv aligned, experimental GenAI semconv), content env unset
    "default": {},
    # schema v2 with GenAI content on spans and in log events
    "span_and_event": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT"},
    # the legacy ADK telemetry format (schema v1: call_llm spans, gcp.vertex.agent.* content), content on by default
    "legacy": {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"},
    # the legacy format with ADK's span-content knob off
    "legacy_no_content": {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1", "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false"},
    # OpenInference's ADK instrumentor (`openinference-instrumentation-google-adk`, Arize Phoenix's) on ADK's defaults
    "openinference": {"CORPUS_INSTRUMENTATION": "openinference"},
    # the same on ADK's legacy telemetry (schema v1: a call_llm span per model call, which the instrumentor expects)
    "openinference_legacy": {"CORPUS_INSTRUMENTATION": "openinference", "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"},
    # ADK's own Gemini model (google-genai against the simulated model's Gemini route), what most ADK agents run:
    # on ADK's defaults, with content on spans and in log events, and on the legacy telemetry
    "gemini": {"CORPUS_MODEL_API": "gemini"},
    "gemini_span_and_event": {
        "CORPUS_MODEL_API": "gemini",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT",
    },
    "gemini_legacy": {"CORPUS_MODEL_API": "gemini", "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"},
}


def record(scenario_name: str) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: no fetch of litellm's price list
    with otel(logs=True) as providers:  # installed globally before ADK is imported
        if os.environ.get("CORPUS_INSTRUMENTATION") == "openinference":
            from openinference.instrumentation.google_adk import GoogleADKInstrumentor

            GoogleADKInstrumentor().instrument(tracer_provider=providers.tracer)
        asyncio.run(run(scenario_name, build(scenario_name)))


def build(scenario_name: str) -> Any:
    from google.adk.agents import LlmAgent

    if os.environ.get("CORPUS_MODEL_API") == "gemini":
        from google.adk.models.google_llm import Gemini

        os.environ.setdefault("GOOGLE_API_KEY", "sim")
        root = os.environ["OPENAI_BASE_URL"].removesuffix("/").removesuffix("/v1")  # run.py's simulated model
        model: Any = Gemini(model=os.environ["CORPUS_MODEL"], base_url=root)
    else:
        from google.adk.models.lite_llm import LiteLlm

        model = LiteLlm(
            model="openai/" + os.environ["CORPUS_MODEL"],
            api_base=os.environ["OPENAI_BASE_URL"],
            api_key=os.environ.get("OPENAI_API_KEY", "sim"),
        )

    def on_tool_error(tool, args, tool_context, error):
        return {"error": str(error)}

    def name_the_sub_agent(tool, args, tool_context):
        # the scripted hand-off call has no arguments; ADK's transfer_to_agent requires agent_name
        if tool.name == "transfer_to_agent" and not args.get("agent_name"):
            args["agent_name"] = "billing_agent"
        return None

    def unquote_the_transfer(callback_context, llm_request):
        # ADK relays triage's transfer call and its result to billing_agent as user-role "For context: ..."
        # messages; the scripted model counts assistant messages since the last user message, so it would
        # answer the hand-off again. Put triage's own events back in their place instead: the transfer call
        # (role model) and its function response, as one agent's conversation would have them.
        triage = [
            event.content
            for event in callback_context.session.events
            if event.author == "triage_agent"
            and event.invocation_id == callback_context.invocation_id
            and event.content
            and any(part.function_call or part.function_response for part in event.content.parts or [])
        ]
        contents, replaced = [], False
        for content in llm_request.contents:
            first = (content.parts or [None])[0]
            if content.role == "user" and first is not None and (first.text or "").startswith("For context:"):
                if not replaced:
                    contents.extend(triage)
                    replaced = True
                continue
            contents.append(content)
        llm_request.contents = contents
        return None

    def agent(name: str, description: str, **options: object) -> LlmAgent:
        return LlmAgent(name=name, model=model, description=description, instruction=INSTRUCTIONS[name], **options)

    if scenario_name == "handoff":
        billing_agent = agent(
            "billing_agent",
            "Handles billing questions and refunds.",
            tools=[described(issue_refund, resolved=True)],
            before_model_callback=unquote_the_transfer,
        )
        return agent(
            "triage_agent",
            "Routes the user to the right agent.",
            sub_agents=[billing_agent],
            before_tool_callback=name_the_sub_agent,
        )
    local_time = described(get_time, "Get the local time in a city.", resolved=True)
    return agent(
        "weather_agent",
        "Answers questions about the weather.",
        tools=[described(get_weather, resolved=True), local_time],
        on_tool_error_callback=on_tool_error,
    )


async def run(scenario_name: str, agent: Any) -> None:
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    runner = InMemoryRunner(agent=agent, app_name="corpus")
    session = await runner.session_service.create_session(app_name="corpus", user_id="user")
    for user in turns(scenario_name):
        message = types.Content(role="user", parts=[types.Part(text=user)])
        final = None
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
            if event.is_final_response() and event.content and event.content.parts:
                final = "".join(p.text or "" for p in event.content.parts)
        log(scenario_name, user, final)
    await runner.close()


if __name__ == "__main__":
    raise SystemExit(main(MODES, record))
