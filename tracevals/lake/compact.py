"""Compaction: rewrite the closed hours of a lake as a few large files, sorted by session.

Writers add files to an hour for as long as its spans arrive: the embedded writer one per export batch
(a few hundred spans), the collector one per rotation (every 30 s by default), `tracevals ingest` one per
call, and spans that arrive late add more to an hour long closed. Their rows are in arrival order, so
every row group holds spans of hundreds of sessions. A reader looking for one session then opens every
file of the lake and probes the Bloom filter of every row group (`queries.connection.session_lookup`), and a
query over a range opens thousands of footers.

`compact(lake)` rewrites each hour whose end lies `min_age_s` in the past into one file (or a few, each
at most `group_bytes` of uncompressed data, so memory stays bounded), its rows sorted by session, trace
and start time, in row groups of `ROW_GROUP_ROWS`: a session's spans are then in one or two row
groups whose min/max statistics exclude every other session, so DuckDB skips the rest of the file
without reading a Bloom filter. Nothing is dropped or changed: every row of every file comes back,
columns an older file lacks as null, columns this version does not know kept.

The commit is the writers' (temporary file, fsync, rename, fsync the folder). The new file names the
files it replaced in its footer (`tracevals.compacted_from`) with the time of the merge, and they stay
for readers that listed them for a retention period (`tracevals.lake.retention`: 10 minutes by default),
then a later compaction deletes them: every row is twice on disk meanwhile, but a reader that lists the
files after the merge reads the merged file alone (`retention.superseded`), and a file some footer names
is never merged again. A crash between
the commit and the deletions leaves the same state, finished by the next run. Files that arrive while a
partition is being compacted are left for the next run. An exclusive lock on `LAKE/.compact.lock` keeps
two compactions apart (`wait_s`: how long to wait for it); writers and readers do not take it. A lake on
object storage is compacted the same way (`lake.compact_remote`), its lock a lease (`lake.leases`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from tracevals.lake.compact_lock import TMP_PREFIX, CompactError, locked, remove_stale
from tracevals.lake.lake import Lake, LakeLike
from tracevals.lake.retention import (
    COMPACTED_AT,
    COMPACTED_NAME,
    COMPLETE,
    MARKER,
    Footers,
    holds,
    marked,
    note_pending,
    pending_partitions,
    read_footers,
    retention_seconds,
    stamp,
)
from tracevals.lake.schema import LOGS_DIR, SPANS_DIR
from tracevals.lake.sink import DICTIONARY_COLUMNS
from tracevals.lake.writer import BLOOM_COLUMNS, BLOOM_FPP, TABLES, fsync_path

if TYPE_CHECKING:
    import pyarrow.fs as pafs

# Rows per row group of a compacted file: sorted by session, a lookup reads the one or two row groups of
# its session; at 8,192 rows it probed twice the row groups, at 65,536 it decompressed four times the
# rows (bench/queries_scale.py, docs/lake.md).
ROW_GROUP_ROWS = 16384
# Uncompressed bytes (the files' own row-group sizes) compacted into one file. Peak memory is about four
# times the group's bytes plus ~80 MB (the rows in Arrow are ~2x their Parquet size, then the sort and the
# row group being written): 790-900 MB for an hour of 500,000 bench spans, 176 MB uncompressed. A file larger
# than this is rewritten on its own (the collector's are bounded by its rotation, 500,000 rows by default).
GROUP_BYTES = 128 * 1024**2
MIN_AGE_S = 3600.0

SORT_KEYS: dict[str, list[str]] = {
    SPANS_DIR: ["session_id", "trace_id", "start_time", "span_id"],
    LOGS_DIR: ["trace_id", "span_id", "time"],
}


@dataclass
class PartitionResult:
    table: str
    partition: str  # date=…/hour=…
    files_in: int = 0
    files_out: int = 0
    rows: int = 0
    bytes_in: int = 0  # on disk
    bytes_out: int = 0
    leftovers_removed: int = 0  # merged inputs deleted (their retention passed, or a crashed run's leftovers)
    kept_for_readers: int = 0  # merged inputs still kept for readers that listed them (retention)
    error: str | None = None  # why this partition was left as it was


@dataclass
class CompactResult:
    partitions: list[PartitionResult] = field(default_factory=list)
    seconds: float = 0.0
    stale_removed: int = 0
    too_young: list[str] = field(default_factory=list)  # "table/date=../hour=..": not ended min_age_s ago
    kept_for_readers: int = 0  # merged inputs kept for readers, to be deleted by a later compaction

    @property
    def files_in(self) -> int:
        return sum(p.files_in for p in self.partitions)

    @property
    def files_out(self) -> int:
        return sum(p.files_out for p in self.partitions)


def compact(
    lake: LakeLike,
    *,
    min_age_s: float = MIN_AGE_S,
    group_bytes: int = GROUP_BYTES,
    now: float | None = None,
    dry_run: bool = False,
    progress: Callable[[int, int], None] | None = None,
    since: float | None = None,
    retention_s: float | None = None,
    wait_s: float = 0.0,
    then: Callable[[], object] | None = None,
) -> CompactResult:
    """Compact every hour partition of the lake's spans and logs that ended at least `min_age_s` ago
    and is not compacted yet; `dry_run` lists what would be done. progress(done, total) per partition.
    `since` (a UNIX time): only the hours that end after it (a negative `min_age_s` takes in the hour
    that is still running: `tracevals run` compacts the hours it wrote once its attempts are all in), and the
    hours elsewhere whose merged inputs are due for deletion. `retention_s`: how long merged inputs stay for
    readers (default `retention.retention_seconds()`; 0 deletes them at once). `wait_s`: how long to wait
    for another compaction of the lake to finish before raising `CompactError`. `then`: what else a compaction
    writes (the derived tables, `queries.derived`), run once the merges are done (not on a dry run): on local
    disk under the same lock, so a killed one's temporary files are swept by the next compaction like a merge's;
    on object storage after the compaction (each object is one PUT: nothing half-written to sweep)."""
    retention = retention_seconds() if retention_s is None else retention_s
    lake = Lake.open(lake)
    root = lake.local_folder
    if root is None:  # object storage: no rename, no lock file (see the module's docstring)
        from tracevals.lake.compact_remote import compact_remote

        remote = compact_remote(lake, min_age_s, group_bytes, now, dry_run, progress, since, retention, wait_s)
        if then is not None and not dry_run:
            then()
        return remote
    if not root.is_dir():
        raise CompactError(f"lake {lake.location!r} is not a directory; pass the folder that holds spans/")
    started = time.monotonic()
    now = time.time() if now is None else now
    result = CompactResult()
    with locked(root, dry_run, wait_s):
        if not dry_run:
            result.stale_removed = remove_stale(root, tuple(SORT_KEYS))
        todo = [
            (table, d)
            for table in SORT_KEYS
            for d in _closed_partitions(root / table, now - min_age_s)
            if since is None or _hour_end(d) > since
        ]
        chosen = set(todo)
        result.too_young = [
            f"{table}/{d.relative_to(root / table)}"
            for table in SORT_KEYS
            for d in _closed_partitions(root / table, float("inf"))
            if (table, d) not in chosen and any(d.glob("*.parquet"))
        ]
        due = [] if dry_run else pending_partitions(lake, time.time())
        sweeps = [(t, root / t / rest) for t, _, rest in (p.partition("/") for p in due) if t in SORT_KEYS]
        work = [(table, d, True) for table, d in todo] + [(t, d, False) for t, d in sweeps if (t, d) not in chosen]
        for done, (table, directory, merge) in enumerate(work, 1):
            try:
                partition, next_due = _compact_partition(table, directory, group_bytes, dry_run, retention, merge)
            except OSError as exc:  # a read-only lake, missing permissions: one line
                raise CompactError(f"cannot compact {directory}: {exc.strerror or exc}; the lake must be "
                                   "writable by this user") from None  # fmt: skip
            if not dry_run:
                note_pending(lake, f"{table}/{directory.relative_to(root / table)}", next_due)
            result.kept_for_readers += partition.kept_for_readers
            if partition.files_in or partition.leftovers_removed or partition.error:  # something done, or said
                partition.partition = str(directory.relative_to(root / table))
                result.partitions.append(partition)
            if progress is not None and merge:
                progress(done, len(todo))
        if then is not None and not dry_run:
            then()
    result.seconds = time.monotonic() - started
    return result


def _hour_end(directory: Path) -> float:
    """The UNIX time a date=/hour= folder's hour ends; inf for a folder that is no partition."""
    try:
        start = dt.datetime.fromisoformat(f"{directory.parent.name[5:]}T{int(directory.name[5:]):02d}:00:00")
    except ValueError:
        return float("inf")
    return start.replace(tzinfo=dt.timezone.utc).timestamp() + 3600


def _closed_partitions(table_dir: Path, ended_before: float) -> list[Path]:
    """The table's date=/hour= folders whose hour ended before `ended_before` (a UNIX time), oldest first."""
    found = []
    for directory in sorted(table_dir.glob("date=*/hour=*")):
        end = _hour_end(directory)
        if end != float("inf") and end <= ended_before:
            found.append(directory)
    return found


def compacted_from(path: Path) -> list[str] | None:
    """The file names a compacted file replaced; None for a file a writer wrote."""
    return marked(pq.read_metadata(path))


def _compact_partition(
    table: str, directory: Path, group_bytes: int, dry_run: bool, retention: float, merge: bool = True
) -> tuple[PartitionResult, float | None]:
    """Merge a partition's files (unless `merge` is False) and delete the merged inputs whose retention has
    passed; the partition's result and when its next pending deletion is due."""
    # regular files (or links to them) only: a FIFO named like a part file would block the footer's read
    listed = sorted(p for p in directory.glob("*.parquet") if not p.name.startswith(".") and p.is_file())
    footers = read_footers(listed, pq.read_metadata, marked, retention)
    if isinstance(footers, str):
        return PartitionResult(table, "", error=footers), None
    next_due = footers.next_due
    if not dry_run:
        for path in footers.removed:
            path.unlink(missing_ok=True)
    todo = _merges(footers, group_bytes) if merge else []
    result = _partition_result(table, footers)
    if not todo:
        if footers.removed and not dry_run:
            fsync_path(directory)
        return result, next_due
    for group in todo:
        result.files_in += len(group)
        result.bytes_in += sum(p.stat().st_size for p in group)
        result.rows += sum(footers.metas[p].num_rows for p in group)
        if dry_run:
            continue
        try:
            written = _rewrite(table, directory, group, footers.marks, delete_inputs=retention <= 0)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError) as exc:
            result.error = f"{group[0].name} and {len(group) - 1} more left as they were: {exc}"
            continue
        result.files_out += 1
        result.bytes_out += written.stat().st_size
        if retention > 0:
            result.kept_for_readers += len(group)
            due = time.time() + retention
            next_due = due if next_due is None else min(next_due, due)
    return result, next_due


def _partition_result(table: str, footers: Footers) -> PartitionResult:
    """A partition's result before any merge: its merged inputs deleted now, and those kept for readers."""
    removed = len(footers.removed)
    return PartitionResult(table, "", leftovers_removed=removed, kept_for_readers=len(footers.pending) - removed)


def _merges(footers: Footers, group_bytes: int) -> list[list[Path]]:
    """The groups of a partition's files to merge: files no merged file holds, in `_groups`, less a group
    that is one merged file already."""
    files = [p for p in footers.files if p not in footers.pending]
    groups = _groups(files, footers.metas, group_bytes)
    return [g for g in groups if not (len(g) == 1 and footers.marks[g[0]] is not None)]


def _groups(files: list[Path], metas: dict[Path, pq.FileMetaData], group_bytes: int) -> list[list[Path]]:
    """Consecutive files (in name order, i.e. arrival order) of at most `group_bytes` uncompressed bytes
    together; a file over the budget is a group of its own."""
    groups: list[list[Path]] = []
    size = 0
    for path in files:
        meta = metas[path]
        data = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if groups and size + data <= group_bytes:
            groups[-1].append(path)
            size += data
        else:
            groups.append([path])
            size = data
    return groups


def _read(table_name: str, files: list[Path], filesystem: pafs.FileSystem | None = None) -> pa.Table:
    """The rows of `files` in one table: the lake schema's columns first (null where a file lacks one),
    then any other column a file has."""
    # no partition columns inferred from the path
    tables = [pq.ParquetFile(p if filesystem is None else p.as_posix(), filesystem=filesystem).read() for p in files]
    combined = pa.concat_tables([t.replace_schema_metadata(None) for t in tables], promote_options="permissive")
    schema = TABLES[table_name][0]
    columns, names = [], []
    for f in schema:
        if f.name in combined.column_names:
            columns.append(combined[f.name].cast(f.type))
        else:
            columns.append(pa.nulls(combined.num_rows, f.type))
        names.append(f.name)
    for name in combined.column_names:
        if name not in schema.names:
            columns.append(combined[name])
            names.append(name)
    return pa.table(columns, names=names)


def _merged(
    table_name: str, group: list[Path], marks: dict[Path, list[str] | None], filesystem: pafs.FileSystem | None = None
) -> tuple[str, Any]:
    """The stem of the file that replaces `group` and a function writing it (sorted, marked) to a sink.
    `marks`: what the partition's footers say each file replaced (`Footers.marks`), for the complete list of
    what the new file holds (`retention.holds`)."""
    rows = _read(table_name, group, filesystem)
    keys = [(k, "ascending", "at_end") for k in SORT_KEYS[table_name] if k in rows.column_names]
    import pyarrow.compute as pc  # here: every reader imports this module, for its names (~25 ms)

    order = pc.sort_indices(rows, sort_keys=keys)
    schema = rows.schema.with_metadata(
        {
            **(TABLES[table_name][0].metadata or {}),
            MARKER: json.dumps(holds([p.name for p in group], {p.name: m for p, m in marks.items()})).encode(),
            COMPLETE: b"1",
            COMPACTED_AT: stamp(),  # when its inputs' retention starts (tracevals.lake.retention)
        }
    )
    # named after the newest file it holds, so that it sorts where that file did: before every file that
    # arrives later (the views' tie-break between two copies of a span prefers the later file)
    newest_name = COMPACTED_NAME.sub("", group[-1].name).removesuffix(".parquet")
    stem = f"{newest_name}-c{uuid.uuid4().hex[:8]}"
    bloom = {name: {"ndv": ROW_GROUP_ROWS, "fpp": BLOOM_FPP} for name in BLOOM_COLUMNS if name in rows.column_names}
    dictionary = [c for c in DICTIONARY_COLUMNS.get(table_name, []) if c in rows.column_names]

    def write(sink: Any) -> None:
        with pq.ParquetWriter(
            sink, schema, compression="zstd", use_dictionary=dictionary, bloom_filter_options=bloom
        ) as writer:
            for start in range(0, rows.num_rows, ROW_GROUP_ROWS):
                part = rows.take(order[start : start + ROW_GROUP_ROWS])
                writer.write_table(part.replace_schema_metadata(schema.metadata), row_group_size=ROW_GROUP_ROWS)

    return stem, write


def _rewrite(
    table_name: str, directory: Path, group: list[Path], marks: dict[Path, list[str] | None], delete_inputs: bool
) -> Path:
    stem, write = _merged(table_name, group, marks)
    tmp = directory / f"{TMP_PREFIX}{stem}.parquet.tmp"
    final = directory / f"{stem}.parquet"
    try:
        write(tmp)
        # the newest source's modification time, not now's: to live scoring (queries.live_source.NewFiles)
        # the file is then no newer than the files it holds
        newest = max(p.stat().st_mtime for p in group)
        os.utime(tmp, (newest, newest))
        fsync_path(tmp)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_path(directory)
    if delete_inputs:  # no retention: no reader is waited for
        for path in group:
            path.unlink(missing_ok=True)
        fsync_path(directory)
    return final
