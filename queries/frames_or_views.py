"""A report's attempts from the derived frames where an hour has them, through the views elsewhere.

`report`, `gate` and `tracevals ui`'s run pages select the sessions of some runs (`selection.select_sessions`)
and load their attempts, then each attempt's provenance and environment. The attempts whose session lies
wholly in a derived hour (`queries.derived`: the nightly job's own rule, `take_derived`) are read from that
hour's frames; only the others are rebuilt through the views, narrowed to them. The rows are the views' either
way (tests/test_lake_data_narrowed.py).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import duckdb

from tracevals.lake.lake import Lake
from tracevals.lake.unreadable import warn_once
from tracevals.model.batch import Batch
from tracevals.queries.binding import drop_tables
from tracevals.queries.catalog import query_sql
from tracevals.queries.derived import DamagedFrames, derived_batch, derived_hours, derived_provenance, take_derived
from tracevals.queries.selection import Restriction

# What `FramesOrViews.batch`'s `where` may name: the columns a trace's frame row and the `trajectories` view
# both hold, alike (an attempt's identity).
IDENTITY_COLUMNS = ("trace_id", "session_id", "run_id", "task_id", "attempt", "variant")
_SPLIT = ("tv_taken", "tv_rest", "tv_derived_hours")  # the work tables of `take_derived`


class FramesOrViews:
    """The selected sessions (`within`, a `select_sessions` restriction of `con`) split once between the
    derived hours' frames and the views (`take_derived`: `tv_taken`, `tv_rest`), for the reads of one report:
    its attempts (`batch`), then their provenance (`provenance`). A context manager: the split's work tables
    are dropped on exit. Frames damaged inside: everything through the views, one warning."""

    def __init__(self, con: duckdb.DuckDBPyConnection, lake: Lake, within: Restriction) -> None:
        self.con, self.lake, self.within = con, lake, within
        self.hours = list(derived_hours(lake).values())
        self.taken = take_derived(con, self.hours, within.traces) if self.hours else None
        self.rest = 0  # how many traces the views rebuild (`tv_rest`), read once for both reads
        if self.taken is not None:
            [(rest,)] = con.execute("SELECT count(*) FROM tv_rest").fetchall()
            self.rest = int(rest)

    def __enter__(self) -> FramesOrViews:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        drop_tables(self.con, *_SPLIT)

    def _views_only(self, exc: DamagedFrames) -> None:
        warn_once({exc.folder: exc.why}, f"{exc}; read through the views instead")
        self.taken = None

    def batch(self, where: str) -> Batch:
        """`trajectories.load_batch(con, where, within)` (a report's, a gate's attempts), the traces of the
        derived hours read from their frames and only the others rebuilt through the views, restricted to
        them. `where` names `IDENTITY_COLUMNS` alone. The restriction reads what it read before. The loader's
        views (`LOADER_VIEWS`) are defined here when some trace needs them (bound over the restriction's
        rows, not the lake's files)."""
        from tracevals.queries.trajectories import load_batch

        if self.taken is not None:
            try:
                return self._frames_and_rest(where)
            except DamagedFrames as exc:
                self._views_only(exc)
        _define_loader_views(self.con)
        return load_batch(self.con, where, self.within)

    def _frames_and_rest(self, where: str) -> Batch:
        from tracevals.queries.trajectories import load_batch

        assert self.taken is not None
        con, parts = self.con, []
        if self.taken.height:
            frames = derived_batch(self.lake, self.hours, self.taken)
            if where:
                con.register("tv_frame_traces", frames.traces.select(IDENTITY_COLUMNS).to_arrow())
                try:
                    kept = [r[0] for r in con.execute(f"SELECT trace_id FROM tv_frame_traces WHERE {where}").fetchall()]
                finally:
                    con.unregister("tv_frame_traces")
                frames = frames.select(kept)
            parts.append(frames)
        if self.rest:
            _define_loader_views(con)
            self.within.narrow("tv_rest", copy=False)
            try:
                parts.append(load_batch(con, where, self.within))
            finally:
                self.within.reapply()
        return Batch.concat(parts)

    def provenance(self, traces: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """The `attempt_provenance` rows (column names, rows) of the traces of table `traces` (of the
        selected sessions): those of the derived hours from their frames, the others through the views
        (`attempts`, `environments`). Planning those two views costs more than reading their rows on a small
        lake; the frames cost a file read."""
        query = "attempt_provenance"
        if self.taken is not None:
            try:
                parts, wanted = [], f"IN (SELECT trace_id FROM {traces})"
                if self.taken.height:
                    self.con.register("tv_provenance", derived_provenance(self.lake, self.hours, self.taken))
                    parts.append(f"SELECT * FROM tv_provenance WHERE attempt_trace_id {wanted}")
                if self.rest:
                    rest = f"a.trace_id IN (SELECT trace_id FROM tv_rest) AND a.trace_id {wanted}"
                    parts.append(query_sql(query, traces=rest))
                try:
                    return _rows(self.con, " UNION ALL ".join(parts) or query_sql(query, traces="FALSE"))
                finally:
                    if self.taken.height:
                        self.con.unregister("tv_provenance")
            except DamagedFrames as exc:
                self._views_only(exc)
        return _rows(self.con, query_sql(query, traces=f"a.trace_id IN (SELECT trace_id FROM {traces})"))


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    cursor = con.execute(sql)
    return [d[0] for d in cursor.description], cursor.fetchall()


def _define_loader_views(con: duckdb.DuckDBPyConnection) -> None:
    from tracevals.queries.connection import define_views
    from tracevals.queries.trajectories import LOADER_VIEWS

    define_views(con, LOADER_VIEWS)
