"""Model-call spans for the `openai` client: chat completions here, the Responses API beside it.

`OpenAIInstrumentor` is a `BaseInstrumentor` (a `patching.PatchingInstrumentor`, found by
`opentelemetry-instrument` through the `tracevals_openai` entry point) that patches, with wrapt,
`chat.completions.create` / `.parse` and `responses.create` / `.parse`, sync and async. The SDK's
`.stream()` helpers call `create`, so they are traced too. A streamed response keeps its span open
until the stream is consumed or closed (`streams.py`); usage is recorded when the stream carries it
(`stream_options={"include_usage": True}`: tracevals never changes the request to ask for it).

Written here rather than reusing `opentelemetry-instrumentation-openai-v2` (checked: 2.4b0): it does
not cover the Responses API, it records the requested tool-call ids only inside content events (so
with capture off, the default, a tool span could not be linked to its model request), it imports
only beside a matching `opentelemetry-util-genai` (it imports with 1.1b0; with 1.3b0 it fails, as the
field notes record), and it needs
`httpx`, which `openai` 3.x no longer installs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

from tracevals.instrumentation import openai_responses
from tracevals.instrumentation.content import capture_enabled
from tracevals.instrumentation.genai_messages import get, openai_chat_inputs, openai_chat_outputs, token_count
from tracevals.instrumentation.model_span import ModelResult
from tracevals.instrumentation.model_wrappers import ModelApi
from tracevals.instrumentation.patching import PatchingInstrumentor

PROVIDER = "openai"
_CHAT = "openai.resources.chat.completions.completions"
_RESPONSES = "openai.resources.responses.responses"


def chat_inputs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    return {gen_ai.GEN_AI_INPUT_MESSAGES: openai_chat_inputs(kwargs.get("messages"))}


def usage_of(result: ModelResult, usage: Any) -> None:
    if usage is None:
        return
    result.input_tokens = token_count(get(usage, "prompt_tokens"))
    result.output_tokens = token_count(get(usage, "completion_tokens"))
    result.cache_read_tokens = token_count(get(get(usage, "prompt_tokens_details"), "cached_tokens"))


def chat_result(response: Any) -> ModelResult:
    result = ModelResult(response_model=get(response, "model"), response_id=get(response, "id"))
    usage_of(result, get(response, "usage"))
    choices = list(get(response, "choices") or [])
    for choice in choices:
        if get(choice, "finish_reason"):
            result.finish_reasons.append(str(get(choice, "finish_reason")))
        for call in get(get(choice, "message"), "tool_calls") or []:
            result.tool_call_ids.append(str(get(call, "id")))
            result.tool_call_names.append(str(get(get(call, "function"), "name")))
    if capture_enabled():
        result.output_messages = openai_chat_outputs(choices)
    return result


class ChatChunks:
    """Accumulates `chat.completion.chunk` events into a `ModelResult`."""

    def __init__(self) -> None:
        self.partial = ModelResult()
        self.capture = capture_enabled()
        self.choices: dict[int, dict[str, Any]] = {}  # index -> {"text", "finish", "calls": {i: call}}

    def add(self, chunk: Any) -> None:
        self.partial.response_id = self.partial.response_id or get(chunk, "id")
        self.partial.response_model = self.partial.response_model or get(chunk, "model")
        usage_of(self.partial, get(chunk, "usage"))
        for choice in get(chunk, "choices") or []:
            state = self.choices.setdefault(get(choice, "index") or 0, {"text": [], "finish": None, "calls": {}})
            if get(choice, "finish_reason"):
                state["finish"] = str(get(choice, "finish_reason"))
            delta = get(choice, "delta")
            if self.capture and get(delta, "content"):
                state["text"].append(get(delta, "content"))
            for call in get(delta, "tool_calls") or []:
                slot = state["calls"].setdefault(get(call, "index") or 0, {"id": None, "name": None, "arguments": []})
                fn = get(call, "function")
                slot["id"] = slot["id"] or get(call, "id")
                slot["name"] = slot["name"] or get(fn, "name")
                if self.capture and get(fn, "arguments"):
                    slot["arguments"].append(get(fn, "arguments"))

    def result_choices(self) -> list[dict[str, Any]]:
        """The accumulated choices, shaped like a non-streamed response's."""
        out = []
        for index in sorted(self.choices):
            state = self.choices[index]
            calls = [state["calls"][i] for i in sorted(state["calls"])]
            message = {
                "content": "".join(state["text"]) or None,
                "tool_calls": [
                    {"id": c["id"], "function": {"name": c["name"], "arguments": "".join(c["arguments"])}}
                    for c in calls
                ],
            }
            out.append({"index": index, "finish_reason": state["finish"], "message": message})
        return out

    def result(self) -> ModelResult:
        result = self.partial
        choices = self.result_choices()
        result.finish_reasons = [c["finish_reason"] for c in choices if c["finish_reason"]]
        for choice in choices:
            for call in choice["message"]["tool_calls"]:
                result.tool_call_ids.append(str(call["id"]))
                result.tool_call_names.append(str(call["function"]["name"]))
        if self.capture:
            result.output_messages = openai_chat_outputs(choices)
        return result


def _stream_types() -> tuple[type, ...]:
    import openai

    return (openai.Stream, openai.AsyncStream)


_chat = ModelApi(PROVIDER, chat_inputs, chat_result, ChatChunks, _stream_types).wrappers("chat.completions")
_responses = openai_responses.RESPONSES.wrappers("responses")


class OpenAIInstrumentor(PatchingInstrumentor):
    """Traces the `openai` client's chat completions and Responses API as GenAI `chat` spans."""

    requires = ("openai >= 1.66",)
    patches = tuple(
        (module, f"{cls}.{method}", wrappers[cls.startswith("Async")])
        for module, classes, wrappers in (
            (_CHAT, ("Completions", "AsyncCompletions"), _chat),
            (_RESPONSES, ("Responses", "AsyncResponses"), _responses),
        )
        for cls in classes
        for method in ("create", "parse")
    )
