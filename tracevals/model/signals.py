"""The signals that stop a command, one definition for every place that handles them (`queries.interrupts`
for every command, `harness.stopping` for `run`, `collect`, `score --follow`, `ui`): Ctrl-C, SIGTERM (a
process manager, `timeout`, a CI job cancelled) and SIGHUP (the terminal closed, an ssh session dropped;
Windows has none). A signal the process ignores stays ignored: a shell's background job ignores SIGINT,
`nohup` SIGHUP, and a handler must not undo what they asked for.

A command that makes something it must remove (a temporary folder, a file written beside its target) makes
it with the stop held off (`held_off`), so that the stop cannot land between the making and the `try` that
removes it: CI saw `ingest` stopped by SIGHUP right after `mkdtemp` made its folder, which stayed."""

from __future__ import annotations

import contextlib
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

STOPPING = (signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else []))


def taken_here() -> tuple[int, ...]:
    """The stopping signals this process takes: those it does not ignore."""
    return tuple(s for s in STOPPING if signal.getsignal(s) is not signal.SIG_IGN)


@contextlib.contextmanager
def held_off() -> Iterator[Callable[[], None]]:
    """Within the block a stopping signal is noted, not acted on; the callable it yields (`release`) puts the
    handlers back and acts on the noted ones there and then, as their handlers would have (Ctrl-C's
    KeyboardInterrupt raised from `release`). Call it inside the `try` that undoes what the block made; the
    block's end releases too. Outside the main thread (where no handler runs) nothing is held."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    noted: list[int] = []

    def note(signum: int, _frame: FrameType | None) -> None:
        noted.append(signum)

    # a handler set outside Python (getsignal: None) could not be put back: that signal is left as it is
    previous = {s: signal.signal(s, note) for s in taken_here() if signal.getsignal(s) is not None}

    def release() -> None:
        while previous:
            s, handler = previous.popitem()
            signal.signal(s, handler)
        if not noted:
            return
        first = noted[0]  # one stop: the first signal's (a second one while held adds nothing)
        noted.clear()
        handler = signal.getsignal(first)
        if callable(handler):
            handler(first, None)
        else:  # the default: what the signal does to a process that did not take it
            signal.raise_signal(first)

    try:
        yield release
    finally:
        release()


@contextlib.contextmanager
def temporary_folder(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """`tempfile.TemporaryDirectory`, removed at the block's end whatever stops it, a signal at any moment
    included: a stop that falls as the folder is made takes effect once its removal is certain."""
    with held_off() as release:
        folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        try:
            release()
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
