"""Derived tables: what the scoring loader rebuilds through the views, written once per closed hour.

Rebuilding a session's trajectory through the views (`queries/views/`: de-duplication, span facts, call
collapsing, message parts) costs more than scoring it, and a closed hour's spans do not change. So once an
hour is closed (`tracevals compact`, the end of `tracevals run`), `derive` writes the loader's frames of its
traces (`trajectories.load_batch`: traces, calls, hand-offs), and each attempt's provenance as a report reads
it (`attempt_provenance`), as Parquet beside the spans:

    LAKE/derived/batch/date=D/hour=H/{traces,calls,handoffs,provenance}-<key>.parquet

`key` names what they were computed from: the hour's span and log files (a file is never changed once
written: a new file, a compaction, a late span give the hour another key) and the loader and its views
(`LOADER_DIGEST`: their SQL text and this module's version). A reader uses an hour's frames only while
both still match; otherwise the hour is read through the views, as an open hour is.

Frames computed over one hour are right for the sessions whose every span and log record lies in that
hour; a session that crosses an hour (or is cut by the reader's selection) is rebuilt through the views.
`derived_hours` and `derived_chunks` are the reader's half (`scoring.groups`).

Each frame's rows carry their session's `bucket` (one of `BUCKETS`, from a hash of the session key) and
are written a bucket to a row group: a reader takes a chunk of sessions (a range of buckets) from the row
groups of those buckets alone, so a group never holds an hour's frames whole (at 10^7 spans an hour's
frames are over 100 MiB in memory). Writing them is `queries.derived_write`'s (`derive`); this module is
their layout and the reader's half.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from tracevals.lake.compact import MIN_AGE_S
from tracevals.lake.lake import Lake, partition_key
from tracevals.lake.paths import LakeError
from tracevals.lake.schema import DERIVED_DIR, LOGS_DIR, SPANS_DIR
from tracevals.lake.unreadable import named_files, warn_once
from tracevals.model.batch import CALL_SCHEMA, HANDOFF_SCHEMA, TRACE_SCHEMA, Batch
from tracevals.queries.binding import drop_tables, work_table
from tracevals.queries.catalog import query_sql, view_sql

VERSION = 3  # raise when what is written changes in a way the SQL digest does not show (3: `provenance`)
BUCKETS = 16  # a frame's row groups: a chunk of sessions is read as a range of them
FRAMES = (("traces", TRACE_SCHEMA), ("calls", CALL_SCHEMA), ("handoffs", HANDOFF_SCHEMA))
# Beside the loader's frames: each attempt's `attempt_provenance` row (what a report reads besides its
# trajectory). An hour is derived when all of `FILES` are there.
PROVENANCE = "provenance"
FILES = (PROVENANCE, *(table for table, _ in FRAMES))
_LOADER_QUERIES = (
    "batch_traces",
    "batch_calls",
    "batch_handoffs",
    "trace_facts",
    "select_sessions",
    "attempt_provenance",
)

Hour = tuple[str, int]  # (YYYY-MM-DD, hour)


@cache
def loader_digest() -> str:
    """What the frames depend on besides the spans: the view files, the loader's queries, `VERSION`."""
    digest = hashlib.sha256(f"derived {VERSION}\n".encode())
    for name, sql in view_sql():
        digest.update(f"{name}\n{sql}\n".encode())
    for name in _LOADER_QUERIES:
        digest.update(f"{name}\n{query_sql(name)}\n".encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class HourFiles:
    """One `date=/hour=` partition's span and log files, as `source_file` names them."""

    hour: Hour
    spans: tuple[str, ...]
    logs: tuple[str, ...]
    key: str  # the files' paths in the lake (a copied lake keeps its frames) and `loader_digest`

    @property
    def folder(self) -> str:
        return f"{DERIVED_DIR}/date={self.hour[0]}/hour={self.hour[1]:02d}"


def hours_of(lake: Lake) -> dict[Hour, HourFiles]:
    """Every partition of the lake's spans (with its log files), from the listing alone."""
    found: dict[Hour, tuple[list[str], list[str], list[str]]] = {}
    root = lake.path("") + "/"
    for sub in (SPANS_DIR, LOGS_DIR):
        for info in lake.list_parquet(sub):
            key = partition_key(info.path)
            if key is None:
                continue
            spans, logs, relative = found.setdefault((key[0].isoformat(), key[1]), ([], [], []))
            (spans if sub == SPANS_DIR else logs).append(lake.name_of(info.path))
            relative.append(info.path.removeprefix(root))
    return {h: HourFiles(h, tuple(s), tuple(lg), _key(relative)) for h, (s, lg, relative) in sorted(found.items()) if s}


def _key(relative: list[str]) -> str:
    listed = "\n".join([loader_digest(), *sorted(relative)])
    return hashlib.sha256(listed.encode()).hexdigest()[:16]


def is_derived(lake: Lake, hour: HourFiles) -> bool:
    """Whether the hour's frames are there, whole, for its files as they are now (a damaged one is written
    again by the next `derive`)."""
    return _complete({i.base_name for i in _whole(lake, lake.files(hour.folder, False))}, hour.key)


def _complete(names: set[str], key: str) -> bool:
    """Whether an hour folder's file `names` hold every frame file of `key`."""
    return all(f"{table}-{key}.parquet" in names for table in FILES)


def hour_end(hour: Hour) -> float:
    """When the partition's hour ended, a UNIX time."""
    return dt.datetime.fromisoformat(f"{hour[0]}T{hour[1]:02d}:00:00+00:00").timestamp() + 3600


def derived_hours(lake: Lake) -> dict[Hour, HourFiles]:
    """The hours whose frames are written, whole, for their files as they are now (three listings in all);
    an hour with a damaged frame file is read through the views (one warning line), as an open hour is. So is
    an hour whose frames are out of date, and one that ended `compact.MIN_AGE_S` or more ago is said in one
    warning line too: files arrived in it after they were written, or another version of tracevals wrote them
    (their key is another's), and a nightly job that read them reads its views again, in more time, until the
    next `tracevals compact` (which takes those hours by default) writes them again. A younger hour is still
    being written (two `tracevals run`s into one lake, a collector's late spans): nothing to say of it."""
    in_folder: dict[str, set[str]] = {}  # each folder's whole frame files, by name
    for info in _whole(lake, lake.list_parquet(DERIVED_DIR)):
        folder, _, name = lake.name_of(info.path).rpartition("/")
        in_folder.setdefault(folder, set()).add(name)
    current: dict[Hour, HourFiles] = {}
    stale: dict[str, str] = {}  # the folders of closed hours holding another key's frames only
    closed = time.time() - MIN_AGE_S
    for hour, files in hours_of(lake).items():
        folder = lake.name_of(lake.path(files.folder, "-")).rpartition("/")[0]
        names = in_folder.get(folder, set())
        if _complete(names, files.key):
            current[hour] = files
        elif names and not any(n.endswith(f"-{files.key}.parquet") for n in names) and hour_end(hour) <= closed:
            stale[folder] = "out of date"
    if stale:
        warn_once(
            stale,
            f"the derived frames of {len(stale)} closed hour{'' if len(stale) == 1 else 's'} are out of date "
            "(files arrived after they were written, or another version of tracevals wrote them): those hours are "
            "read through the views, the same rows in more time, until `tracevals compact` writes them again",
        )
    return current


class DamagedFrames(LakeError):
    """A derived frame file that looks whole but cannot be read (its pages damaged): one line naming its folder."""

    def __init__(self, folder: str, why: str) -> None:
        super().__init__(
            f"the derived frames in {folder} cannot be read ({why}); delete that folder (the views give the same "
            "rows, and `tracevals compact` writes it again)"
        )
        self.folder, self.why = folder, why


def _whole(lake: Lake, infos: list[Any]) -> list[Any]:
    """The listed frame files that look whole (`Lake.problem`: a cheap look at a file's ends); the others are
    named in one warning line (`warn_once`), never a failure: the views give the same rows."""
    damaged = {i.path: why for i in infos if i.base_name.endswith(".parquet") and (why := lake.problem(i))}
    if damaged:
        named = f"{len(damaged)} derived frame files are damaged: {named_files(damaged)}"
        warn_once(damaged, f"{named}; their hours are read through the views (the same rows), and the next "
                  "`tracevals compact` writes them again")  # fmt: skip
    return [i for i in infos if i.path not in damaged]


def derived_batch(lake: Lake, hours: list[HourFiles], traces: pl.DataFrame) -> Batch:
    """The derived frames of `hours`, kept to the traces of `traces` (column `trace_id`), in one batch."""
    return Batch.concat(list(derived_chunks(lake, hours, traces, chunk_sessions=None)))


def derived_chunks(
    lake: Lake, hours: list[HourFiles], traces: pl.DataFrame, chunk_sessions: int | None
) -> Iterator[Batch]:
    """The derived frames of `hours`, kept to the traces of `traces` (column `trace_id`: whole sessions), a
    batch of about `chunk_sessions` whole sessions at a time (None: one batch): each a range of buckets,
    read from the frames' row groups of those buckets alone. A bucket holds whole sessions; one bucket of
    more than `chunk_sessions` sessions is a batch of its own."""
    wanted = traces.get_column("trace_id").cast(pl.Utf8).unique().implode()
    files = {(hour.key, table): _frame_source(lake, hour, table) for hour in hours for table, _ in FRAMES}
    ranges = [(0, BUCKETS - 1)]
    whole: set[str] = set()  # the hours all of whose traces are wanted: read without the lookup in `wanted`
    if chunk_sessions is not None and hours:
        per_bucket = []
        for hour in hours:
            read = _scan(files[(hour.key, "traces")]).select(
                "bucket", sid=pl.coalesce("session_id", "trace_id"), wanted=pl.col("trace_id").is_in(wanted)
            )
            marked = _collected(read, lake, hour)
            if marked.get_column("wanted").all():
                whole.add(hour.key)
            per_bucket.append(marked.filter("wanted").select("bucket", "sid").unique().group_by("bucket").len())
        counts = dict(pl.concat(per_bucket).group_by("bucket").agg(pl.col("len").sum()).iter_rows())
        ranges = bucket_ranges([int(counts.get(b, 0)) for b in range(BUCKETS)], chunk_sessions)
    for low, high in ranges:
        frames: dict[str, list[pl.DataFrame]] = {table: [] for table, _ in FRAMES}
        for hour in hours:
            for table, schema in FRAMES:
                read = _scan(files[(hour.key, table)])
                if (low, high) != (0, BUCKETS - 1):
                    read = read.filter(pl.col("bucket").is_between(low, high))  # the other row groups are skipped
                if hour.key not in whole:  # a lookup of every row in every wanted trace id: only where needed
                    read = read.filter(pl.col("trace_id").is_in(wanted))
                frames[table].append(
                    _collected(read.select([pl.col(n).cast(t) for n, t in schema.items()]), lake, hour)
                )
        out = {
            table: pl.concat(frames[table], how="vertical") if frames[table] else pl.DataFrame(schema=schema)
            for table, schema in FRAMES
        }
        del frames
        if out["traces"].height:
            batch = Batch(traces=out["traces"], calls=out["calls"], handoffs=out["handoffs"])
            del out
            yield batch
            del batch  # not held while the next chunk is read


def derived_provenance(lake: Lake, hours: list[HourFiles], traces: pl.DataFrame) -> pa.Table:
    """The `attempt_provenance` rows (`PROVENANCE`) of `hours` of the traces of `traces` (column `trace_id`),
    as the query gives them (an Arrow table of its columns)."""
    wanted = traces.get_column("trace_id").cast(pl.Utf8).unique().implode()
    parts = [
        _collected(
            _scan(_frame_source(lake, hour, PROVENANCE)).filter(pl.col("attempt_trace_id").is_in(wanted)), lake, hour
        )
        for hour in hours
    ]
    return pl.concat(parts, how="vertical").to_arrow()


def _collected(frame: pl.LazyFrame, lake: Lake, hour: HourFiles) -> pl.DataFrame:
    """`frame.collect()`, a frame file damaged inside (its ends whole: `_whole` let it through) a `DamagedFrames`
    line that names the hour's folder and how to have it written again."""
    try:
        return frame.collect()
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise DamagedFrames(
            lake.path(hour.folder), (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        ) from None


def bucket_ranges(sessions: list[int], chunk_sessions: int) -> list[tuple[int, int]]:
    """Consecutive buckets cut into ranges of about `chunk_sessions` sessions (`sessions`: per bucket)."""
    ranges: list[tuple[int, int]] = []
    start, held = 0, 0
    for bucket, count in enumerate(sessions):
        if held and held + count > chunk_sessions:
            ranges.append((start, bucket - 1))
            start, held = bucket, 0
        held += count
    ranges.append((start, len(sessions) - 1))
    return ranges


def _frame_source(lake: Lake, hour: HourFiles, table: str) -> str | bytes:
    """What Polars scans for a derived frame file: its path, or (object storage) its bytes, fetched once.
    Polars reads the file itself: on an hour of the 10^7-span bench lake, 0.11 s and 96 MiB against 0.45 s
    and 225 MiB through pyarrow's reader and a conversion to Polars."""
    path = lake.path(hour.folder, f"{table}-{hour.key}.parquet")
    if lake.local_folder is not None:
        return path
    with lake.filesystem.open_input_file(path) as file:
        return bytes(file.read())


def _scan(source: str | bytes) -> pl.LazyFrame:
    # glob=False: the file's path is read as it is (a lake under "runs [old]/" is no pattern)
    return pl.scan_parquet(source if isinstance(source, str) else io.BytesIO(source), glob=False)


# Each trace of the connection's raw relations (as bound: a group's files): its session key (the loader's,
# `trace_facts`: its largest session id, else its trace id), the least and greatest hour date and hour of day
# of its rows, and whether it has spans (a trace of log records alone is rebuilt by nobody).
_TRACE_HOURS = """
WITH r AS (
    SELECT trace_id, session_id, CAST(date AS VARCHAR) AS d, CAST(hour AS BIGINT) AS h, TRUE AS span FROM raw_spans
    UNION ALL
    SELECT trace_id, NULL, CAST(date AS VARCHAR), CAST(hour AS BIGINT), FALSE FROM raw_logs WHERE trace_id IS NOT NULL
)
SELECT trace_id, coalesce(max(session_id), trace_id) AS sid, min(d) AS d, max(d) AS d_max, min(h) AS h,
       max(h) AS h_max, bool_or(span) AS has_spans
FROM r GROUP BY trace_id
"""
# The traces (of `tv_trace_hours`) that lie wholly in one hour with their whole session: (trace_id, date, hour).
# One hour is one date and one hour of the day: their least and greatest the same (no DISTINCT to count).
_WHOLE_IN_ONE_HOUR = """
WITH s AS (SELECT sid FROM tv_trace_hours GROUP BY sid HAVING min(d) = max(d_max) AND min(h) = max(h_max))
SELECT t.trace_id, t.d, t.h FROM tv_trace_hours AS t JOIN s USING (sid)
"""


def take_derived(con: duckdb.DuckDBPyConnection, hours: list[HourFiles], within: str | None = None) -> pl.DataFrame:
    """Split what `raw_spans` / `raw_logs` read on `con` (a group's files), or the traces of the work table
    `within` (whole sessions: `selection.selected_traces`), in two work tables: `tv_taken`, the traces whose
    session lies wholly in one of `hours` (their frames are derived), and `tv_rest`, the other traces
    (rebuilt through the views). Returns `tv_taken` (column `trace_id`)."""
    work_table(con, "tv_derived_hours", columns="d VARCHAR, h BIGINT")
    con.executemany("INSERT INTO tv_derived_hours VALUES (?, ?)", [h.hour for h in hours])
    work_table(con, "tv_trace_hours", _TRACE_HOURS)  # the raw rows read once, for both tables
    kept = f" WHERE w.trace_id IN (SELECT trace_id FROM {within})" if within else ""
    taken = f"SELECT w.trace_id FROM ({_WHOLE_IN_ONE_HOUR}) AS w JOIN tv_derived_hours USING (d, h){kept}"
    work_table(con, "tv_taken", taken)
    every = f"SELECT trace_id FROM {within}" if within else "SELECT trace_id FROM tv_trace_hours WHERE has_spans"
    work_table(con, "tv_rest", f"SELECT trace_id FROM ({every}) WHERE trace_id NOT IN (SELECT trace_id FROM tv_taken)")
    drop_tables(con, "tv_trace_hours")
    frame = pl.from_arrow(con.sql("SELECT trace_id FROM tv_taken").to_arrow_table())
    assert isinstance(frame, pl.DataFrame)
    return frame
