"""Compaction of a lake on object storage (`s3://…`): `tracevals.lake.compact`'s partitions, groups, sort,
footer marker and retention, through the `ObjectLake`'s filesystem.

The merged file is encoded in memory and uploaded whole to its final key (one PUT: an object is visible
only once its upload completed); the files it replaced stay for the retention period
(`tracevals.lake.retention`) and a later compaction deletes them, as on local disk. An object store has no
lock file: compactions of one lake take the lease `compaction` in the lake (`tracevals.lake.leases`)
instead, so two of them (two `tracevals run` ending together, a cron job beside them) never merge the same
files twice. Modification times cannot be set, so live scoring, which reads local lakes only, is not
concerned.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from tracevals.lake.compact import (
    SORT_KEYS,
    CompactError,
    CompactResult,
    PartitionResult,
    _hour_end,
    _merged,
    _merges,
    _partition_result,
)
from tracevals.lake.lake import Lake
from tracevals.lake.paths import LakeError
from tracevals.lake.retention import marked, note_pending, pending_partitions, read_footers


def compact_remote(
    lake: Lake,
    min_age_s: float,
    group_bytes: int,
    now: float | None,
    dry_run: bool,
    progress: Callable[[int, int], None] | None,
    since: float | None,
    retention: float,
    wait_s: float,
) -> CompactResult:
    """`compact` on object storage (see the module)."""
    with _lease(lake, dry_run, wait_s):
        started = time.monotonic()
        now = time.time() if now is None else now
        fs = lake.filesystem
        try:
            listed = {table: lake.list_parquet(table, replaced=True) for table in SORT_KEYS}
        except LakeError as exc:
            raise CompactError(str(exc)) from None
        due = set() if dry_run else set(pending_partitions(lake, time.time()))
        result = CompactResult()
        todo: list[tuple[str, Path, list[pafs.FileInfo], bool]] = []
        for table, infos in listed.items():
            partitions: dict[Path, list[pafs.FileInfo]] = {}
            for info in infos:
                partitions.setdefault(Path(info.path).parent, []).append(info)
            for directory, files in sorted(partitions.items()):
                end = _hour_end(directory)
                if end == float("inf"):
                    continue
                sweep = f"{table}/{directory.parent.name}/{directory.name}" in due
                if end > now - min_age_s or (since is not None and end <= since):
                    if end > now - min_age_s:
                        result.too_young.append(f"{table}/{directory.parent.name}/{directory.name}")
                    if sweep:  # only its merged inputs that are due go
                        todo.append((table, directory, files, False))
                    continue
                todo.append((table, directory, files, True))
        merges = sum(1 for *_, merge in todo if merge)
        done = 0
        for table, directory, files, merge in todo:
            partition, next_due = _partition(lake, fs, table, directory, files, group_bytes, dry_run, retention, merge)
            name = f"{directory.parent.name}/{directory.name}"
            if not dry_run:
                note_pending(lake, f"{table}/{name}", next_due)
            result.kept_for_readers += partition.kept_for_readers
            if partition.files_in or partition.leftovers_removed or partition.error:  # something done, or said
                partition.partition = name
                result.partitions.append(partition)
            if progress is not None and merge:
                done += 1
                progress(done, merges)
        result.seconds = time.monotonic() - started
        return result


@contextmanager
def _lease(lake: Lake, dry_run: bool, wait_s: float) -> Iterator[None]:
    """The lake's `compaction` lease, held while the block runs (a dry run takes none)."""
    from tracevals.lake.leases import Lease, LeaseBusy

    try:
        lake.check()
        lease = None if dry_run else Lease(lake, "compaction", "lake", "tracevals compact").acquire(wait=wait_s)
    except LeaseBusy as busy:
        where = busy.holder.describe() if busy.holder else "another process"
        raise CompactError(f"another compaction of {lake} is running ({where}); wait for it to finish") from None
    except LakeError as exc:
        raise CompactError(str(exc)) from None
    try:
        yield
    finally:
        if lease is not None:
            lease.release()


def _partition(
    lake: Lake,
    fs: pafs.FileSystem,
    table: str,
    directory: Path,
    infos: list[pafs.FileInfo],
    group_bytes: int,
    dry_run: bool,
    retention: float,
    merge: bool,
) -> tuple[PartitionResult, float | None]:
    from tracevals.lake.storage import put_bytes

    sizes = {Path(i.path): i.size or 0 for i in infos}
    footers = read_footers(list(sizes), lambda p: pq.read_metadata(p.as_posix(), filesystem=fs), marked, retention)
    if isinstance(footers, str):
        return PartitionResult(table, "", error=footers), None
    next_due = footers.next_due
    if not dry_run:
        for path in footers.removed:
            try:
                fs.delete_file(path.as_posix())
            except FileNotFoundError:
                continue
            except OSError as exc:
                error = str(lake.error(exc, "deleting a merged input of"))
                return PartitionResult(table, "", error=error), next_due
    todo = _merges(footers, group_bytes) if merge else []
    result = _partition_result(table, footers)
    if not todo:
        return result, next_due
    for group in todo:
        result.files_in += len(group)
        result.bytes_in += sum(sizes[p] for p in group)
        result.rows += sum(footers.metas[p].num_rows for p in group)
        if dry_run:
            continue
        try:
            stem, write = _merged(table, group, footers.marks, fs)
            sink = pa.BufferOutputStream()
            write(sink)
            data = sink.getvalue()
            put_bytes(fs, f"{directory.as_posix()}/{stem}.parquet", data)  # the whole file, one PUT
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError) as exc:
            result.error = f"{group[0].name} and {len(group) - 1} more left as they were: {exc}"
            continue
        result.files_out += 1
        result.bytes_out += data.size
        if retention <= 0:  # no reader is waited for: the inputs go now that the merged object exists
            for path in group:
                try:
                    fs.delete_file(path.as_posix())
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    result.error = str(lake.error(exc, "deleting a compacted file of"))
            continue
        result.kept_for_readers += len(group)
        due = time.time() + retention
        next_due = due if next_due is None else min(next_due, due)
    return result, next_due
