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

The commit is the writers' (temporary file, fsync, rename, fsync the folder); only then are the files
it replaced deleted. The new file names them in its footer (`tracevals.compacted_from`), so a crash
between the two steps leaves at worst rows twice on disk, which the views count once (`spans`
deduplicates), and the next run deletes the leftovers before anything else. Files that arrive while a
partition is being compacted are left for the next run. An exclusive lock on `LAKE/.compact.lock` keeps
two compactions apart; writers and readers do not take it (a reader that listed a file just before it
was deleted fails once and succeeds when run again).

A lake on object storage (`s3://…`) is compacted the same way, through `lake_filesystem`: the merged file is
encoded in memory and uploaded whole to its final key (one PUT: an object is visible only once its upload
completed), and only after that upload succeeded are the files it replaced deleted. A reader that lists the
partition between the two sees the rows twice, which the views count once, exactly as locally; a crash
between them leaves leftovers that the next run deletes first (the footer marker). An object store has no
lock: run one compaction of a lake at a time (one cron job); modification times cannot be set, so live
scoring, which reads local lakes only, is not concerned.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from tracevals.lake.lake import Lake, LakeLike
from tracevals.lake.schema import LOGS_DIR, SPANS_DIR
from tracevals.lake.sink import DICTIONARY_COLUMNS
from tracevals.lake.writer import BLOOM_COLUMNS, BLOOM_FPP, TABLES, fsync_path
from tracevals.model.errors import UserError

# Rows per row group of a compacted file: sorted by session, a lookup reads the one or two row groups of
# its session; at 8,192 rows it probed twice the row groups, at 65,536 it decompressed four times the
# rows (bench/queries_scale.py, docs/lake.md).
ROW_GROUP_ROWS = 16384
# The footer key that names the files a compacted file replaced (a JSON list of file names).
MARKER = b"tracevals.compacted_from"
# Uncompressed bytes (the files' own row-group sizes) compacted into one file. Peak memory is about four
# times the group's bytes plus ~80 MB (the rows in Arrow are ~2x their Parquet size, then the sort and the
# row group being written): 790-900 MB for an hour of 500,000 bench spans, 176 MB uncompressed. A file larger
# than this is rewritten on its own (the collector's are bounded by its rotation, 500,000 rows by default).
GROUP_BYTES = 128 * 1024**2
MIN_AGE_S = 3600.0
_TMP_PREFIX = ".compact-"

# The end of a compacted file's name (`<newest file's name>-c<8 hex>.parquet`).
COMPACTED_NAME = re.compile(r"(-c[0-9a-f]{8})+(?=\.parquet$)")

SORT_KEYS: dict[str, list[str]] = {
    SPANS_DIR: ["session_id", "trace_id", "start_time", "span_id"],
    LOGS_DIR: ["trace_id", "span_id", "time"],
}


class CompactError(UserError):
    """The lake cannot be compacted (not a lake, another compaction holds its lock)."""


@dataclass
class PartitionResult:
    table: str
    partition: str  # date=…/hour=…
    files_in: int = 0
    files_out: int = 0
    rows: int = 0
    bytes_in: int = 0  # on disk
    bytes_out: int = 0
    leftovers_removed: int = 0  # files a crashed run had already compacted
    error: str | None = None  # why this partition was left as it was


@dataclass
class CompactResult:
    partitions: list[PartitionResult] = field(default_factory=list)
    seconds: float = 0.0
    stale_removed: int = 0
    too_young: list[str] = field(default_factory=list)  # "table/date=../hour=..": not ended min_age_s ago

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
) -> CompactResult:
    """Compact every hour partition of the lake's spans and logs that ended at least `min_age_s` ago
    and is not compacted yet; `dry_run` lists what would be done. progress(done, total) per partition.
    `since` (a UNIX time): only the hours that end after it (a negative `min_age_s` takes in the hour
    that is still running: `tracevals run` compacts the hours it wrote once its attempts are all in)."""
    lake = Lake.open(lake)
    root = lake.local_folder
    if root is None:  # object storage: no rename, no lock (see the module's docstring)
        return _compact_remote(lake, min_age_s, group_bytes, now, dry_run, progress, since)
    if not root.is_dir():
        raise CompactError(f"lake {lake.location!r} is not a directory; pass the folder that holds spans/")
    started = time.monotonic()
    now = time.time() if now is None else now
    result = CompactResult()
    with _locked(root, dry_run):
        if not dry_run:
            result.stale_removed = _remove_stale(root)
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
        for done, (table, directory) in enumerate(todo, 1):
            partition = _compact_partition(table, directory, group_bytes, dry_run)
            if partition is not None:
                partition.partition = str(directory.relative_to(root / table))
                result.partitions.append(partition)
            if progress is not None:
                progress(done, len(todo))
    result.seconds = time.monotonic() - started
    return result


@contextmanager
def _locked(root: Path, dry_run: bool) -> Iterator[None]:
    if dry_run:
        yield
        return
    fd = os.open(root / ".compact.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CompactError(f"another compaction of {root} is running; wait for it to finish") from None
        yield
    finally:
        os.close(fd)  # releases the lock


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


def _remove_stale(root: Path) -> int:
    """Delete every compaction's temporary file: called with the lock held, so no compaction is writing one
    and each is a killed run's leftover, whatever its age."""
    removed = 0
    for table in SORT_KEYS:
        for path in (root / table).rglob(f"{_TMP_PREFIX}*.parquet.tmp"):
            try:
                path.unlink()
                removed += 1
            except FileNotFoundError:
                continue
    return removed


def compacted_from(path: Path) -> list[str] | None:
    """The file names a compacted file replaced; None for a file a writer wrote."""
    return _marked(pq.read_metadata(path))


def _marked(meta: pq.FileMetaData) -> list[str] | None:
    value = (meta.metadata or {}).get(MARKER)
    return None if value is None else [str(name) for name in json.loads(value)]


def _compact_partition(table: str, directory: Path, group_bytes: int, dry_run: bool) -> PartitionResult | None:
    files = sorted(p for p in directory.glob("*.parquet") if not p.name.startswith("."))
    metas: dict[Path, pq.FileMetaData] = {}
    for path in files:
        try:
            metas[path] = pq.read_metadata(path)
        except (pa.ArrowInvalid, OSError) as exc:  # not Parquet, truncated, unreadable: touch nothing here
            error = f"{path.name} is not a readable Parquet file ({exc}); move it out of the lake"
            return PartitionResult(table, "", error=error)
    marks = {p: _marked(m) for p, m in metas.items()}
    # a crashed run's leftovers: files a compacted file already holds (a file never names itself)
    replaced = {name for names in marks.values() if names for name in names}
    leftovers = [p for p in files if p.name in replaced]
    if not dry_run:
        for path in leftovers:
            path.unlink(missing_ok=True)
    files = [p for p in files if p not in leftovers]
    groups = _groups(files, metas, group_bytes)
    todo = [g for g in groups if not (len(g) == 1 and marks[g[0]] is not None)]
    if not todo:
        if leftovers:
            fsync_path(directory)
            return PartitionResult(table, "", leftovers_removed=len(leftovers))
        return None
    result = PartitionResult(table, "", leftovers_removed=len(leftovers))
    for group in todo:
        result.files_in += len(group)
        result.bytes_in += sum(p.stat().st_size for p in group)
        result.rows += sum(metas[p].num_rows for p in group)
        if dry_run:
            continue
        try:
            written = _rewrite(table, directory, group)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError) as exc:
            result.error = f"{group[0].name} and {len(group) - 1} more left as they were: {exc}"
            continue
        result.files_out += 1
        result.bytes_out += written.stat().st_size
    return result


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


def _merged(table_name: str, group: list[Path], filesystem: pafs.FileSystem | None = None) -> tuple[str, Any]:
    """The stem of the file that replaces `group` and a function writing it (sorted, marked) to a sink."""
    rows = _read(table_name, group, filesystem)
    keys = [(k, "ascending", "at_end") for k in SORT_KEYS[table_name] if k in rows.column_names]
    order = pc.sort_indices(rows, sort_keys=keys)
    schema = rows.schema.with_metadata(
        {**(TABLES[table_name][0].metadata or {}), MARKER: json.dumps([p.name for p in group]).encode()}
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


def _rewrite(table_name: str, directory: Path, group: list[Path]) -> Path:
    stem, write = _merged(table_name, group)
    tmp = directory / f"{_TMP_PREFIX}{stem}.parquet.tmp"
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
    for path in group:
        path.unlink(missing_ok=True)
    fsync_path(directory)
    return final


# -- a lake on object storage ------------------------------------------------------------------


def _compact_remote(
    lake: Lake,
    min_age_s: float,
    group_bytes: int,
    now: float | None,
    dry_run: bool,
    progress: Callable[[int, int], None] | None,
    since: float | None,
) -> CompactResult:
    """`compact` on object storage: the same partitions, groups, sort and marker; each merged file one PUT,
    the files it replaced deleted after that upload succeeded (see the module's docstring)."""
    from tracevals.lake.paths import LakeError

    started = time.monotonic()
    now = time.time() if now is None else now
    fs = lake.filesystem
    try:
        lake.check()
        listed = {table: lake.list_parquet(table) for table in SORT_KEYS}
    except LakeError as exc:
        raise CompactError(str(exc)) from None
    result = CompactResult()
    todo: list[tuple[str, Path, list[pafs.FileInfo]]] = []
    for table, infos in listed.items():
        partitions: dict[Path, list[pafs.FileInfo]] = {}
        for info in infos:
            partitions.setdefault(Path(info.path).parent, []).append(info)
        for directory, files in sorted(partitions.items()):
            end = _hour_end(directory)
            if end == float("inf"):
                continue
            if end > now - min_age_s or (since is not None and end <= since):
                if end > now - min_age_s:
                    result.too_young.append(f"{table}/{directory.parent.name}/{directory.name}")
                continue
            todo.append((table, directory, files))
    for done, (table, directory, files) in enumerate(todo, 1):
        partition = _compact_remote_partition(lake, fs, table, directory, files, group_bytes, dry_run)
        if partition is not None:
            partition.partition = f"{directory.parent.name}/{directory.name}"
            result.partitions.append(partition)
        if progress is not None:
            progress(done, len(todo))
    result.seconds = time.monotonic() - started
    return result


def _compact_remote_partition(
    lake: Lake,
    fs: pafs.FileSystem,
    table: str,
    directory: Path,
    infos: list[pafs.FileInfo],
    group_bytes: int,
    dry_run: bool,
) -> PartitionResult | None:
    from tracevals.lake.storage import put_bytes

    files = [Path(i.path) for i in infos]
    sizes = {Path(i.path): i.size or 0 for i in infos}
    metas: dict[Path, pq.FileMetaData] = {}
    for path in files:
        try:
            metas[path] = pq.read_metadata(path.as_posix(), filesystem=fs)
        except (pa.ArrowInvalid, OSError) as exc:
            error = f"{path.name} is not a readable Parquet file ({exc}); move it out of the lake"
            return PartitionResult(table, "", error=error)
    marks = {p: _marked(m) for p, m in metas.items()}
    replaced = {name for names in marks.values() if names for name in names}
    leftovers = [p for p in files if p.name in replaced]
    if not dry_run:
        for path in leftovers:
            try:
                fs.delete_file(path.as_posix())
            except FileNotFoundError:
                continue
            except OSError as exc:
                return PartitionResult(table, "", error=str(lake.error(exc, "deleting a leftover of")))
    files = [p for p in files if p not in leftovers]
    todo = [g for g in _groups(files, metas, group_bytes) if not (len(g) == 1 and marks[g[0]] is not None)]
    if not todo:
        return PartitionResult(table, "", leftovers_removed=len(leftovers)) if leftovers else None
    result = PartitionResult(table, "", leftovers_removed=len(leftovers))
    for group in todo:
        result.files_in += len(group)
        result.bytes_in += sum(sizes[p] for p in group)
        result.rows += sum(metas[p].num_rows for p in group)
        if dry_run:
            continue
        try:
            stem, write = _merged(table, group, fs)
            sink = pa.BufferOutputStream()
            write(sink)
            data = sink.getvalue()
            put_bytes(fs, f"{directory.as_posix()}/{stem}.parquet", data)  # the whole file, one PUT
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError) as exc:
            result.error = f"{group[0].name} and {len(group) - 1} more left as they were: {exc}"
            continue
        # only now that the merged object exists: the files it replaced go (a reader in between counts each
        # row once through the views; a crash here leaves leftovers the next run deletes first)
        for path in group:
            try:
                fs.delete_file(path.as_posix())
            except FileNotFoundError:
                continue
            except OSError as exc:
                result.error = str(lake.error(exc, "deleting a compacted file of"))
        result.files_out += 1
        result.bytes_out += data.size
    return result
