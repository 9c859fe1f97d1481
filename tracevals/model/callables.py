"""`module:function` references: the agent under test (`tracevals run --agent`), and custom checkers and
argument comparisons in task files. One loader for all of them (`import_reference`).

A reference is `package.module:function` (the working directory importable, as with `python -m`) or
`path/to/file.py:function` (the file loaded as a module, its folder importable for its own imports); the
name after the colon may be dotted (`module:Class.method`). Whatever importing the user's code raises (a
missing module, a syntax error, an exception at import) is one `CallableError` line naming it, never a
traceback. Task files' references are imported once and cached; a reference that cannot be loaded does not
stop a scoring run: the evaluator that needed it fails the check and says why.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from tracevals.model.errors import UserError


class CallableError(UserError):
    """A `module:function` reference that cannot be imported or is not callable."""


@cache
def load_callable(reference: str) -> Callable[..., Any]:
    """The function named by `module:function`; raises `CallableError` with a one-line reason."""
    return import_reference(reference)


def import_reference(reference: str) -> Callable[..., Any]:
    """The callable `reference` names (see the module's docstring); raises `CallableError` with one line
    that says what is wrong and how to put it right."""
    module_name, sep, attr = reference.rpartition(":")  # the last colon: a Windows path has one too
    if not sep or not module_name or not attr:
        raise CallableError(
            f"{reference!r} must look like module:function or path/to/file.py:function, e.g. my_agent:run"
        )
    module = _module(module_name)
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise CallableError(f"{module_name!r} has no {attr!r}; check the name after the colon")
    if not callable(target):
        raise CallableError(f"{reference!r} is not callable; point at a function")
    return cast(Callable[..., Any], target)


def _module(name: str) -> ModuleType:
    """The module `name` names: a dotted module (the working directory importable) or a `.py` file."""
    is_file = name.endswith(".py") or "/" in name or "\\" in name
    try:
        if not is_file:
            cwd = str(Path.cwd())
            if cwd not in sys.path:  # as `python -m`: a module beside the caller is importable
                sys.path.insert(0, cwd)
            return importlib.import_module(name)
        path = Path(name).resolve()
        if not path.is_file():
            raise CallableError(f"{name!r}: no such file; give a path to a .py file, or a module name")
        folder = str(path.parent)
        if folder not in sys.path:  # the file's own imports of its neighbours work, as under `python file.py`
            sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise CallableError(f"{name!r} cannot be loaded as a Python module; give a .py file")
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault(path.stem, module)
        spec.loader.exec_module(module)
        return module
    except CallableError:
        raise
    except BaseException as exc:  # any import-time failure of user code is the user's to see, not a crash
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise CallableError(f"cannot import {name!r}: {type(exc).__name__}: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"
