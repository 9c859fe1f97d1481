"""Stopping a run on a signal: SIGINT (Ctrl-C), SIGTERM (CI cancelling a job, `kill`, a container stopping) or
SIGHUP (the terminal closed): `tracevals.model.signals`.

The first signal stops launching attempts at once: none starts after it. The attempts in flight are
finished, not cancelled (an agent is arbitrary code that may be half-way through an irreversible tool call,
and a thread cannot be interrupted safely), and each is flushed to the lake as it finishes, so that a resumed
run (the same `--run-id`) skips them. A second signal aborts those in flight: the process exits at once, and
the resumed run repeats them (their spans never ended, so they are not done). The exit status is the
shell's for a signal: 128 + its number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from tracevals.model.signals import taken_here


class StopRequest:
    """What signals asked of a run so far; `run_cases` reads `requested` before launching each attempt and
    keeps `in_flight` up to date for the messages."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None
        self.in_flight = 0
        self.reason = ""  # why the run stopped when no signal asked (a lost lease)

    @property
    def requested(self) -> bool:
        return self.event.is_set()

    def stop(self, reason: str) -> None:
        """Stop launching attempts for another reason than a signal."""
        if not self.requested:
            self.reason = reason
            self.event.set()

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum is not None else "stop"

    @property
    def exit_code(self) -> int:
        return 128 + self.signum if self.signum is not None else 1


@contextmanager
def stop_on_signals(
    on_first: Callable[[StopRequest], None],
    on_second: Callable[[StopRequest], None],
    request: StopRequest | None = None,
) -> Iterator[StopRequest]:
    """Within the block, SIGINT, SIGTERM and SIGHUP (those not ignored) set the `StopRequest` it yields
    (`request`, or a new one) and call `on_first` (say what happens now), then, for a second signal,
    `on_second` (which aborts: it does not return). Outside the main thread (where Python delivers signals)
    nothing is installed."""
    request = request or StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def handle(signum: int, _frame: FrameType | None) -> None:
        if request.signum is None:
            request.signum = signum
            request.event.set()
            on_first(request)
        else:
            on_second(request)

    previous = {s: signal.signal(s, handle) for s in taken_here()}  # SIGHUP too; an ignored one stays so
    try:
        yield request
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
