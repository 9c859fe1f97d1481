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
from typing import Any

from corpus import (
    RESPONSES,
    SCHEMAS,
    TOOLS,
    WITHOUT_HANDOFF,
    log,
    main,
    on_responses_api,
    otel,
    sent_back,
    tool_result,
    turns,
)

_LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
# The loop's other ways to call the model, as modes of the recorders that wrap it: the Responses API
# (`run_responses`), and its chat calls streamed (`_streamed`)
VARIANTS: dict[str, dict[str, str]] = {"responses": RESPONSES, "stream": {"CORPUS_STREAM": "1"}}
MODES: dict[str, dict[str, str]] = {
    "span_only": {**_LATEST, _CAPTURE: "span_only"},
    "event_only": {**_LATEST, _CAPTURE: "event_only"},
    "span_and_event": {**_LATEST, _CAPTURE: "span_and_event"},
    "no_content": {**_LATEST, _CAPTURE: "no_content"},
    "legacy_true": {_CAPTURE: "true"},
    "legacy_no_content": {_CAPTURE: "false"},
    "stream_span_only": {**_LATEST, _CAPTURE: "span_only", **VARIANTS["stream"]},
}
TOOL_SCHEMAS = [SCHEMAS["get_weather"], SCHEMAS["get_time"]]
SYSTEM = "You are a weather assistant. Use the tools for weather and time."


def run_scenario(scenario: str, tracer: Any, client: Any = None) -> None:
    """The loop, with the plain `openai` client, or `client` (anything with `chat.completions.create`); its calls
    streamed with CORPUS_STREAM=1; on the Responses API with CORPUS_API=responses (`run_responses`)."""
    if on_responses_api():
        run_responses(scenario, tracer)
        return
    if client is None:
        from openai import OpenAI

        client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim"))
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for index, user in enumerate(turns(scenario)):
        messages.append({"role": "user", "content": user})
        with tracer.start_as_current_span("turn", attributes={"corpus.turn": index}):
            for _ in range(8):
                if os.environ.get("CORPUS_STREAM") == "1":
                    content, calls = _streamed(client, messages)
                else:
                    response = client.chat.completions.create(
                        model=os.environ["CORPUS_MODEL"], messages=messages, tools=TOOL_SCHEMAS
                    )
                    message = response.choices[0].message
                    content = message.content
                    calls = [
                        {"id": c.id, "type": "function",
                         "function": {"name": c.function.name, "arguments": c.function.arguments}}
                        for c in message.tool_calls or []
                    ]  # fmt: skip
                entry: dict[str, Any] = {"role": "assistant", "content": content}
                if calls:
                    entry["tool_calls"] = calls
                messages.append(entry)
                if not calls:
                    break
                for call in calls:
                    arguments = json.loads(call["function"]["arguments"] or "{}")
                    result = tool_result(TOOLS[call["function"]["name"]], arguments)
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        log(scenario, user, messages[-1]["content"])


def _streamed(client: Any, messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """One streamed call (CORPUS_STREAM=1, usage in the last chunk), its deltas put together as a chat UI's loop
    does: the text, and each tool call by its `index`."""
    stream = client.chat.completions.create(
        model=os.environ["CORPUS_MODEL"], messages=messages, tools=TOOL_SCHEMAS, stream=True,
        stream_options={"include_usage": True},
    )  # fmt: skip
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
            for part in delta.tool_calls or []:
                call = calls.setdefault(part.index, {"id": "", "type": "function",
                                                     "function": {"name": "", "arguments": ""}})  # fmt: skip
                call["id"] = part.id or call["id"]
                if part.function is not None:
                    call["function"]["name"] += part.function.name or ""
                    call["function"]["arguments"] += part.function.arguments or ""
    return ("".join(text) or None), [calls[i] for i in sorted(calls)]


RESPONSE_TOOLS = [{"type": "function", **schema["function"]} for schema in TOOL_SCHEMAS]


def run_responses(scenario: str, tracer: Any) -> None:
    """The same loop on the Responses API (`client.responses.create`): the system prompt as `instructions`, the
    history as `input` items, the model's output items sent back as they came (its text, then its
    `function_call`s) with a `function_call_output` for each call; one `turn` span per user turn."""
    from openai import OpenAI

    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ.get("OPENAI_API_KEY", "sim"))
    history: list[Any] = []
    for index, user in enumerate(turns(scenario)):
        history.append({"role": "user", "content": user})
        answer = ""
        with tracer.start_as_current_span("turn", attributes={"corpus.turn": index}):
            for _ in range(8):
                response = client.responses.create(
                    model=os.environ["CORPUS_MODEL"], instructions=SYSTEM, input=history, tools=RESPONSE_TOOLS
                )
                kept, calls = sent_back(response)
                history.extend(kept)
                if not calls:
                    answer = response.output_text
                    break
                for call in calls:
                    output = tool_result(TOOLS[call.name], json.loads(call.arguments or "{}"))
                    history.append({"type": "function_call_output", "call_id": call.call_id, "output": output})
        log(scenario, user, answer)


def record(scenario: str) -> None:
    with otel(logs=True) as providers:
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=providers.tracer, logger_provider=providers.logger)
        run_scenario(scenario, providers.tracer.get_tracer("corpus.openai_v2.loop"))


if __name__ == "__main__":
    raise SystemExit(main(MODES, record, WITHOUT_HANDOFF))
