"""Model-call spans for the `openai` client's chat completions, in the OTel GenAI conventions.

A `BaseInstrumentor` (found by `opentelemetry-instrument` through the `opentelemetry_instrumentor`
entry point) that patches `Completions.create` and `AsyncCompletions.create` with wrapt. Written
here rather than reusing `opentelemetry-instrumentation-openai-v2`, whose current release fails to
import beside `opentelemetry-util-genai` (see the field notes); streaming responses are traced
without usage for now.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping
from typing import Any

import wrapt
from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from tracevals import attributes as tv
from tracevals.instrumentation.content import capture_enabled

_log = logging.getLogger(__name__)
_MODULE = "openai.resources.chat.completions"
_TRACER = "tracevals.instrumentation.openai"

_REQUEST_ATTRS = {
    "temperature": gen_ai.GEN_AI_REQUEST_TEMPERATURE,
    "top_p": gen_ai.GEN_AI_REQUEST_TOP_P,
    "max_tokens": gen_ai.GEN_AI_REQUEST_MAX_TOKENS,
    "max_completion_tokens": gen_ai.GEN_AI_REQUEST_MAX_TOKENS,
    "seed": gen_ai.GEN_AI_REQUEST_SEED,
    "frequency_penalty": gen_ai.GEN_AI_REQUEST_FREQUENCY_PENALTY,
    "presence_penalty": gen_ai.GEN_AI_REQUEST_PRESENCE_PENALTY,
}


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _start_span(kwargs: Mapping[str, Any]) -> Span:
    model = kwargs.get("model") or "unknown"
    span = trace.get_tracer(_TRACER).start_span(f"chat {model}", kind=SpanKind.CLIENT)
    try:
        span.set_attribute(gen_ai.GEN_AI_OPERATION_NAME, "chat")
        span.set_attribute(gen_ai.GEN_AI_PROVIDER_NAME, "openai")
        span.set_attribute(gen_ai.GEN_AI_REQUEST_MODEL, str(model))
        for key, attr in _REQUEST_ATTRS.items():
            value = kwargs.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                span.set_attribute(attr, value)
        if kwargs.get("stream"):
            span.set_attribute(gen_ai.GEN_AI_REQUEST_STREAM, True)
        if capture_enabled() and kwargs.get("messages") is not None:
            span.set_attribute(gen_ai.GEN_AI_INPUT_MESSAGES, json.dumps(list(kwargs["messages"]), default=str))
    except Exception:  # telemetry never raises into the host program
        _log.exception("tracevals: could not annotate chat span")
    return span


def _record_response(span: Span, response: Any) -> None:
    try:
        if _get(response, "model"):
            span.set_attribute(gen_ai.GEN_AI_RESPONSE_MODEL, str(_get(response, "model")))
        if _get(response, "id"):
            span.set_attribute(gen_ai.GEN_AI_RESPONSE_ID, str(_get(response, "id")))
        usage = _get(response, "usage")
        if usage is not None:
            for key, attr in (
                ("prompt_tokens", gen_ai.GEN_AI_USAGE_INPUT_TOKENS),
                ("completion_tokens", gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS),
            ):
                value = _get(usage, key)
                if isinstance(value, int):
                    span.set_attribute(attr, value)
        finish_reasons: list[str] = []
        call_ids: list[str] = []
        call_names: list[str] = []
        outputs: list[dict[str, Any]] = []
        for choice in _get(response, "choices") or []:
            reason = _get(choice, "finish_reason")
            if reason:
                finish_reasons.append(str(reason))
            message = _get(choice, "message")
            calls = _get(message, "tool_calls") or []
            for call in calls:
                call_ids.append(str(_get(call, "id")))
                call_names.append(str(_get(_get(call, "function"), "name")))
            if capture_enabled() and message is not None:
                outputs.append(_message_dict(message))
        if finish_reasons:
            span.set_attribute(gen_ai.GEN_AI_RESPONSE_FINISH_REASONS, finish_reasons)
        if call_ids:
            span.set_attribute(tv.REQUESTED_TOOL_CALL_IDS, call_ids)
            span.set_attribute(tv.REQUESTED_TOOL_CALL_NAMES, call_names)
        if outputs:
            span.set_attribute(gen_ai.GEN_AI_OUTPUT_MESSAGES, json.dumps(outputs, default=str))
    except Exception:
        _log.exception("tracevals: could not record chat response")


def _message_dict(message: Any) -> dict[str, Any]:
    if hasattr(message, "model_dump"):
        return dict(message.model_dump(exclude_none=True))
    return dict(message) if isinstance(message, Mapping) else {"content": str(message)}


def _record_error(span: Span, exc: BaseException) -> None:
    try:
        status = getattr(exc, "status_code", None)
        span.set_attribute("error.type", str(status) if status else type(exc).__qualname__)
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, str(exc)[:500]))
    except Exception:
        _log.exception("tracevals: could not record chat error")


def _sync_create(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    span = _start_span(kwargs)
    with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        try:
            response = wrapped(*args, **kwargs)
        except BaseException as exc:
            _record_error(span, exc)
            raise
        if not kwargs.get("stream"):
            _record_response(span, response)
        return response


async def _async_create(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    span = _start_span(kwargs)
    with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        try:
            response = await wrapped(*args, **kwargs)
        except BaseException as exc:
            _record_error(span, exc)
            raise
        if not kwargs.get("stream"):
            _record_response(span, response)
        return response


class OpenAIInstrumentor(BaseInstrumentor):
    """Traces `client.chat.completions.create` (sync and async) as GenAI `chat` spans."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("openai >= 1.0",)

    def _instrument(self, **kwargs: Any) -> None:
        wrapt.wrap_function_wrapper(_MODULE, "Completions.create", _sync_create)
        wrapt.wrap_function_wrapper(_MODULE, "AsyncCompletions.create", _async_create)

    def _uninstrument(self, **kwargs: Any) -> None:
        import openai.resources.chat.completions as module

        unwrap(module.Completions, "create")
        unwrap(module.AsyncCompletions, "create")
