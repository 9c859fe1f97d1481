"""The one base of every error a user can cause or fix: a bad file, a bad option, an unreachable lake.

A `UserError`'s message is one line that says what is wrong, where, and how to fix it. The CLI prints it
as such (`tracevals.cli.LazyGroup.invoke`: "Error: <message>", exit code 1, never a traceback); library
callers catch `UserError` to tell a user's mistake from a bug. Every stage's own error class (a task file's,
a lake's, a scoring config's ...) derives from it, so a new command needs no list of exceptions to catch.
"""

from __future__ import annotations


class UserError(Exception):
    """Something the user can fix; `str(error)` is one line saying what, where and how."""
