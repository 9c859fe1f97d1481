"""Ctrl-C (and SIGTERM, SIGHUP) that stops a DuckDB query.

DuckDB's Python client takes a SIGINT that arrives while it works: during a query it usually ends the query
with `RuntimeError("Query interrupted")`, but one that arrives while a statement is being prepared or
started is dropped, and the query then runs to its end (seen on DuckDB 2.0 in about one Ctrl-C in three
against a long `tracevals sql`). So every connection tracevals opens is made by `connect`, which keeps a weak
reference to it, and the command line's SIGINT handler (`installed`) interrupts every open one before raising
KeyboardInterrupt as Python's own handler does: the query stops wherever the signal fell.

SIGTERM (a process manager, CI cancelling a job, `timeout`, `kill`) and SIGHUP (the terminal closed) are taken
the same way: Python's default ends the process on the spot, so no `finally` ran and a command left its
temporary files behind (`ingest`'s rows waiting in TMPDIR, DuckDB's spill folder). Under `installed` they
unwind like Ctrl-C; `stopped_by` says which signal it was (the command line then exits 128 + the signal, 143
for SIGTERM, as a shell reports it).
"""

from __future__ import annotations

import contextlib
import signal
import weakref
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

from tracevals.model.signals import STOPPING, taken_here

if TYPE_CHECKING:
    import duckdb

_OPEN: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()


def connect(database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """`duckdb.connect(database)`, interrupted by Ctrl-C under `installed` (or `install`)."""
    import duckdb

    con = duckdb.connect(database)
    _OPEN.add(con)
    return con


def interrupt_all() -> None:
    """Interrupt the query each open connection runs (a closed one, or one running none, is left alone)."""
    for con in list(_OPEN):
        with contextlib.suppress(Exception):
            con.interrupt()


_STOPPING = [False]  # Ctrl-C came: `check` raises at the next checkpoint
_SIGNAL = [0]  # the signal `installed`'s handler last took (`model.signals.STOPPING`), until the next `installed`


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _STOPPING[0] = True
    _SIGNAL[0] = signum
    interrupt_all()
    raise KeyboardInterrupt


def stopped_by() -> int:
    """The signal that stopped the last `installed` block (0: none): SIGINT, SIGTERM or SIGHUP."""
    return _SIGNAL[0]


def _on_sigint_quietly(signum: int, frame: FrameType | None) -> None:
    _STOPPING[0] = True
    interrupt_all()


def check() -> None:
    """Raise KeyboardInterrupt if Ctrl-C came: a checkpoint between chunks of work. The handler's own
    KeyboardInterrupt can fall inside a callback from C (Polars, pyarrow) that drops it ("Exception ignored
    in ..."), and a worker process's handler raises none; both stop here."""
    if _STOPPING[0]:
        raise KeyboardInterrupt


def _settable(sig: int = signal.SIGINT) -> bool:
    """Whether this process may take `sig` here: on the main thread only (a signal handler cannot be set
    elsewhere), and not where it is ignored (`model.signals.taken_here`: SIGINT in a shell's background job,
    `nohup`'s SIGHUP)."""
    import threading

    return threading.current_thread() is threading.main_thread() and sig in taken_here()


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """While inside: SIGINT (and SIGTERM, SIGHUP: `model.signals.STOPPING`) interrupts every open connection, then
    raises KeyboardInterrupt; the handlers before are put back after, and a signal taken is forgotten (a
    long-lived process, a test runner, goes on; `stopped_by` still says which it was). A command that sets
    its own handlers inside (`collect`, `run`, `score`) keeps them. Each signal is judged on its own
    (`_settable`): one that is ignored stays ignored (a shell's background job ignores SIGINT, `nohup`
    SIGHUP), and the others still unwind the command."""
    _SIGNAL[0] = 0
    before = {sig: signal.signal(sig, _on_sigint) for sig in STOPPING if _settable(sig)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        _STOPPING[0] = False


def install() -> None:
    """For the rest of the process (a worker process of `tracevals score`, which Ctrl-C reaches with the whole
    process group): SIGINT interrupts every open connection and makes `check` raise; it raises nothing
    itself, so nothing is printed from inside a library's callback. The command's own process says "Aborted!"."""
    if _settable():
        signal.signal(signal.SIGINT, _on_sigint_quietly)
