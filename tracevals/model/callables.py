"""`module:function` references from task files (custom checkers and argument comparisons).

Imported once per reference and cached. A reference that cannot be loaded does not stop a scoring
run: the evaluator that needed it fails the check and says why.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import Any

from tracevals.model.errors import UserError


class CallableError(UserError):
    """A `module:function` reference that cannot be imported or is not callable."""


@cache
def load_callable(reference: str) -> Callable[..., Any]:
    """The function named by `module:function`; raises `CallableError` with a one-line reason."""
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise CallableError(f"{reference!r} is not of the form 'module:function'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure of user code is the user's to see, not a crash
        raise CallableError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    target = getattr(module, attr, None)
    if not callable(target):
        raise CallableError(f"{module_name!r} has no function {attr!r}")
    return target
