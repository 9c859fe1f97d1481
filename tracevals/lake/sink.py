"""The collector's Parquet exporter: row groups appended to open files, committed on rotation.

Each (table, date, hour) partition has at most one open file, written under a hidden temporary name
(`.part-….<owner>.parquet.tmp`, which no reader's `*.parquet` glob matches). Rotation — by rows, bytes on
disk or age, whichever comes first — closes every open file, fsyncs it, renames it into place and
fsyncs the folder: the same commit as `lake_writer.write_table_atomically`, so a reader never sees a
partial file. Until then the rows are safe in the write-ahead log; a crash leaves `.tmp` files that
`remove_stale` deletes on the next start, before the log is replayed: only this sink's own (`owner`, one
per write-ahead log), since other writers may share the lake (another collector with its own log, an
agent's embedded writer, `tracevals ingest`), and a temporary file of theirs is a write in progress.

A lake on object storage (`lake` an `s3://…` URL, `staging` a local folder: the collector's write-ahead
log's `staging/`): the open files are written and fsynced on local disk under `staging`, and publishing
one uploads it whole to its final key (one PUT; a multipart upload for a large file, which S3 also makes
visible only once it completes) and then deletes the local copy. Publishing is idempotent (a file whose
local copy is gone was uploaded), so a journalled commit that a crash interrupted is finished by uploading
again what is still staged.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tracevals.lake.lake import Lake
from tracevals.lake.writer import (
    ROW_GROUP_ROWS,
    TABLES,
    bloom_filter_options,
    discarded_on_error,
    fsync_path,
    hour_parts,
)

# Dictionary-encode only columns with few distinct values: on ids and attribute JSON a dictionary
# never pays off, and building it doubled the cost of writing spans (measured with bench/ingest.py).
DICTIONARY_COLUMNS = {
    "spans": [
        "name", "span_kind", "status_code", "resource_attributes", "scope_name", "scope_version", "service_name",
        "dialect", "normalizer_version", "kind", "operation", "agent_name", "provider", "model", "tool_name",
        "tool_effect", "error_type", "run_id", "task_id", "variant",
    ],
    "logs": ["event_name", "severity_text", "resource_attributes", "scope_name", "service_name"],
}  # fmt: skip


LEGACY_STALE_S = 3600.0  # an ownerless temporary file older than this is a crash's leftover


@dataclass
class _OpenFile:
    writer: pq.ParquetWriter
    tmp: Path
    final: Path  # on a remote lake: the object's path on the lake's filesystem (bucket/prefix/spans/…)
    rows: int = 0


class RotatingParquetSink:
    """Appends tables to per-partition files; `commit()` makes them visible atomically."""

    def __init__(
        self,
        lake: Lake,
        compression: str = "zstd",
        compression_level: int | None = None,
        max_rows: int = 500_000,
        max_bytes: int = 128 * 1024**2,
        max_age: float = 30.0,
        owner: str = "c",
        staging: Path | None = None,
    ) -> None:
        if not owner.isalnum():
            raise ValueError(f"owner {owner!r} must be letters and digits (it is part of file names)")
        self.target = lake
        self.lake = lake.staging(staging)  # the files being written (the lake itself, when it is local)
        self.owner = owner
        self.compression = compression
        self.compression_level = compression_level
        self.max_rows, self.max_bytes, self.max_age = max_rows, max_bytes, max_age
        self._open: dict[tuple[str, str, str], _OpenFile] = {}
        self._opened_at: float | None = None
        self.files_committed = 0
        self.rows_committed = 0
        self._prepared_rows = 0

    def remove_stale(self) -> int:
        """Delete the temporary files this sink's previous run left at a crash (their rows are still in its
        log), and, older than `LEGACY_STALE_S`, those without an owner (a crashed embedded writer's, or a
        collector's from before owners: no write takes that long). Others' are writes in progress."""
        own = f".{self.owner}.parquet.tmp"
        cutoff = time.time() - LEGACY_STALE_S
        removed = 0
        for table in TABLES:
            for path in (self.lake / table).rglob(".part-*.parquet.tmp"):
                owned = path.name.endswith(own)
                legacy = path.name.count(".") == 3  # .part-<ns>-<uuid>.parquet.tmp: no owner
                try:
                    if owned or (legacy and path.stat().st_mtime < cutoff):
                        path.unlink()
                        removed += 1
                except FileNotFoundError:  # its writer committed or removed it meanwhile
                    continue
        return removed

    def write(self, table_name: str, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        for (date, hour), part in hour_parts(table, table_name):
            self._append(table_name, date, hour, part)

    def _append(self, table_name: str, date: str, hour: str, table: pa.Table) -> None:
        key = (table_name, date, hour)
        open_file = self._open.get(key)
        if open_file is None:
            folder = f"{table_name}/date={date}/hour={hour}"
            directory = self.lake / folder
            directory.mkdir(parents=True, exist_ok=True)
            stem = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"
            tmp = directory / f".{stem}.{self.owner}.parquet.tmp"
            final = self.target.final_path(folder, f"{stem}.parquet")
            with discarded_on_error(tmp):  # not an open file yet: `abort` would not know of it
                writer = pq.ParquetWriter(
                    tmp,
                    TABLES[table_name][0],
                    compression=self.compression,
                    compression_level=self.compression_level,
                    use_dictionary=DICTIONARY_COLUMNS.get(table_name, True),
                    bloom_filter_options=bloom_filter_options(TABLES[table_name][0]),
                )
            open_file = self._open[key] = _OpenFile(writer, tmp, final)
            if self._opened_at is None:
                self._opened_at = time.monotonic()
        # row groups of at most ROW_GROUP_ROWS, the size the Bloom filters are made for
        open_file.writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
        open_file.rows += table.num_rows

    @property
    def open_rows(self) -> int:
        return sum(f.rows for f in self._open.values())

    def due(self) -> bool:
        """Whether rotation is due (rows, bytes on disk or age past their limit)."""
        if not self._open:
            return False
        if self.open_rows >= self.max_rows or self.age() >= self.max_age:
            return True
        return sum(f.tmp.stat().st_size for f in self._open.values()) >= self.max_bytes

    def age(self) -> float:
        return 0.0 if self._opened_at is None else time.monotonic() - self._opened_at

    def commit(self) -> list[Path]:
        """Close, fsync and rename every open file into place; returns the committed paths."""
        return self.publish(self.prepare())

    def prepare(self) -> list[tuple[Path, Path]]:
        """The first half of `commit`: close and fsync every open file; returns (temporary, final) pairs for
        `publish`. Nothing is visible yet. If a file cannot be finished (a full disk), every open file is
        discarded (`abort`) and the error raised: its rows are still in the writer's log."""
        pairs: list[tuple[Path, Path]] = []
        try:
            for open_file in self._open.values():
                open_file.writer.close()
                fsync_path(open_file.tmp)
                pairs.append((open_file.tmp, open_file.final))
        except BaseException:
            self.abort()
            raise
        self._prepared_rows = self.open_rows
        self._open.clear()
        self._opened_at = None
        return pairs

    def publish(self, pairs: list[tuple[Path, Path]]) -> list[Path]:
        """The second half of `commit`: rename the prepared files into place and fsync their folders.
        Idempotent: a pair already renamed is left as it is, so a failed publish can be run again."""
        self.target.publish(pairs)
        self.files_committed += len(pairs)
        self.rows_committed += self._prepared_rows
        self._prepared_rows = 0
        return [final for _, final in pairs]

    def publish_one(self, tmp: Path, final: Path) -> None:
        """Make one prepared file visible under its final name (idempotent): rename it into place and fsync
        its folder; on object storage upload it whole, then delete the local copy (a file whose local copy
        is gone is uploaded already). `commits.CommitJournal.recover` finishes interrupted commits with it."""
        if tmp.exists():
            self.target.publish([(tmp, final)])

    def abort(self) -> None:
        """Discard every open file (after a failed write: a Parquet writer that failed cannot go on): close
        it as far as it closes, delete its temporary file. Their rows must be written again."""
        for open_file in self._open.values():
            with contextlib.suppress(Exception):
                open_file.writer.close()
            with contextlib.suppress(OSError):
                open_file.tmp.unlink()
        self._open.clear()
        self._opened_at = None
