"""Queries: DuckDB views that rebuild steps, trajectories and sessions from the lake's spans.

The names below are imported when first used, not with the package: a module of it that needs no DuckDB
(`queries.interrupts`, which every command's signal handling reads) must not cost a command that writes
files (`tracevals ingest`, `collect`) the import of DuckDB and the view catalog.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracevals.lake.lake import Lake
    from tracevals.lake.paths import LakeError, partition_filter
    from tracevals.queries.catalog import MATERIALIZE, VIEW_NAMES, view_sql
    from tracevals.queries.connection import open_lake
    from tracevals.queries.lookup import session_lookup

_WHERE = {
    "Lake": "tracevals.lake.lake",
    "LakeError": "tracevals.lake.paths",
    "partition_filter": "tracevals.lake.paths",
    "MATERIALIZE": "tracevals.queries.catalog",
    "VIEW_NAMES": "tracevals.queries.catalog",
    "view_sql": "tracevals.queries.catalog",
    "open_lake": "tracevals.queries.connection",
    "session_lookup": "tracevals.queries.lookup",
}

__all__ = [
    "MATERIALIZE",
    "VIEW_NAMES",
    "Lake",
    "LakeError",
    "open_lake",
    "partition_filter",
    "session_lookup",
    "view_sql",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain one
    return value


def __dir__() -> list[str]:
    """The lazy names too (a REPL's completion, `help()`)."""
    return sorted({*globals(), *__all__})
