"""Loading the agent under test from a `module:function` reference."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, cast

from tracevals.harness.attempts import AgentFn
from tracevals.model.errors import UserError


class AgentLoadError(UserError):
    """The `module:function` reference cannot be loaded; the message says why and how to fix it."""


def load_agent(reference: str) -> AgentFn:
    """`package.module:function` → the function (the current directory is importable, like `python -m`)."""
    module_name, sep, attr = reference.partition(":")
    if not sep or not module_name or not attr:
        raise AgentLoadError(f"agent {reference!r} must look like module:function, e.g. my_agent:run")
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentLoadError(f"agent module {module_name!r} cannot be imported: {exc}") from None
    agent: Any = module
    for part in attr.split("."):
        agent = getattr(agent, part, None)
        if agent is None:
            raise AgentLoadError(f"module {module_name!r} has no {attr!r}; check the name after the colon")
    if not callable(agent):
        raise AgentLoadError(f"{reference!r} is not callable; point at a function (input, ctx) -> output")
    return cast(AgentFn, agent)
