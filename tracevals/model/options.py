"""Case options: the task-file fields an evaluator reads, declared by the evaluator with their JSON Schema.

The task-file schema (`tracevals/schemas/task_case.schema.json`) is assembled from these declarations:
the core fields (`case_id`, `input`, `tool_effects`, `prices` ...) and every built-in evaluator's
options, written once by `tracevals.evaluators.options` (a test keeps the file and the declarations
equal). An evaluator from a plugin declares its options the same way; the evaluator registry hands them
to `register_options` when the plugin loads, and `tracevals.model.tasks` validates task files against
the shipped schema plus those (`extra_options`). So a plugin adds fields to task files (and, with
`policy=True`, to scoring configs) without touching tracevals.

The registry discovers plugins on first use through the hooks the evaluator registry installs
(`add_discovery`): this module cannot import the evaluators (they sit above the model).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CaseOption", "OptionConflict", "add_discovery", "extra_options", "options_version", "register_options"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class OptionConflict(ValueError):
    """Two evaluators declare one option name differently; one line for the user."""


@dataclass(frozen=True)
class CaseOption:
    """One task-file field an evaluator reads: its `name`, JSON Schema (draft 2020-12; it may refer to the
    shared `#/$defs/tool_name`, `#/$defs/strings` and `#/$defs/callable`), and what it means. With
    `policy`, a scoring config may set it too (a policy for traffic without a case, which a case overrides).
    The evaluator reads it from `case.raw[name]`."""

    name: str
    schema: Mapping[str, Any] = field(hash=False)
    description: str = ""
    policy: bool = False

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"option {self.name!r}: a name is snake_case (a-z, 0-9, _)")
        if not isinstance(self.schema, Mapping):
            raise ValueError(f"option {self.name!r}: its schema must be a JSON Schema object")

    def property_schema(self, owner: str) -> dict[str, Any]:
        """The schema as the task-file schema holds it: the description, and the owner (`x-evaluator`)."""
        out: dict[str, Any] = {}
        if self.description:
            out["description"] = self.description
        out.update(self.schema)
        out["x-evaluator"] = owner
        if self.policy:
            out["x-policy"] = True
        return out


_lock = threading.Lock()
_extra: dict[str, tuple[str, CaseOption]] = {}
_version = 0
_discoveries: list[Callable[[], None]] = []
_discovered = False


def register_options(owner: str, options: Iterable[CaseOption], shipped: Mapping[str, Any]) -> None:
    """Add an evaluator's options to task-file validation. `shipped` is the shipped schema's properties:
    an option already there is accepted when `owner` is the evaluator the file names for it (a built-in),
    else it is a conflict, as is a name another plugin took. Raises `OptionConflict` (one line)."""
    global _version
    with _lock:
        for option in options:
            held = shipped.get(option.name)
            if held is not None:
                if isinstance(held, Mapping) and held.get("x-evaluator") == owner:
                    continue
                by = held.get("x-evaluator", "tracevals") if isinstance(held, Mapping) else "tracevals"
                raise OptionConflict(f"evaluator {owner!r}: task-file field {option.name!r} is already {by}'s")
            taken = _extra.get(option.name)
            if taken is not None and taken[0] != owner:
                raise OptionConflict(f"evaluator {owner!r}: task-file field {option.name!r} is already {taken[0]}'s")
            _extra[option.name] = (owner, option)
            _version += 1


def add_discovery(hook: Callable[[], None]) -> None:
    """A function run once before the options are first read (the evaluator registry loads its plugins)."""
    with _lock:
        _discoveries.append(hook)


def extra_options() -> dict[str, tuple[str, CaseOption]]:
    """The options registered beyond the shipped schema: name -> (owner, option), plugins discovered first."""
    global _discovered
    if not _discovered:
        _discovered = True
        for hook in list(_discoveries):
            hook()
    with _lock:
        return dict(_extra)


def options_version() -> int:
    """Bumped whenever an option is registered (validators built before then are rebuilt)."""
    return _version
