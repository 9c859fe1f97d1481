"""The span dialects tracevals reads: one declaration each (see `tracevals.spans.declare` for what it says).

`conventions.py` holds the conventions (tracevals' own attributes and the rules for every stack, the GenAI
semantic conventions, the providers' message shapes, OpenInference, OpenLLMetry); every other module of this
package declares one framework's own attribute family as `DIALECT`, and is found here by its file: adding a
dialect is adding one module (docs/dialects.md, "Adding a dialect").

`DIALECTS` is the conventions, then the frameworks by module name: the order in which their column keys are
read. Recognising a span and reading its kind go by each declaration's `precedence` instead (a framework's
family is more specific than the conventions it also writes).
"""

from __future__ import annotations

import importlib
import pkgutil

from tracevals.spans.declare import Dialect
from tracevals.spans.dialects.conventions import CONVENTIONS


def _frameworks() -> tuple[Dialect, ...]:
    found = []
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "conventions"):
        dialect = getattr(importlib.import_module(f"{__name__}.{module}"), "DIALECT", None)
        if not isinstance(dialect, Dialect):
            raise TypeError(f"tracevals/spans/dialects/{module}.py declares no DIALECT (a Dialect)")
        found.append(dialect)
    return tuple(found)


DIALECTS: tuple[Dialect, ...] = (*CONVENTIONS, *_frameworks())
