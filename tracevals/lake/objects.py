"""A lake on object storage (`s3://bucket/prefix`, or another URL pyarrow reads): each file uploaded whole
to its final key in one PUT (no rename: an object is visible only once its upload completed), read by
DuckDB as pyarrow datasets (no DuckDB extension). The filesystem comes from `tracevals.lake.storage`
(the AWS_* variables), once, when the lake is opened; a pickled `ObjectLake` carries it, so an engine's
workers write with the driver's settings.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import os
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.fs as pafs

from tracevals.lake.lake import Lake, ObjectScan, When, partition_key
from tracevals.lake.paths import LakeError, bounds
from tracevals.lake.storage import lake_filesystem, map_threads, put_bytes, put_file, storage_error
from tracevals.lake.unreadable import skip_unreadable

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pyarrow.dataset

    from tracevals.lake.writer import LakeFile


class ObjectLake(Lake):
    """A prefix of a bucket (or another pyarrow filesystem named by URL)."""

    def __init__(self, location: str, filesystem: tuple[pafs.FileSystem, str] | None = None) -> None:
        self.location = location
        self._fs, self.root = filesystem or lake_filesystem(location)

    def __reduce__(self) -> tuple[type[ObjectLake], tuple[str, tuple[pafs.FileSystem, str]]]:
        return (ObjectLake, (self.location, (self._fs, self.root)))

    @property
    def filesystem(self) -> pafs.FileSystem:
        return self._fs

    @property
    def scheme(self) -> str:
        return self.location.split("://", 1)[0]

    def name_of(self, path: str) -> str:
        return f"{self.scheme}://{path}"

    def file_of(self, name: str) -> LakeFile:
        from tracevals.lake.writer import ObjectURL

        return ObjectURL(name)

    def contains(self, path: str | os.PathLike[str]) -> bool:
        return False

    def sandbox_root(self) -> str:
        return self.location.rstrip("/") + "/"

    def check(self) -> None:
        """That the bucket answers (a `LakeError` saying what to fix otherwise). A prefix that holds nothing
        yet is a lake nothing has been written to."""
        fs = self._fs
        top = self.root.split("/", 1)[0] if isinstance(fs, pafs.S3FileSystem) else self.root
        try:
            info = fs.get_file_info(top)
        except OSError as exc:
            if not _denied(exc):
                raise self.error(exc, "reading") from None
            # HeadBucket needs s3:ListBucket on the whole bucket; a policy may grant it for the lake's prefix only
            try:
                fs.get_file_info(pafs.FileSelector(self.root, allow_not_found=True))
            except OSError as inner:
                raise self.error(inner, "reading") from None
            return
        if isinstance(fs, pafs.S3FileSystem) and info.type == pafs.FileType.NotFound:
            raise LakeError(f"lake {self.location!r}: bucket {top!r} does not exist; create it or correct the lake URL")

    def prepare(self) -> None:
        self.check()  # the bucket and the credentials, before anything is written

    def error(self, exc: BaseException, doing: str) -> LakeError:
        return storage_error(self.location, exc, doing)

    def partition_globs(self, sub: str, since: When = None, until: When = None) -> list[str]:
        """A range with both ends names one glob per day (a lister then lists only those prefixes); the hour
        bounds and an open range are left to the WHERE of `partition_filter`."""
        root = f"{self.location.rstrip('/')}/{sub}"
        low, high = bounds(since, until)
        if low is None or high is None:
            return [f"{root}/**/*.parquet"]
        days = [low[0] + dt.timedelta(days=n) for n in range((high[0] - low[0]).days + 1)]
        return [f"{root}/date={day}/*/*.parquet" for day in days]

    def scan(self, sub: str, since: When = None, until: When = None, hive: bool = True) -> ObjectScan:
        infos = self.partition_files(sub, since, until) if hive else self.list_parquet(sub)
        return ObjectScan(self, infos)

    def scan_named(self, sub: str, names: list[str] | None) -> ObjectScan:
        """The objects of `sub` named by `names` (their URLs, as `source_file` names them, or globs of them).
        An object named is read even when a merge since replaced it (it was chosen from an earlier listing:
        a scoring group's files); what a glob or None matches is listed as every reader lists (`current`)."""
        every = self.list_parquet(sub, replaced=True)
        if names is None:
            return ObjectScan(self, self.current(every))
        wanted = set(names)
        patterns = [g for g in names if any(c in g for c in "*?[")]
        named = {i.path for i in every if self.name_of(i.path) in wanted}
        matched = {
            i.path for i in self.current(every) if any(fnmatch.fnmatch(self.name_of(i.path), g) for g in patterns)
        }
        return ObjectScan(self, [i for i in every if i.path in named or i.path in matched])

    def put(self, path: str, data: bytes) -> None:
        put_bytes(self._fs, path, data)

    def write_table(
        self, folder: str, table: pa.Table, compression: str = "zstd", filesystem: pafs.FileSystem | None = None
    ) -> LakeFile:
        written = self._put_tables(folder, [table], table.schema, compression, filesystem or self._fs, True)
        assert written is not None  # a file of no row too
        return written

    def write_tables(
        self, folder: str, tables: Iterable[pa.Table], schema: pa.Schema, compression: str = "zstd"
    ) -> LakeFile | None:
        return self._put_tables(folder, tables, schema, compression, self._fs, False)

    def _put_tables(
        self,
        folder: str,
        tables: Iterable[pa.Table],
        schema: pa.Schema,
        compression: str,
        filesystem: pafs.FileSystem,
        keep_empty: bool,
    ) -> LakeFile | None:
        """`tables` encoded as one Parquet file in memory (the lake's writer: `writer.write_stream`), then one
        upload: all of them or nothing. None when they held no row (unless `keep_empty`)."""
        from tracevals.lake.writer import ObjectURL, new_file_name, write_stream

        path = self.path(folder, new_file_name())
        sink = pa.BufferOutputStream()
        if not write_stream(tables, schema, sink, compression, keep_empty) and not keep_empty:
            return None
        try:
            put_bytes(filesystem, path, sink.getvalue())
        except OSError as exc:
            raise self.error(exc, f"writing {folder}/ to") from None
        return ObjectURL(self.name_of(path))

    def staging(self, staging: Path | None) -> Path:
        if staging is None:
            raise ValueError(f"a lake on object storage ({self.location}) needs a local staging folder")
        return staging

    def final_path(self, folder: str, name: str) -> Path:
        return Path(self.path(folder, name))

    def publish(self, pairs: list[tuple[Path, Path]]) -> None:
        """Upload each whole (one PUT), then delete its local copy: a file whose copy is gone is uploaded
        already. An `OSError` is the caller's to retry (the rows stay in its log)."""
        for tmp, final in pairs:
            if tmp.exists():
                put_file(self._fs, tmp, final.as_posix())
                tmp.unlink()

    def dataset(self, infos: list[pafs.FileInfo], schema: pa.Schema, hive: bool) -> pyarrow.dataset.Dataset | None:
        """The objects `infos` as one pyarrow dataset with the columns a local read gives: the table's schema
        (a column a file lacks reads as NULL), then `date` (DATE) and `hour` (BIGINT) from each file's
        partition folder (hive tables), then `source_file` (the object's URL). The three are the fragments'
        partition expressions, so DuckDB's filters on them skip files without opening them. Each footer is
        read once (a few at a time); a file whose footer does not parse (cut short, not Parquet) is skipped
        with one warning, or fails with --strict, as on a local lake. None when no file is left."""
        import pyarrow.dataset as ds

        fmt = ds.ParquetFileFormat()
        fragments: list[ds.ParquetFileFragment | None] = [None] * len(infos)
        todo = []
        for n, info in enumerate(infos):
            key = (info.path, info.size or 0, info.mtime_ns or 0, hive)
            cached = _FRAGMENTS.get(key)
            if cached is not None:
                _FRAGMENTS.move_to_end(key)
                fragments[n] = cached
            else:
                todo.append((n, key, info))

        def load(item: tuple[int, tuple[str, int, int, bool], pafs.FileInfo]) -> str | None:
            n, _key, info = item
            expression = ds.field("source_file") == pa.scalar(self.name_of(info.path))
            part = partition_key(info.path) if hive else None
            if part is not None:
                expression = (
                    (ds.field("date") == pa.scalar(part[0], pa.date32()))
                    & (ds.field("hour") == pa.scalar(part[1], pa.int64()))
                    & expression
                )
            if (info.size or 0) < 12:
                return f"{info.size or 0} bytes, too small"
            fragment = fmt.make_fragment(info.path, self._fs, partition_expression=expression, file_size=info.size)
            try:
                fragment.ensure_complete_metadata()  # the footer: one ranged GET for most files
            except (OSError, pa.ArrowInvalid) as exc:
                text = str(exc).strip().splitlines()
                return f"not Parquet: {text[0] if text else type(exc).__name__}"
            fragments[n] = fragment
            return None

        reasons = map_threads(load, todo)
        bad = {self.name_of(info.path): why for (_, _, info), why in zip(todo, reasons, strict=True) if why is not None}
        if bad:
            skip_unreadable(bad)
        for (n, key, _), why in zip(todo, reasons, strict=True):
            if why is None:
                _FRAGMENTS[key] = fragments[n]
                if len(_FRAGMENTS) > _FRAGMENTS_KEPT:
                    _FRAGMENTS.popitem(last=False)
        kept = [f for f in fragments if f is not None]
        if not kept:
            return None
        fields = list(schema)
        if hive:
            fields += [pa.field("date", pa.date32()), pa.field("hour", pa.int64())]
        fields.append(pa.field("source_file", pa.string()))
        return ds.FileSystemDataset(kept, pa.schema(fields), fmt, self._fs)


# Fragments of remote files with their footers read, by (path, size, mtime, hive): a scan then costs one
# ranged GET per column chunk, not a HEAD and a footer read per file and scan (the views read raw_spans many
# times a query). Bounded; a file rewritten in place (never done by tracevals) has a new size or mtime.
_FRAGMENTS: OrderedDict[tuple[str, int, int, bool], pyarrow.dataset.ParquetFileFragment] = OrderedDict()
_FRAGMENTS_KEPT = 4096


def _denied(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "access_denied" in text or "access denied" in text or "accessdenied" in text or "403" in text
