"""Model-call spans for the `openai` client's Responses API (`client.responses.create` / `.parse`).

Patched by `OpenAIInstrumentor` (see `openai_chat.py`). The Responses API has no finish reason; the
span's `gen_ai.response.finish_reasons` is derived from the response so that it reads like the
other providers': `tool_calls` when the output asks for function calls, `stop` when it completed,
`length` / `content_filter` for an incomplete response, else the status (`failed`, `cancelled`).
A stream's span is completed from its `response.completed` (or `.incomplete` / `.failed`) event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracevals.instrumentation.content import capture_enabled
from tracevals.instrumentation.genai_messages import (
    get,
    responses_inputs,
    responses_outputs,
    token_count,
    with_instructions,
)
from tracevals.instrumentation.model_span import ModelResult
from tracevals.instrumentation.model_wrappers import ModelApi

PROVIDER = "openai"
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}
_FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


def response_inputs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    return with_instructions(responses_inputs(kwargs.get("input")), kwargs.get("instructions"))


def finish_reason(response: Any, calls: bool) -> str:
    status = str(get(response, "status") or "completed")
    if status == "completed":
        return "tool_calls" if calls else "stop"
    if status == "incomplete":
        reason = str(get(get(response, "incomplete_details"), "reason") or "incomplete")
        return _INCOMPLETE.get(reason, reason)
    return status


def response_result(response: Any) -> ModelResult:
    result = ModelResult(response_model=get(response, "model"), response_id=get(response, "id"))
    usage = get(response, "usage")
    if usage is not None:
        result.input_tokens = token_count(get(usage, "input_tokens"))
        result.output_tokens = token_count(get(usage, "output_tokens"))
        result.cache_read_tokens = token_count(get(get(usage, "input_tokens_details"), "cached_tokens"))
    output = list(get(response, "output") or [])
    for item in output:
        if get(item, "type") == "function_call":
            result.tool_call_ids.append(str(get(item, "call_id")))
            result.tool_call_names.append(str(get(item, "name")))
    reason = finish_reason(response, bool(result.tool_call_ids))
    result.finish_reasons = [reason]
    if capture_enabled():
        result.output_messages = responses_outputs(output, reason)
    return result


class ResponseEvents:
    """Accumulates the typed events of a streamed Responses call."""

    def __init__(self) -> None:
        self.final: Any = None
        self.started: Any = None
        self.items: list[Any] = []

    def add(self, event: Any) -> None:
        kind = get(event, "type")
        if kind in _FINAL_EVENTS:
            self.final = get(event, "response")
        elif kind == "response.created":
            self.started = get(event, "response")
        elif kind == "response.output_item.done":
            self.items.append(get(event, "item"))

    def result(self) -> ModelResult:
        if self.final is not None:
            return response_result(self.final)
        # Cut short before the final event: what the finished items and the first event said.
        partial = {"id": get(self.started, "id"), "model": get(self.started, "model"), "output": self.items}
        result = response_result({**partial, "status": "incomplete"})
        result.finish_reasons = []
        return result


def _stream_types() -> tuple[type, ...]:
    import openai

    return (openai.Stream, openai.AsyncStream)


RESPONSES = ModelApi(PROVIDER, response_inputs, response_result, ResponseEvents, _stream_types)
