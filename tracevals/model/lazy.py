"""A package's public names imported on first use (PEP 562): one rule for every package that lists names
defined in its modules (`tracevals`, `tracevals.scoring`, `tracevals.queries`), so that importing the package,
or one light module of it, costs nothing of what its other modules import.

    __getattr__, __dir__ = lazy_names(globals(), __all__, {"open_lake": "tracevals.queries.connection"})
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_names(
    namespace: dict[str, Any], names: Sequence[str], homes: Mapping[str, str], default: str | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module's `__getattr__` and `__dir__` (its `namespace`: `globals()`): each of `names` is imported from
    its module (`homes`, else `default`) when first asked for, and is a plain attribute from then on."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        home = homes.get(name, default)
        if name not in names or home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value  # the next lookup is a plain one
        return value

    def __dir__() -> list[str]:
        return list(names)

    return __getattr__, __dir__
