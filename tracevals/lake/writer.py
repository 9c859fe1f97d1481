"""The one Parquet writer behind both the embedded default and the collector.

Rows are grouped by the UTC date and hour of their start time and written to
`LAKE/spans/date=YYYY-MM-DD/hour=HH/part-<time>-<uuid>.parquet`. Each file is written under a
hidden temporary name, fsynced, then renamed into place, so a reader never sees a partial file and a
crash leaves at worst a `.tmp` file that no reader's glob matches. On object storage (`s3://…`, see
`tracevals.lake.storage`), which has no rename, each file is encoded in memory and uploaded whole to its
final key in one PUT: an object is visible only once its upload completed, so a reader never sees a
partial one either, and the write returns (the export succeeds) only after the upload did.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from tracevals.lake.lake import Lake, LakeLike
from tracevals.lake.schema import LOG_SCHEMA, LOGS_DIR, SPAN_SCHEMA, SPANS_DIR, int64_scalar, pylist_table


class ObjectURL(str):
    """The URL of an object in a remote lake (`s3://bucket/lake/scores/part-….parquet`), with the two parts of
    a path that callers name (`parent`, `name`)."""

    @property
    def parent(self) -> ObjectURL:
        return ObjectURL(self.rsplit("/", 1)[0])

    @property
    def name(self) -> str:
        return self.rsplit("/", 1)[-1]


#: A file written into a lake: a local path, or the URL of an object.
LakeFile = Path | ObjectURL

# table name -> (schema, the column whose time picks the date/hour partition)
TABLES: dict[str, tuple[pa.Schema, str]] = {
    SPANS_DIR: (SPAN_SCHEMA, "start_time"),
    LOGS_DIR: (LOG_SCHEMA, "time"),
}


_HOUR_NS = 3_600 * 10**9


_Rows = TypeVar("_Rows", pa.Table, pa.RecordBatch)


def _hours(table: pa.Table | pa.RecordBatch, table_name: str) -> Any:
    """Each row's hour (whole hours since the epoch, UTC) of its table's time column: its partition."""
    import pyarrow.compute as pc  # imported by the writes alone: ~40 ms that a command which only reads never pays

    times = table[TABLES[table_name][1]].cast(pa.int64())  # never negative
    return pc.divide(times, int64_scalar(_HOUR_NS))


def hour_parts(table: pa.Table, table_name: str) -> list[tuple[tuple[str, str], pa.Table]]:
    """A non-empty table's rows by the UTC (date, hour) of its time column, in time order, each hour's rows
    in their order: the partitions both writers (this one and the collector's sink) put them in."""
    return [(_partition(hour), part) for hour, part in _by_hour(table, table_name)]


def _partition(hour_bucket: int) -> tuple[str, str]:
    t = time.gmtime(hour_bucket * 3600)
    return time.strftime("%Y-%m-%d", t), f"{t.tm_hour:02d}"


# Rows per Parquet row group, as the collector writes them (one per batch of `send_batch_size`, 8192 by
# default): a reader looking for a few traces decompresses only the row groups that hold them.
ROW_GROUP_ROWS = 8192
# Split-block Bloom filters on the id columns lookups filter on (a session's traces, a trace's spans).
# Ids are random, so a row group's min/max statistics span nearly every id and prune nothing; a Bloom
# filter lets DuckDB skip the row groups that do not hold the id (equality and IN-list filters). Sized
# for every row of a row group being distinct, at a 0.1% false-positive rate: 16 KiB per column and row
# group (Parquet rounds a filter up to a power of two; 1% would take the same 16 KiB).
BLOOM_COLUMNS = ("trace_id", "session_id")
BLOOM_FPP = 0.001


def bloom_filter_options(schema: pa.Schema) -> dict[str, dict[str, Any]]:
    """pyarrow's `bloom_filter_options` for a table of `schema`: the id columns it has."""
    return {name: {"ndv": ROW_GROUP_ROWS, "fpp": BLOOM_FPP} for name in BLOOM_COLUMNS if name in schema.names}


def new_file_name() -> str:
    """A new part file's name: sorts by the time it was written, unique across writers."""
    return f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.parquet"


def write_table_atomically(table: pa.Table, directory: Path, compression: str = "zstd") -> Path:
    """Write `table` as a new Parquet file in `directory`: temp file, fsync, rename, fsync dir."""
    tmp, final = _new_file(directory)
    with discarded_on_error(tmp):
        write_stream([table], table.schema, str(tmp), compression, keep_empty=True)
        commit(tmp, final)
    return final


def write_stream(
    tables: Iterable[pa.Table], schema: pa.Schema, sink: Any, compression: str = "zstd", keep_empty: bool = False
) -> int:
    """Write each of `tables` (of `schema`) as row groups of one Parquet file to `sink` (a path or a stream),
    with the lake's row groups and bloom filters; the rows written (an empty table is written only with
    `keep_empty`: a file of no row)."""
    rows = 0
    options = bloom_filter_options(schema)
    with pq.ParquetWriter(sink, schema, compression=compression, bloom_filter_options=options) as writer:
        for table in tables:
            if table.num_rows or keep_empty:
                if table.schema != schema:
                    table = table.select(schema.names).cast(schema)
                writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
                rows += table.num_rows
            del table  # not held while the next one is made
    return rows


def write_tables_atomically(
    tables: Iterable[pa.Table], schema: pa.Schema, directory: Path, compression: str = "zstd"
) -> Path | None:
    """Write `tables` as one new Parquet file in `directory`, a table after another (each dropped once
    written): a temporary file published (renamed) after the last, so a reader sees all of them or none, and
    a failure on the way (an exception from `tables` itself) leaves nothing. None when they held no row."""
    tmp, final = _new_file(directory)
    with discarded_on_error(tmp):
        if not write_stream(tables, schema, str(tmp), compression):
            tmp.unlink()
            return None
        commit(tmp, final)
    return final


def _new_file(directory: Path) -> tuple[Path, Path]:
    """A new file's temporary path and final path in `directory` (created if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    name = new_file_name()
    return directory / f".{name.removesuffix('.parquet')}.parquet.tmp", directory / name


@contextlib.contextmanager
def discarded_on_error(tmp: Path) -> Iterator[None]:
    """Delete the temporary file `tmp` if the block fails: a write that fails (a full disk) may have created
    it already, and nobody would delete it before the writer's next start."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit(tmp: Path, final: Path) -> None:
    """Make a fully written temporary file visible under its final name, durably: fsync it, rename it
    into place, fsync the folder (a reader never sees a partial file; a crash leaves at worst the temp)."""
    fsync_path(tmp)
    os.replace(tmp, final)
    fsync_path(final.parent)


def write_bytes_atomically(data: bytes, path: Path) -> Path:
    """Write `data` to `path` as `write_table_atomically` writes Parquet: temp file, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    with discarded_on_error(tmp):
        tmp.write_bytes(data)
        commit(tmp, path)
    return path


class Spill:
    """Rows of lake tables kept on disk until they are written (`LakeWriter.write_spilled`), so that a command
    that writes only once everything it read is checked (`tracevals ingest`) holds one batch of rows in
    memory, not all of them: an Arrow IPC file per table in `folder` (a temporary directory the caller
    removes), appended a table at a time, each record batch the rows of one hour (a batch across hours is
    cut by hour as it is added, so that each row is read back once, whatever the hours an input spans)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._writers: dict[str, Any] = {}
        self.hours: dict[str, list[int]] = {}  # table name -> the hour of each record batch, in file order

    def path(self, table_name: str) -> Path:
        return self.folder / f"{table_name}.arrow"

    def add(self, table: pa.Table, table_name: str = SPANS_DIR) -> None:
        """Append `table` (of the table's schema, or one it casts to) to the table's file."""
        if table.num_rows == 0:
            return
        schema = TABLES[table_name][0]
        writer = self._writers.get(table_name)
        if writer is None:
            writer = self._writers[table_name] = pa.ipc.new_file(str(self.path(table_name)), schema)
            self.hours[table_name] = []
        for batch in table.cast(schema).to_batches():
            for hour, part in _by_hour(batch, table_name):
                writer.write_batch(part)
                self.hours[table_name].append(hour)

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def parts(self, table_name: str) -> Iterator[tuple[tuple[str, str], Iterator[pa.Table]]]:
        """The table's rows by (date, hour) partition, in time order, each as tables of whole row groups
        (`ROW_GROUP_ROWS`, the last one the rest): read from the file a record batch at a time, in the order
        they were added."""
        self.close()
        hours = self.hours.get(table_name, [])
        if not hours:
            return
        with pa.OSFile(str(self.path(table_name))) as source:
            reader = pa.ipc.open_file(source)
            for hour in sorted(set(hours)):
                yield _partition(hour), self._rows_of(reader, [i for i, h in enumerate(hours) if h == hour])

    @staticmethod
    def _rows_of(reader: Any, batches: list[int]) -> Iterator[pa.Table]:
        held: list[pa.RecordBatch] = []
        rows = 0
        for i in batches:
            batch = reader.get_batch(i)
            held.append(batch)
            rows += batch.num_rows
            if rows >= ROW_GROUP_ROWS:
                table = pa.Table.from_batches(held)
                whole = rows - rows % ROW_GROUP_ROWS
                yield table.slice(0, whole)
                held, rows = table.slice(whole).to_batches(), rows - whole
        if rows:
            yield pa.Table.from_batches(held, schema=reader.schema)


def _by_hour(rows: _Rows, table_name: str) -> list[tuple[int, _Rows]]:
    """A table's or record batch's rows by hour (`_hours`), in hour order, each hour's rows in their order."""
    if not rows.num_rows:
        return []
    import pyarrow.compute as pc

    hours = _hours(rows, table_name)
    bounds = pc.min_max(hours).as_py()
    if bounds["min"] == bounds["max"]:
        return [(bounds["min"], rows)]
    order = pc.sort_indices(hours)  # a stable sort: rows of one hour keep their order
    rows, hours = rows.take(order), hours.take(order)
    counts = pc.value_counts(hours)  # in order of appearance: the hours ascending
    out, at = [], 0
    for hour, count in zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True):
        out.append((hour, rows.slice(at, count)))
        at += count
    return out


class LakeWriter:
    """Writes rows (dicts with the columns of `SPAN_SCHEMA` or `LOG_SCHEMA`) into a lake: a `Lake`, or what
    `Lake.open` takes (a directory, an object-store URL `s3://bucket/prefix`)."""

    def __init__(self, lake: LakeLike, compression: str = "zstd") -> None:
        self.lake = Lake.open(lake)
        self.compression = compression
        self._lock = threading.Lock()
        self.files_written = 0
        self.rows_written = 0

    def write_rows(self, rows: Iterable[Mapping[str, Any]], table_name: str = SPANS_DIR) -> list[LakeFile]:
        """Write rows (dicts with the table's columns), a file per hour."""
        schema, _ = TABLES[table_name]
        return self.write_table(pylist_table(list(rows), schema), table_name)

    def write_table(self, table: pa.Table, table_name: str = SPANS_DIR) -> list[LakeFile]:
        """Write a table of the lake's schema (e.g. from `collector.conversion.rows.spans_table`), a file per hour."""
        if table.num_rows == 0:
            return []
        table = table.cast(TABLES[table_name][0])
        written: list[LakeFile] = []
        with self._lock:
            for (date, hour), part in hour_parts(table, table_name):
                folder = f"{table_name}/date={date}/hour={hour}"
                written.append(self.lake.write_table(folder, part, self.compression))
                self.files_written += 1
                self.rows_written += part.num_rows
        return written

    def write_spilled(self, spill: Spill, table_name: str = SPANS_DIR) -> list[LakeFile]:
        """Write a table's rows held in `spill` as `write_table` writes them (a file per hour, the same row
        groups), with one batch of them in memory at a time."""
        schema = TABLES[table_name][0]
        written: list[LakeFile] = []
        with self._lock:
            for (date, hour), tables in spill.parts(table_name):
                counted = _Counted(tables)
                file = self.lake.write_tables(
                    f"{table_name}/date={date}/hour={hour}", counted, schema, self.compression
                )
                if file is not None:
                    written.append(file)
                    self.files_written += 1
                    self.rows_written += counted.rows
        return written


class _Counted:
    """Tables passed through, their rows counted."""

    def __init__(self, tables: Iterator[pa.Table]) -> None:
        self._tables = tables
        self.rows = 0

    def __iter__(self) -> Iterator[pa.Table]:
        for table in self._tables:
            self.rows += table.num_rows
            yield table
