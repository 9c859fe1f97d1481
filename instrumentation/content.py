"""Whether message content (prompts, completions, tool arguments and results) may be recorded.

Content capture is opt-in, as the OTel GenAI conventions ask: it is on only when the user says so,
through `tracevals.instrument(capture_content=True)` or the standard environment variable
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (`true`, `span_only`, `span_and_event`;
`event_only` is accepted and, until log-record output exists, treated as `span_only`).
"""

from __future__ import annotations

import json
import os
from typing import Any

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_ON = {"true", "1", "yes", "span_only", "span_and_event", "event_only"}

_override: bool | None = None


def set_capture(enabled: bool | None) -> None:
    """Force content capture on or off; None returns control to the environment variable."""
    global _override
    _override = enabled


def capture_enabled() -> bool:
    if _override is not None:
        return _override
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in _ON


def to_json(value: Any) -> str:
    """Serialise a tool argument or result for a span attribute (JSON, falling back to `str`)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
