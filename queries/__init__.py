"""Queries: DuckDB views that rebuild steps, trajectories and runs from the lake's spans."""

from tracevals.queries.lake import VIEW_NAMES, LakeError, open_lake, view_sql

__all__ = ["VIEW_NAMES", "LakeError", "open_lake", "view_sql"]
