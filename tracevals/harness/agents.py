"""Loading the agent under test from a `module:function` (or `file.py:function`) reference."""

from __future__ import annotations

from typing import cast

from tracevals.harness.attempts import AgentFn
from tracevals.model.callables import CallableError, import_reference
from tracevals.model.errors import UserError


class AgentLoadError(UserError):
    """The `module:function` reference cannot be loaded; the message says why and how to fix it."""


def load_agent(reference: str) -> AgentFn:
    """`package.module:function` or `path/to/file.py:function` -> the function (`model.callables`: the one
    loader of references; the current directory is importable, like `python -m`)."""
    try:
        agent = import_reference(reference)
    except CallableError as exc:
        raise AgentLoadError(f"--agent {reference}: {exc}") from None
    return cast(AgentFn, agent)
