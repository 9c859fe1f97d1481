"""The span of one model call (`chat {model}`), shared by the OpenAI and Anthropic instrumentors.

A `ModelCall` starts the span with the request's attributes, and ends it exactly once: with a
`ModelResult` (from a response, or accumulated from a stream when it ends, is closed or is dropped)
or with the exception the client raised. Input content is taken when the call starts, because an
agent typically appends to the very list it passed as soon as the call returns, while a stream's
span ends later. Every annotation is guarded: a failure here is logged, never raised into the agent.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.trace import Span, SpanKind

from tracevals.instrumentation.clock import current as attempt_clock
from tracevals.instrumentation.content import MODEL_EVENT, capture_enabled, record_content, record_failure
from tracevals.instrumentation.context import current_session_id
from tracevals.instrumentation.genai_messages import get
from tracevals.model import attributes as tv
from tracevals.model.json_text import whole_text

_log = logging.getLogger(__name__)
_TRACER = "tracevals.instrumentation.models"

# Request parameters (any provider's name for them) -> GenAI attribute; numbers only.
REQUEST_NUMBERS = {
    "temperature": gen_ai.GEN_AI_REQUEST_TEMPERATURE,
    "top_p": gen_ai.GEN_AI_REQUEST_TOP_P,
    "top_k": gen_ai.GEN_AI_REQUEST_TOP_K,
    "max_tokens": gen_ai.GEN_AI_REQUEST_MAX_TOKENS,
    "max_completion_tokens": gen_ai.GEN_AI_REQUEST_MAX_TOKENS,
    "max_output_tokens": gen_ai.GEN_AI_REQUEST_MAX_TOKENS,
    "seed": gen_ai.GEN_AI_REQUEST_SEED,
    "frequency_penalty": gen_ai.GEN_AI_REQUEST_FREQUENCY_PENALTY,
    "presence_penalty": gen_ai.GEN_AI_REQUEST_PRESENCE_PENALTY,
}


@dataclass
class ModelResult:
    """What a response (or a whole stream) said, in provider-neutral terms."""

    response_model: str | None = None
    response_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    finish_reasons: list[str] = field(default_factory=list)
    tool_call_ids: list[str] = field(default_factory=list)
    tool_call_names: list[str] = field(default_factory=list)
    output_messages: list[dict[str, Any]] | None = None  # GenAI messages; only with content capture on


def request_attributes(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for key, attr in REQUEST_NUMBERS.items():
        value = kwargs.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[attr] = value
    stop = kwargs.get("stop") or kwargs.get("stop_sequences")
    if isinstance(stop, str):
        stop = [stop]
    if isinstance(stop, (list, tuple)) and all(isinstance(s, str) for s in stop):
        attrs[gen_ai.GEN_AI_REQUEST_STOP_SEQUENCES] = list(stop)
    if kwargs.get("stream") is True:
        attrs[gen_ai.GEN_AI_REQUEST_STREAM] = True
    system = system_instructions(kwargs)
    if system is not None:
        attrs[tv.REQUEST_SYSTEM_SHA256] = canonical_sha256(system)
    tools = kwargs.get("tools")
    if tools is not None and not _sentinel(tools):
        attrs[tv.REQUEST_TOOLS_SHA256] = canonical_sha256(tools)
    answered = answered_tool_call_ids(kwargs)
    if answered:
        attrs[tv.ANSWERED_TOOL_CALL_IDS] = answered
    return attrs


def answered_tool_call_ids(kwargs: Mapping[str, Any]) -> list[str]:
    """The ids of the tool calls whose results the request hands the model, in order: chat completions' `tool`
    messages (`tool_call_id`), the Responses API's `function_call_output` items (`call_id`), anthropic's
    `tool_result` blocks (`tool_use_id`). Ids are no content: recorded whatever the capture setting."""
    found: list[str] = []
    for key in ("messages", "input"):
        items = kwargs.get(key)
        if not isinstance(items, (list, tuple)):
            continue
        for item in items:
            if get(item, "role") == "tool":
                found.append(get(item, "tool_call_id"))
            elif str(get(item, "type") or "").endswith("_call_output"):
                found.append(get(item, "call_id"))
            blocks = get(item, "content")
            if isinstance(blocks, (list, tuple)):
                found.extend(get(b, "tool_use_id") for b in blocks if get(b, "type") == "tool_result")
    return [i for i in found if isinstance(i, str) and i]


def _sentinel(value: Any) -> bool:
    """The SDKs' "not given" markers (`openai.NOT_GIVEN` / `omit`, anthropic's too): as if absent."""
    return type(value).__name__ in ("NotGiven", "Omit")


def canonical(value: Any) -> Any:
    """`value` as plain JSON data: SDK (pydantic) objects dumped, the SDKs' "not given" markers dropped,
    tuples as lists; what is left that JSON has no type for is its `str()`."""
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items() if not _sentinel(v)}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value if not _sentinel(v)]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, type):  # a response_format / text_format class
        return f"{value.__module__}.{value.__qualname__}"
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return canonical(dump(mode="json"))
        except Exception:  # not a pydantic model after all
            pass
    return str(value)


def canonical_json(value: Any) -> str:
    """Keys sorted, no spaces: the same request is the same text, whichever order it was built in (every
    character one UTF-8 holds: `whole_text`)."""
    return whole_text(
        json.dumps(canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    )


def canonical_sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:16]


def system_instructions(kwargs: Mapping[str, Any]) -> Any:
    """The request's system instructions (None when it has none): anthropic's `system`, the Responses
    API's `instructions`, else chat completions' messages with role `system` or `developer`."""
    for key in ("system", "instructions"):
        value = kwargs.get(key)
        if value is not None and not _sentinel(value):
            return value
    messages = kwargs.get("messages")
    if not isinstance(messages, (list, tuple)):
        return None
    system = [m for m in messages if get(m, "role") in ("system", "developer")]
    return system or None


def error_type(exc: BaseException) -> str:
    """The HTTP status of an API error (low cardinality, as `error.type` asks), else the exception type."""
    status = getattr(exc, "status_code", None)
    return str(status) if isinstance(status, int) else type(exc).__qualname__


class ModelCall:
    """One model call's span, from request to response (or failure)."""

    def __init__(
        self,
        provider: str,
        kwargs: Mapping[str, Any],
        inputs: Callable[[Mapping[str, Any]], dict[str, Any]],
        operation: str = "chat",
    ) -> None:
        self._lock = threading.Lock()
        self._ended = False
        self._provider = provider
        self._operation = operation
        self._content: dict[str, Any] = {}
        model = str(kwargs.get("model") or "unknown")
        attrs: dict[str, Any] = {
            gen_ai.GEN_AI_OPERATION_NAME: operation,
            gen_ai.GEN_AI_PROVIDER_NAME: provider,
            gen_ai.GEN_AI_REQUEST_MODEL: model,
        }
        try:
            attrs.update(request_attributes(kwargs))
            session_id = current_session_id()
            if session_id is not None:
                attrs[gen_ai.GEN_AI_CONVERSATION_ID] = session_id
            if capture_enabled():
                self._content = inputs(kwargs)
        except Exception:  # telemetry never raises into the host program
            _log.exception("tracevals: could not annotate the %s call", provider)
        tracer = trace.get_tracer(_TRACER)
        self.span: Span = tracer.start_span(f"{operation} {model}", kind=SpanKind.CLIENT, attributes=attrs)
        self._started = time.monotonic()  # the call's duration advances the attempt's logical clock
        self._waited_ms: float | None = None  # a replayed call: the recorded call's duration

    def _claim(self) -> bool:
        with self._lock:
            if self._ended:
                return False
            self._ended = True
        clock = attempt_clock()
        if clock is not None:  # waiting on the model is waiting (see instrumentation/clock.py)
            elapsed = (time.monotonic() - self._started) * 1000
            clock.advance(elapsed if self._waited_ms is None else self._waited_ms)
        return True

    def waited(self, ms: float) -> None:
        """The call was answered from a recording that waited `ms` on the model: the logical clock
        advances by that when the call ends (see `interception.ModelInvocation.waited`)."""
        self._waited_ms = max(0.0, float(ms))

    def finish(self, result: ModelResult) -> None:
        """Record the response and end the span (only the first call counts)."""
        if not self._claim():
            return
        try:
            self._record(result)
        except Exception:
            _log.exception("tracevals: could not record the %s response", self._provider)
        self.span.end()

    def fail(self, exc: BaseException) -> None:
        """Record the client's exception and end the span (only the first call counts)."""
        if not self._claim():
            return
        try:
            message = record_failure(self.span, exc, error_type(exc))
            self._record_content(None, message)
        except Exception:
            _log.exception("tracevals: could not record the %s failure", self._provider)
        self.span.end()

    def _record(self, r: ModelResult) -> None:
        attrs: dict[str, Any] = {}
        for attr, value in (
            (gen_ai.GEN_AI_RESPONSE_MODEL, r.response_model),
            (gen_ai.GEN_AI_RESPONSE_ID, r.response_id),
            (gen_ai.GEN_AI_USAGE_INPUT_TOKENS, r.input_tokens),
            (gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS, r.output_tokens),
            (gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, r.cache_read_tokens),
            (gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS, r.cache_creation_tokens),
        ):
            if value is not None:
                attrs[attr] = value
        if r.finish_reasons:
            attrs[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] = list(r.finish_reasons)
        if r.tool_call_ids:  # ids and names are not content: always recorded, they link tool spans
            attrs[tv.REQUESTED_TOOL_CALL_IDS] = list(r.tool_call_ids)
            attrs[tv.REQUESTED_TOOL_CALL_NAMES] = list(r.tool_call_names)
        self.span.set_attributes(attrs)
        self._record_content(r.output_messages)

    def _record_content(self, outputs: list[dict[str, Any]] | None, error: str | None = None) -> None:
        if not capture_enabled():
            return
        values = dict(self._content)
        if outputs is not None:
            values[gen_ai.GEN_AI_OUTPUT_MESSAGES] = outputs
        identity = {gen_ai.GEN_AI_OPERATION_NAME: self._operation, gen_ai.GEN_AI_PROVIDER_NAME: self._provider}
        record_content(self.span, values, MODEL_EVENT, error, **identity)
