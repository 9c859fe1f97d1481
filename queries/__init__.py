"""Queries: DuckDB views that rebuild steps, trajectories and sessions from the lake's spans."""

from tracevals.lake.lake import Lake
from tracevals.lake.paths import LakeError, partition_filter
from tracevals.queries.catalog import MATERIALIZE, VIEW_NAMES, view_sql
from tracevals.queries.connection import open_lake
from tracevals.queries.lookup import session_lookup

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
