"""Switchable processors: what the global tracer and logger providers hold, so `instrument()` can run again.

The global providers can be set only once per process, so tracevals installs one switchable processor
into each, and every later `instrument()` call replaces what that processor delegates to.
"""

from __future__ import annotations

import threading
from typing import Any, Generic, TypeVar

from opentelemetry.sdk._logs import LogRecordProcessor, ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace import Span as SdkSpan

P = TypeVar("P", SpanProcessor, LogRecordProcessor)


class _Switch(Generic[P]):
    """Delegates to whatever the latest `instrument()` call configured."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.delegates: tuple[P, ...] = ()

    def swap(self, delegates: tuple[P, ...]) -> tuple[P, ...]:
        with self._lock:
            old, self.delegates = self.delegates, delegates
        return old

    def release(self, mine: tuple[P, ...]) -> None:
        """Detach `mine`, unless a later `instrument()` call has replaced them already."""
        with self._lock:
            if self.delegates == mine:
                self.delegates = ()

    def shutdown(self) -> None:
        for p in self.swap(()):
            p.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all(p.force_flush(timeout_millis) for p in self.delegates)


class SwitchableSpanProcessor(_Switch[SpanProcessor], SpanProcessor):
    def on_start(self, span: SdkSpan, parent_context: Any = None) -> None:
        for p in self.delegates:
            p.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        for p in self.delegates:
            p.on_end(span)


class SwitchableLogProcessor(_Switch[LogRecordProcessor], LogRecordProcessor):
    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        for p in self.delegates:
            p.on_emit(log_record)
