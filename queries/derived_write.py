"""Writing a closed hour's derived frames (`queries.derived`: what they are, where they lie, how a reader
reads them): what `tracevals compact` and the end of `tracevals run` call once an hour's files are merged.

`derive` computes an hour's frames a range of buckets of about `DERIVE_CHUNK_SESSIONS` sessions at a time (the
views narrowed to its sessions), appending each range's rows to the hour's files, a bucket to a row group: its
memory follows the range, not the hour (it held an hour's views and frames whole: 744 MB RSS for a middle
hour of the 10^7-span bench lake, 569 MB in four ranges).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Generator, Iterator

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tracevals.lake.lake import Lake
from tracevals.lake.sampling import bucket_sql
from tracevals.lake.schema import LOGS_DIR, SPANS_DIR
from tracevals.model.batch import Batch
from tracevals.queries.binding import RAW, bind, drop_tables, work_table
from tracevals.queries.catalog import query_sql
from tracevals.queries.derived import (
    BUCKETS,
    FILES,
    FRAMES,
    PROVENANCE,
    HourFiles,
    bucket_ranges,
    hour_end,
    hours_of,
    is_derived,
)

# The sessions of an hour `derive` loads at a time (a range of buckets of about this many): what its memory
# follows. Fewer ranges cost less (each reads the hour's files once more, to copy its sessions' rows).
DERIVE_CHUNK_SESSIONS = 20_000
Progress = Callable[[int, int], None]  # (hours written, hours to write)
_BUCKET_SALT = "derived:"  # the bucket of a session: `bucket_sql(_BUCKET_SALT, sid) % BUCKETS`


def derive_closed(
    lake: Lake,
    ended_before: float,
    since: float | None = None,
    small_only: bool = False,
    progress: Progress | None = None,
) -> list[HourFiles]:
    """`derive` every hour that ended before `ended_before` (and after `since`), UNIX times: what
    compaction calls once it has merged the hours' files. An hour's files are those its readers read
    (`Lake.list_parquet`: not the merged inputs kept for readers that listed them before), so deleting
    those later leaves its frames current. small_only: only the hours a small lake's snapshot would take
    whole (`connection.is_small`: TRACEVALS_SNAPSHOT_MB of span and log files), as the end of `tracevals run`
    derives: an hour of production traffic beside the run is left to `tracevals compact`. progress: called
    with (hours written, hours to write) as each is written (`tracevals compact`'s bar)."""
    from tracevals.queries.connection import is_small

    chosen = []
    for hour, files in hours_of(lake).items():
        ended = hour_end(hour)
        named = f"{hour[0]}T{hour[1]:02d}"  # the hour as `is_small`'s inclusive bounds take it
        in_range = ended <= ended_before and (since is None or ended > since)
        if in_range and (not small_only or is_small(lake, named, named)):
            chosen.append(files)
    return derive(lake, chosen, progress=progress)


def derive_or_warn(
    lake: Lake,
    ended_before: float,
    since: float | None = None,
    small_only: bool = False,
    progress: Progress | None = None,
) -> tuple[list[HourFiles], str | None]:
    """`derive_closed`, a failure returned as a warning line rather than raised: the hours written, and the
    warning. Nothing is lost when the frames are not written (readers use the views). What `tracevals compact`
    and the end of `tracevals run` call under the compaction's lock."""
    try:
        return derive_closed(lake, ended_before, since, small_only, progress), None
    except Exception as exc:  # any failure: the frames are an optimisation, the merge stands
        return [], f"derived tables not written ({type(exc).__name__}: {exc}); readers use the views"


def derive(
    lake: Lake,
    hours: list[HourFiles],
    chunk_sessions: int = DERIVE_CHUNK_SESSIONS,
    progress: Progress | None = None,
) -> list[HourFiles]:
    """Write the loader's frames of each hour not derived yet for its current files; the hours written.
    One connection for all of them, its views bound once; an hour's sessions loaded a range of buckets of about
    `chunk_sessions` sessions at a time (`_loaded`). progress: (hours written, hours to write), after each."""
    todo = [h for h in hours if not is_derived(lake, h)]
    if not todo:
        return []
    if progress is not None:
        progress(0, len(todo))
    from tracevals.queries.connection import open_lake
    from tracevals.queries.sources import files_sql
    from tracevals.queries.trajectories import LOADER_VIEWS

    con = open_lake(lake, read_spans=False, views=(*LOADER_VIEWS, "environments"), materialize=False)
    try:
        con.execute("SET enable_progress_bar = false")
        for done, hour in enumerate(todo, 1):
            for raw, sub, files in (("raw_spans", SPANS_DIR, hour.spans), ("raw_logs", LOGS_DIR, hour.logs)):
                bind(con, raw, files_sql(con, lake, sub, list(files)) if files else f"SELECT * FROM {raw}_empty")
            with contextlib.closing(_loaded(con, chunk_sessions)) as loaded:  # its tables dropped on any exit
                _write(lake, hour, loaded)
            if progress is not None:
                progress(done, len(todo))
        for raw in RAW:
            bind(con, raw, f"SELECT * FROM {raw}_empty")
    finally:
        con.close()
    return todo


_BUCKETS_SQL = f"""
SELECT trace_id, sid, CAST({bucket_sql(_BUCKET_SALT, "sid")} % {BUCKETS} AS INTEGER) AS bucket
FROM (SELECT trace_id, coalesce(max(session_id), trace_id) AS sid FROM raw_spans GROUP BY trace_id)
"""


Loaded = tuple[Batch, pa.Table, pl.DataFrame]  # a range's batch, its provenance rows, its traces' buckets


def _loaded(con: duckdb.DuckDBPyConnection, chunk_sessions: int) -> Generator[Loaded, None, None]:
    """What the raw relations bound on `con` (an hour's files) give the loader, a range of buckets of about
    `chunk_sessions` sessions at a time, the views narrowed to its sessions (`selection.narrowed_chunks`, their
    rows copied): each range's batch, its `attempt_provenance` rows, and its traces' buckets (`trace_id`,
    `bucket`: the loader's session key, `trace_facts`, hashed). A bucket holds whole sessions and lies in
    one range; when every session fits in one range, nothing is narrowed."""
    from tracevals.queries.selection import narrowed_chunks
    from tracevals.queries.trajectories import load_batch_and

    query = query_sql("attempt_provenance", traces="TRUE")
    work_table(con, "tv_buckets", _BUCKETS_SQL)
    try:
        counts = dict(con.execute("SELECT bucket, count(DISTINCT sid) FROM tv_buckets GROUP BY bucket").fetchall())
        ranges = bucket_ranges([int(counts.get(b, 0)) for b in range(BUCKETS)], chunk_sessions)
        kept = [f"bucket BETWEEN {low} AND {high}" for low, high in ranges]
        for chunk in narrowed_chunks(con, "tv_buckets", kept):
            buckets = pl.from_arrow(
                con.sql(f"SELECT trace_id, bucket FROM tv_buckets WHERE {kept[chunk]}").to_arrow_table()
            )
            assert isinstance(buckets, pl.DataFrame)
            yield (*load_batch_and(con, query), buckets)
    finally:
        drop_tables(con, "tv_buckets")


def _write(lake: Lake, hour: HourFiles, loaded: Iterator[Loaded]) -> None:
    """The hour's frame files from its ranges of buckets (`_loaded`): each range's rows appended to each file,
    a bucket to a row group; the four files written once every range is in (a reader takes an hour only when
    all four are there)."""
    stale = [n for n in lake.list_names(hour.folder, ".parquet") if not n.endswith(f"-{hour.key}.parquet")]
    buffers = {name: io.BytesIO() for name in FILES}
    with contextlib.ExitStack() as stack:
        writers: dict[str, pq.ParquetWriter] = {}

        def append(name: str, rows: pa.Table) -> None:
            if name not in writers:  # the first range's columns: the frames' own schema, the query's
                writers[name] = stack.enter_context(pq.ParquetWriter(buffers[name], rows.schema, compression="zstd"))
            if rows.num_rows:
                writers[name].write_table(rows.cast(writers[name].schema))

        for batch, provenance, buckets in loaded:
            append(PROVENANCE, provenance)
            for table, schema in FRAMES:
                frame: pl.DataFrame = getattr(batch, table)
                frame = frame.select([pl.col(n).cast(t) for n, t in schema.items()])
                frame = frame.join(buckets, on="trace_id", how="left", maintain_order="left")
                if frame.get_column("bucket").null_count():  # `_loaded`'s traces are those with spans
                    raise ValueError(f"{table} rows of a trace without spans in {hour.folder}")
                frame = frame.sort("bucket", maintain_order=True)  # a trace's rows keep their order
                append(table, frame.head(0).to_arrow())
                for _, part in frame.group_by("bucket", maintain_order=True):  # a row group per bucket
                    append(table, part.to_arrow())
    for name in FILES:
        lake.write_bytes(f"{hour.folder}/{name}-{hour.key}.parquet", buffers[name].getvalue())
    for name in stale:  # frames of files that are gone: nothing reads them any more
        with contextlib.suppress(OSError):
            lake.filesystem.delete_file(lake.path(hour.folder, name))
