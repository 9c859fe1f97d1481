"""Queries: DuckDB views that rebuild steps, trajectories and sessions from the lake's spans.

The names below are imported when first used, not with the package: a module of it that needs no DuckDB
(`queries.interrupts`, which every command's signal handling reads) must not cost a command that writes
files (`tracevals ingest`, `collect`) the import of DuckDB and the view catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracevals.model.lazy import lazy_names

if TYPE_CHECKING:
    from tracevals.lake.lake import Lake
    from tracevals.lake.paths import LakeError, partition_filter
    from tracevals.queries.catalog import MATERIALIZE, VIEW_NAMES, view_sql
    from tracevals.queries.connection import open_lake
    from tracevals.queries.lookup import session_lookup

_HOME = {
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

__getattr__, __dir__ = lazy_names(globals(), __all__, _HOME)
