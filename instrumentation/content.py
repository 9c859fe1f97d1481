"""Whether message content (prompts, completions, tool arguments and results) is recorded, and where.

Content capture is opt-in, as the OTel GenAI conventions ask. The standard variable
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` picks the mode, and
`tracevals.instrument(capture_content=...)` or `set_capture()` override it:

- unset, `false`, `no_content`: nothing (the default);
- `span_only`, or the legacy `true`: content as span attributes;
- `event_only`: content as OTel log records (`gen_ai.client.inference.operation.details` for model
  calls, `tracevals.tool.call.details` for tools), parented to the span; nothing on spans;
- `span_and_event`: both.

Everything recorded passes through `redact.current_redactor()` first: secrets are always removed.
Exception messages count as content too (a tool's error often quotes its arguments): with capture
off, a failure is recorded by its type and frames only.
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Mapping
from enum import Enum
from typing import Any

from opentelemetry import _logs, trace
from opentelemetry.trace import Span, Status, StatusCode

from tracevals import env
from tracevals.instrumentation.redact import current_redactor
from tracevals.model import attributes as tv
from tracevals.model.json_text import whole_text

CAPTURE_ENV = env.CAPTURE_MESSAGE_CONTENT
MODEL_EVENT = "gen_ai.client.inference.operation.details"
TOOL_EVENT = tv.TOOL_CALL_EVENT
_LOGGER = "tracevals.instrumentation"


class CaptureMode(str, Enum):
    NO_CONTENT = "no_content"
    SPAN_ONLY = "span_only"
    EVENT_ONLY = "event_only"
    SPAN_AND_EVENT = "span_and_event"

    @property
    def on_spans(self) -> bool:
        return self in (CaptureMode.SPAN_ONLY, CaptureMode.SPAN_AND_EVENT)

    @property
    def on_events(self) -> bool:
        return self in (CaptureMode.EVENT_ONLY, CaptureMode.SPAN_AND_EVENT)


_ALIASES = {"true": CaptureMode.SPAN_ONLY, "1": CaptureMode.SPAN_ONLY, "yes": CaptureMode.SPAN_ONLY}

_override: CaptureMode | None = None
_env_cache: tuple[str, CaptureMode] = ("", CaptureMode.NO_CONTENT)


def parse_mode(value: bool | str | CaptureMode) -> CaptureMode:
    """`True` is span_only, `False` no_content; strings as the environment variable takes them."""
    if isinstance(value, CaptureMode):
        return value
    if isinstance(value, bool):
        return CaptureMode.SPAN_ONLY if value else CaptureMode.NO_CONTENT
    text = value.strip().lower()
    if text in _ALIASES:
        return _ALIASES[text]
    try:
        return CaptureMode(text)
    except ValueError:
        return CaptureMode.NO_CONTENT  # an unknown value never turns capture on


def set_capture(mode: bool | str | CaptureMode | None) -> None:
    """Force a capture mode; None returns control to the environment variable."""
    global _override
    _override = None if mode is None else parse_mode(mode)


def capture_mode() -> CaptureMode:
    global _env_cache
    if _override is not None:
        return _override
    raw = os.environ.get(CAPTURE_ENV, "")
    if raw != _env_cache[0]:  # parse once per distinct value: this runs on every model and tool call
        _env_cache = (raw, parse_mode(raw))
    return _env_cache[1]


def capture_enabled() -> bool:
    return capture_mode() is not CaptureMode.NO_CONTENT


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)  # pydantic models (SDK objects, MCP results)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    return str(value)


def to_json(value: Any) -> str:
    """Serialise a tool argument or result for a span attribute (JSON, falling back to `str`), every character
    one UTF-8 can hold (`whole_text`: a file name `os.listdir` gave in `surrogateescape` made the span's
    annotation fail, its arguments and result lost)."""
    if isinstance(value, str):
        return whole_text(value)
    try:
        return whole_text(json.dumps(value, sort_keys=True, ensure_ascii=False, default=_plain))
    except (TypeError, ValueError):
        return whole_text(str(value))


def record_content(
    span: Span,
    values: Mapping[str, Any],
    event_name: str,
    error: str | None = None,
    **event_attributes: Any,
) -> None:
    """Record content `values` (attribute key -> JSON-able value) where the capture mode says, redacted.

    `error` is the failure's message from `record_failure()`, which the span already carries when
    content goes on spans, so it is added to the event only. Callers check `capture_enabled()`
    first, so that nothing is even serialised with capture off.
    """
    mode = capture_mode()
    if mode is CaptureMode.NO_CONTENT or not values:
        return
    redactor = current_redactor()
    redacted = {key: redactor.redact(to_json(value)) for key, value in values.items() if value is not None}
    if mode.on_spans:
        span.set_attributes(redacted)
    if mode.on_events:
        attributes = {**event_attributes, **redacted}
        if error is not None:
            attributes["exception.message"] = error
        # The global LoggerProvider: tracevals.instrument() installs one; a no-op one drops the record.
        _logs.get_logger(_LOGGER).emit(
            event_name=event_name, attributes=attributes, context=trace.set_span_in_context(span)
        )


def record_failure(span: Span, exc: BaseException, error_type: str) -> str | None:
    """`error.type`, ERROR status and the exception event, its message only when content is captured.

    Returns the (redacted) message when content is captured, for the call's content event.
    """
    span.set_attribute("error.type", error_type)
    mode = capture_mode()
    message = current_redactor().redact(str(exc))[:2000] if mode is not CaptureMode.NO_CONTENT else None
    if message is not None and mode.on_spans:
        stack = current_redactor().redact("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        span.add_event(
            "exception",
            {"exception.type": type(exc).__qualname__, "exception.message": message, "exception.stacktrace": stack},
        )
        span.set_status(Status(StatusCode.ERROR, message[:500]))
        return message
    frames = "".join(traceback.format_tb(exc.__traceback__))  # where it failed, without what it said
    span.add_event("exception", {"exception.type": type(exc).__qualname__, "exception.stacktrace": frames})
    span.set_status(Status(StatusCode.ERROR, error_type))
    return message
