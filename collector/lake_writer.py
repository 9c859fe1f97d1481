"""The one Parquet writer behind both the embedded default and the collector.

Rows are grouped by the UTC date and hour of their start time and written to
`LAKE/spans/date=YYYY-MM-DD/hour=HH/part-<time>-<uuid>.parquet`. Each file is written under a
hidden temporary name, fsynced, then renamed into place, so a reader never sees a partial file and a
crash leaves at worst a `.tmp` file that no reader's glob matches.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tracevals.collector.schema import LOG_SCHEMA, LOGS_DIR, SPAN_SCHEMA, SPANS_DIR

# table name -> (schema, the column whose time picks the date/hour partition)
TABLES: dict[str, tuple[pa.Schema, str]] = {
    SPANS_DIR: (SPAN_SCHEMA, "start_time"),
    LOGS_DIR: (LOG_SCHEMA, "time"),
}


def _partition(start_time: int | datetime) -> tuple[str, str]:
    seconds = start_time.timestamp() if isinstance(start_time, datetime) else int(start_time) / 1e9
    t = time.gmtime(seconds)
    return time.strftime("%Y-%m-%d", t), f"{t.tm_hour:02d}"


_HOUR_NS = 3_600 * 10**9
# Rows per Parquet row group, as the collector writes them (one per batch of `send_batch_size`, 8192 by
# default): a reader looking for a few traces decompresses only the row groups that hold them.
ROW_GROUP_ROWS = 8192


def write_table_atomically(table: pa.Table, directory: Path, compression: str = "zstd") -> Path:
    """Write `table` as a new Parquet file in `directory`: temp file, fsync, rename, fsync dir."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"
    tmp = directory / f".{stem}.parquet.tmp"
    final = directory / f"{stem}.parquet"
    pq.write_table(table, tmp, compression=compression, row_group_size=ROW_GROUP_ROWS)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return final


class LakeWriter:
    """Writes rows (dicts with the columns of `SPAN_SCHEMA` or `LOG_SCHEMA`) into a lake directory."""

    def __init__(self, lake: str | os.PathLike[str], compression: str = "zstd") -> None:
        self.lake = Path(lake)
        self.compression = compression
        self._lock = threading.Lock()
        self.files_written = 0
        self.rows_written = 0

    def write_rows(self, rows: Iterable[Mapping[str, Any]], table_name: str = SPANS_DIR) -> list[Path]:
        schema, time_column = TABLES[table_name]
        groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
        for row in rows:
            groups[_partition(row[time_column])].append(row)
        parts = [(key, pa.Table.from_pylist(list(group), schema=schema)) for key, group in sorted(groups.items())]
        return self._write(parts, table_name)

    def write_table(self, table: pa.Table, table_name: str = SPANS_DIR) -> list[Path]:
        """Write a table of the lake's schema (e.g. from `otlp_arrow.spans_table`), a file per hour."""
        schema, time_column = TABLES[table_name]
        table = table.cast(schema)
        hours = pc.divide(table.column(time_column).cast(pa.int64()), _HOUR_NS)  # times are never negative
        parts = []
        for hour in sorted(pc.unique(hours).to_pylist()):
            parts.append((_partition(hour * _HOUR_NS), table.filter(pc.equal(hours, hour))))
        return self._write(parts, table_name)

    def _write(self, parts: list[tuple[tuple[str, str], pa.Table]], table_name: str) -> list[Path]:
        written: list[Path] = []
        with self._lock:
            for (date, hour), table in parts:
                directory = self.lake / table_name / f"date={date}" / f"hour={hour}"
                written.append(write_table_atomically(table, directory, self.compression))
                self.files_written += 1
                self.rows_written += table.num_rows
        return written
