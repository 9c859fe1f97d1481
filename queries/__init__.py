"""Queries: DuckDB views that rebuild steps, trajectories and sessions from the lake's spans."""

from tracevals.lake.paths import LakeError, is_remote, partition_filter, partition_globs
from tracevals.queries.lake import open_lake
from tracevals.queries.lookup import session_lookup
from tracevals.queries.sources import source_sql
from tracevals.queries.views import MATERIALIZE, VIEW_NAMES, view_sql

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
