"""The signals that stop a command, one definition for every place that handles them (`queries.interrupts`
for every command, `harness.stopping` for `run`, `collect`, `score --follow`, `ui`): Ctrl-C, SIGTERM (a
process manager, `timeout`, a CI job cancelled) and SIGHUP (the terminal closed, an ssh session dropped;
Windows has none). A signal the process ignores stays ignored: a shell's background job ignores SIGINT,
`nohup` SIGHUP, and a handler must not undo what they asked for."""

from __future__ import annotations

import signal

STOPPING = (signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else []))


def taken_here() -> tuple[int, ...]:
    """The stopping signals this process takes: those it does not ignore."""
    return tuple(s for s in STOPPING if signal.getsignal(s) is not signal.SIG_IGN)
