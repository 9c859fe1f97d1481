"""The one shape of tracevals' instrumentors: methods of a library wrapped with wrapt, and unwrapped.

`opentelemetry-instrument` finds each instrumentor through the `opentelemetry_instrumentor` entry point
and calls `instrument()`: the instrumentor sets up export from the environment first
(`autoconfigure.configure_from_env`), then wraps each of its `patches`; `uninstrument()` unwraps the
same methods and forgets what the instrumentor held.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from typing import Any, ClassVar

import wrapt
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap

from tracevals.instrumentation.autoconfigure import configure_from_env

# (module, "Class.method", the wrapt wrapper put around it)
Patch = tuple[str, str, Callable[..., Any]]


class PatchingInstrumentor(BaseInstrumentor):
    """An instrumentor that wraps `patches` (a subclass names them, and the library version it needs)."""

    requires: ClassVar[tuple[str, ...]] = ()
    patches: ClassVar[tuple[Patch, ...]] = ()

    def instrumentation_dependencies(self) -> Collection[str]:
        return self.requires

    def _instrument(self, **kwargs: Any) -> None:
        configure_from_env()
        self._configure(**kwargs)
        for module, method, wrapper in self.patches:
            wrapt.wrap_function_wrapper(module, method, wrapper)

    def _uninstrument(self, **kwargs: Any) -> None:
        for module, method, _ in self.patches:
            owner, name = method.rsplit(".", 1)
            unwrap(getattr(importlib.import_module(module), owner), name)
        self._forget()

    def _configure(self, **kwargs: Any) -> None:
        """The `instrument(**kwargs)` options, checked before anything is wrapped (none by default)."""

    def _forget(self) -> None:
        """Drop what the wrappers remembered (per client or session), once unwrapped."""
