"""A report's attempts from the derived frames where an hour has them, through the views elsewhere.

`report`, `gate` and `tracevals ui`'s run pages select the sessions of some runs (`selection.select_sessions`)
and load their attempts. The attempts whose session lies wholly in a derived hour (`queries.derived`: the
nightly job's own rule, `take_derived`) are read from that hour's frames; only the others are rebuilt through
the views, narrowed to them. The rows are the views' either way (tests/test_lake_data_narrowed.py).
"""

from __future__ import annotations

import duckdb

from tracevals.lake.lake import Lake
from tracevals.lake.unreadable import warn_once
from tracevals.model.batch import Batch
from tracevals.queries.binding import drop_tables
from tracevals.queries.derived import DamagedFrames, HourFiles, derived_batch, derived_hours, take_derived
from tracevals.queries.selection import Restriction

# What `load_batch_within`'s `where` may name: the columns a trace's frame row and the `trajectories` view both
# hold, alike (an attempt's identity).
IDENTITY_COLUMNS = ("trace_id", "session_id", "run_id", "task_id", "attempt", "variant")


def load_batch_within(con: duckdb.DuckDBPyConnection, lake: Lake, where: str, within: Restriction) -> Batch:
    """`trajectories.load_batch(con, where, within)` (a report's, a gate's attempts), with the traces whose
    session lies wholly in a derived hour (`derived_hours`; `take_derived`) read from that hour's frames and
    only the others rebuilt through the views, restricted to them. `where` names `IDENTITY_COLUMNS` alone.
    The rows are the views' either way (tests/test_lake_data_narrowed.py); the restriction reads what it read
    before. The loader's views (`LOADER_VIEWS`) are defined here when some trace needs them (bound over the
    restriction's rows, not the lake's files). Frames damaged inside: every trace through the views, a warning."""
    from tracevals.queries.trajectories import load_batch

    hours = list(derived_hours(lake).values())
    if hours:
        try:
            return _frames_and_rest(con, lake, hours, where, within)
        except DamagedFrames as exc:
            warn_once({exc.folder: exc.why}, f"{exc}; read through the views instead")
    _define_loader_views(con)
    return load_batch(con, where, within)


def _frames_and_rest(
    con: duckdb.DuckDBPyConnection, lake: Lake, hours: list[HourFiles], where: str, within: Restriction
) -> Batch:
    """`load_batch_within` once there are derived hours: the frames of the traces they hold, the rest rebuilt."""
    from tracevals.queries.trajectories import load_batch

    taken = take_derived(con, hours, within.traces)
    parts: list[Batch] = []
    try:
        if taken.height:
            frames = derived_batch(lake, hours, taken)
            if where:
                con.register("tv_frame_traces", frames.traces.select(IDENTITY_COLUMNS).to_arrow())
                try:
                    kept = [r[0] for r in con.execute(f"SELECT trace_id FROM tv_frame_traces WHERE {where}").fetchall()]
                finally:
                    con.unregister("tv_frame_traces")
                frames = frames.select(kept)
            parts.append(frames)
        del taken
        [(rest,)] = con.execute("SELECT count(*) FROM tv_rest").fetchall()
        if rest:
            _define_loader_views(con)
            within.narrow("tv_rest", copy=False)
            try:
                parts.append(load_batch(con, where, within))
            finally:
                within.reapply()
    finally:
        drop_tables(con, "tv_taken", "tv_rest", "tv_derived_hours")
    return Batch.concat(parts)


def _define_loader_views(con: duckdb.DuckDBPyConnection) -> None:
    from tracevals.queries.connection import define_views
    from tracevals.queries.trajectories import LOADER_VIEWS

    define_views(con, LOADER_VIEWS)
