"""An attempt's logical clock: time as the agent spent it waiting, not as fast the machine ran.

A harness attempt runs under an `AttemptClock` (`attempt_clock()`). It advances by the sleeps the agent
asks for (`time.sleep`, `asyncio.sleep`: wrapped once, counted only inside an attempt) and by the
duration of each of its model calls (a model round trip is the wait an LLM agent has between two
decisions). It does not advance while Python code merely runs, so a loaded machine, the interpreter's
lock or other attempts in flight never make a retry look patient: two calls made back to back are 0 ms
apart, however long the machine took between them. Tool spans record it (`tracevals.clock.start_ms`,
`.end_ms`), the injected rate limits throttle by it, and `retry_discipline` measures backoff with it
when both calls have it, so a seeded run gets the same verdicts on any machine. Outside an attempt
nothing is recorded and the wall clock is used, as production traffic is.

A sleep imported as `from time import sleep` before tracevals wrapped it is not seen; call `time.sleep`.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import wrapt

_current: contextvars.ContextVar[AttemptClock | None] = contextvars.ContextVar("tracevals_attempt_clock", default=None)
_hooked = False
_lock = threading.Lock()


class AttemptClock:
    """Logical milliseconds since the attempt started (see the module docstring)."""

    def __init__(self) -> None:
        self.ms = 0.0
        self._lock = threading.Lock()  # an async agent's tools may run in worker threads

    def advance(self, ms: float) -> None:
        if ms > 0:
            with self._lock:
                self.ms += ms


def current() -> AttemptClock | None:
    return _current.get()


@contextmanager
def attempt_clock() -> Iterator[AttemptClock]:
    """Run the block under a fresh logical clock (the harness wraps each attempt in one)."""
    _install_sleep_hooks()
    clock = AttemptClock()
    token = _current.set(clock)
    try:
        yield clock
    finally:
        _current.reset(token)


def now_s() -> float:
    """The attempt's logical time in seconds, else the monotonic wall clock (for fault throttling)."""
    clock = _current.get()
    return clock.ms / 1000 if clock is not None else time.monotonic()


def _sleep(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    clock = _current.get()
    if clock is not None and args:
        clock.advance(float(args[0]) * 1000)
    return wrapped(*args, **kwargs)


def _install_sleep_hooks() -> None:
    global _hooked
    with _lock:
        if _hooked:
            return
        wrapt.wrap_function_wrapper(time, "sleep", _sleep)
        wrapt.wrap_function_wrapper(asyncio, "sleep", _sleep)  # counted when called, as the wait is asked for
        _hooked = True
