"""Queries: DuckDB views that rebuild steps, trajectories and sessions from the lake's spans."""

from tracevals.queries.lake import (
    MATERIALIZE,
    VIEW_NAMES,
    LakeError,
    is_remote,
    open_lake,
    partition_filter,
    partition_globs,
    session_lookup,
    source_sql,
    view_sql,
)

__all__ = [
    "MATERIALIZE",
    "VIEW_NAMES",
    "LakeError",
    "is_remote",
    "open_lake",
    "partition_filter",
    "partition_globs",
    "session_lookup",
    "source_sql",
    "view_sql",
]
