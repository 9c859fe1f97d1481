"""A lake, as a value: where its files are and the words for what is done with them.

`Lake.open(path_or_url)` is called once, at the edge (the CLI's `--lake`, the public `open_lake`,
`tracevals.instrument(lake=...)`); everything beneath takes the `Lake` it returns and never asks again
whether the lake is a directory or an object-store prefix. The two implementations are chosen there:

- `LocalLake` (`tracevals.lake.local`): a directory; files are committed by temp file + fsync + rename,
  and DuckDB reads them by path.
- `ObjectLake` (`tracevals.lake.objects`): `s3://bucket/prefix` or another URL pyarrow reads; files are
  uploaded whole to their final key in one PUT, and DuckDB reads them as pyarrow datasets.

>>> lake = Lake.open("demo-out/lake")
>>> lake.partition_globs("spans", since="2026-11-29")      # the files of the hours in range
>>> lake.read_text("prices.json")                          # a small document, or None
>>> lake.write_table("scores", table)                      # one new Parquet file, atomically

A `Lake` is immutable and picklable (a worker process or an engine's worker gets the driver's), compares
equal by its location, and prints as what the user typed (`str(lake)`), which is what messages name.
"""

from __future__ import annotations

import datetime as dt
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tracevals.lake.paths import Bound, LakeError, bounds
from tracevals.lake.unreadable import skip_unreadable
from tracevals.model.json_text import loads as json_loads

if TYPE_CHECKING:  # pyarrow is imported where it is used: reading a local lake never needs it
    from collections.abc import Iterable

    import pyarrow as pa
    import pyarrow.fs as pafs

    from tracevals.lake.objects import ObjectLake
    from tracevals.lake.writer import LakeFile

When = dt.date | dt.datetime | str | None

#: What a lake directory holds; a directory with none of them (but other files) is a wrong --lake.
LAKE_ENTRIES = ("spans", "logs", "scores", "run_cases", "prices.json")
PRICES_FILE = "prices.json"  # a lake's own model prices, over the default table (`tracevals.model.prices`)


@dataclass(frozen=True)
class Listed:
    """A file as a local lake lists it: the attributes of `pyarrow.fs.FileInfo` that readers use (a local
    listing is `os.scandir`: importing pyarrow alone costs a small command a third of its time)."""

    path: str
    size: int
    mtime_ns: int

    @property
    def base_name(self) -> str:
        return self.path.rpartition("/")[2]

    @property
    def mtime(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.mtime_ns / 1e9, dt.timezone.utc)


class FileInfo(Protocol):
    """A listed file, as readers use it: pyarrow's `FileInfo` (object storage) or a `Listed` (a local lake)."""

    @property
    def path(self) -> str: ...
    @property
    def base_name(self) -> str: ...
    @property
    def size(self) -> int | None: ...
    @property
    def mtime_ns(self) -> int | None: ...


@dataclass(frozen=True)
class LocalScan:
    """What DuckDB reads of a local table: glob patterns of readable files, a file's or a folder's path in them
    escaped (`paths.pattern`; none: the table is empty)."""

    paths: list[str]
    partitioned: bool  # the files lie in date=/hour= folders (their hive types can be declared)


@dataclass(frozen=True)
class ObjectScan:
    """What DuckDB reads of a table on object storage: the listed objects, read through pyarrow."""

    lake: ObjectLake
    infos: list[FileInfo]


class Lake(ABC):
    """A lake: a directory (`LocalLake`) or an object-store prefix (`ObjectLake`). Build it with `Lake.open`."""

    location: str  # as given: a path or a URL (what messages name)
    root: str  # the lake's root on its filesystem (an absolute path, or bucket/prefix)

    @staticmethod
    def open(where: str | os.PathLike[str] | Lake) -> Lake:
        """The lake at `where` (a directory, or a URL such as `s3://bucket/prefix`); a `Lake` is returned as is.
        An empty path is a `LakeError`; nothing is read yet (`check` does that)."""
        if isinstance(where, Lake):
            return where
        text = os.fspath(where)
        if not text.strip():
            raise LakeError("the lake path is empty; pass --lake DIR (or set TRACEVALS_LAKE)")
        if "://" in text:
            from tracevals.lake.objects import ObjectLake

            return ObjectLake(text)
        from tracevals.lake.local import LocalLake

        return LocalLake(text)

    # -- identity ---------------------------------------------------------------------------------
    def __str__(self) -> str:
        return self.location

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lake) and type(other) is type(self) and other.root == self.root

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.root))

    # -- where things are -------------------------------------------------------------------------
    #: The lake's directory on this machine; None for a lake on object storage (a WAL, cassettes or an
    #: export that must sit on local disk then needs a folder of its own).
    local_folder: Path | None = None

    @property
    @abstractmethod
    def filesystem(self) -> pafs.FileSystem:
        """The pyarrow filesystem that holds the lake."""

    def path(self, *parts: str) -> str:
        """A path under the root on the lake's filesystem ('/'-separated)."""
        return "/".join([self.root.rstrip("/"), *(p.strip("/") for p in parts if p)])

    @abstractmethod
    def name_of(self, path: str) -> str:
        """How readers name the file at `path` (on the filesystem): `source_file`, messages, workers."""

    @abstractmethod
    def contains(self, path: str | os.PathLike[str]) -> bool:
        """Whether a local `path` is the lake or lies inside it (never, for a lake on object storage)."""

    @abstractmethod
    def sandbox_root(self) -> str:
        """The one directory (or URL prefix) a sandboxed DuckDB connection may read: the lake's root."""

    # -- checks -----------------------------------------------------------------------------------
    @abstractmethod
    def check(self) -> None:
        """Raise `LakeError` (one line: what, where, how to fix) unless this can be a lake."""

    @abstractmethod
    def prepare(self) -> None:
        """Make the lake ready to be written: a local lake's folder; on object storage, that its bucket answers."""

    def has_spans(self) -> bool:
        """The lake holds at least one span file."""
        return bool(self.list_parquet("spans"))

    # -- listing ----------------------------------------------------------------------------------
    def files(self, folder: str, recursive: bool) -> list[FileInfo]:
        """The files (not folders) in `folder` (and beneath it: recursive), in no particular order; none
        when it does not exist."""
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.path(folder), allow_not_found=True, recursive=recursive)
        try:
            infos = self.filesystem.get_file_info(selector)
        except OSError as exc:
            raise self.error(exc, f"listing {folder}/ of") from None
        return [i for i in infos if i.type == pafs.FileType.File]

    def list_parquet(self, sub: str, replaced: bool = False) -> list[FileInfo]:
        """The committed Parquet files under `sub` (not hidden ones: temporary files), in path order, but
        the merged inputs a compaction keeps for readers that listed them before (`current`); replaced=True
        lists those too (compaction, which deletes them)."""
        listed = sorted(
            (i for i in self.files(sub, True) if i.base_name.endswith(".parquet") and not i.base_name.startswith(".")),
            key=lambda i: i.path,
        )
        return listed if replaced else self.current(listed)

    def current(self, infos: list[FileInfo]) -> list[FileInfo]:
        """`infos` without the files a merged file among them replaced (`retention.superseded`): what every
        reader of the lake reads."""
        from tracevals.lake.retention import superseded

        gone = superseded([i.path for i in infos], self.footer_metadata)
        return [i for i in infos if i.path not in gone] if gone else infos

    def footer_metadata(self, path: str) -> dict[bytes, bytes] | None:
        """The key-value metadata of the Parquet footer of the file at `path`; an `OSError` or a `ValueError`
        when it cannot be read."""
        import pyarrow.parquet as pq

        with self.filesystem.open_input_file(path) as fh:
            return pq.read_metadata(fh).metadata

    def list_names(self, folder: str, suffix: str = ".json") -> list[str]:
        """The names of the files directly in `folder` that end in `suffix`, sorted."""
        return sorted(i.base_name for i in self.files(folder, False) if i.base_name.endswith(suffix))

    def partition_files(self, sub: str, since: When = None, until: When = None) -> list[FileInfo]:
        """The Parquet files of `sub` whose `date=/hour=` partition is in range (every file: no range)."""
        infos = self.list_parquet(sub)
        low, high = bounds(since, until)
        if low is None and high is None:
            return infos
        return [i for i in infos if (key := partition_key(i.path)) is not None and in_range(key, low, high)]

    def row_counts(self, infos: list[FileInfo]) -> list[tuple[FileInfo, int]]:
        """The readable files of `infos` with their row counts (from their Parquet footers); unreadable ones
        skipped with one warning, or failed with --strict (`skip_unreadable`)."""
        import pyarrow.parquet as pq

        counted, bad = [], {}
        for info in infos:
            problem = self.problem(info)
            if problem is None:
                try:
                    with self.filesystem.open_input_file(info.path) as fh:
                        counted.append((info, pq.read_metadata(fh).num_rows))
                    continue
                except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                    text = str(exc).strip().splitlines()
                    problem = f"not Parquet: {text[0] if text else type(exc).__name__}"
            bad[self.name_of(info.path)] = problem
        if bad:
            skip_unreadable(bad)
        return counted

    def problem(self, info: FileInfo) -> str | None:
        """Why a listed file cannot be read, when a cheap look can tell (None: it looks whole)."""
        return None

    def readable_files(self, sub: str, since: When = None) -> list[str]:
        """The files of `sub` from `since`'s hour on (every file: no `since`), as paths on the lake's
        filesystem, in path order: what an engine's workers read."""
        return [i.path for i in self.partition_files(sub, since, None)]

    @abstractmethod
    def file_of(self, name: str) -> LakeFile:
        """A file written into the lake, from how it was named (`str(LakeFile)`)."""

    @abstractmethod
    def partition_globs(self, sub: str, since: When = None, until: When = None) -> list[str]:
        """Globs of the files of one hive-partitioned table whose start hour is in range (inclusive, UTC),
        as a reader names them: a range never makes a reader open a file outside it."""

    @abstractmethod
    def scan_named(self, sub: str, names: list[str] | None) -> LocalScan | ObjectScan:
        """The files `names` of `sub` (as `source_file` names them; an object lake also takes globs of them;
        None: all of it)."""

    @abstractmethod
    def scan(self, sub: str, since: When = None, until: When = None, hive: bool = True) -> LocalScan | ObjectScan:
        """What a DuckDB reader of `sub` reads (`queries.sources` binds it): the files in range, unreadable
        ones skipped with a warning (or failed with --strict)."""

    # -- small documents --------------------------------------------------------------------------
    def read_text(self, name: str) -> str | None:
        """The text of the file `name` (a small document: `prices.json`, a run's cases), None when absent."""
        try:
            with self.filesystem.open_input_stream(self.path(name)) as fh:
                return bytes(fh.read()).decode("utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            if "NoSuchKey" in str(exc) or "not found" in str(exc).lower() or "no such file" in str(exc).lower():
                return None
            raise self.error(exc, f"reading {name} of") from None

    def read_json(self, name: str) -> Any:
        """The JSON document `name`, None when absent; a `ValueError` when it is not JSON (or nests past the
        parser: `model.json_text`)."""
        text = self.read_text(name)
        return None if text is None else json_loads(text)

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write the file `name` whole and atomically (a reader sees the old file, or none, or all of it)."""
        try:
            self.put(self.path(name), data)
        except OSError as exc:
            raise self.error(exc, f"writing {name} to") from None

    @abstractmethod
    def put(self, path: str, data: bytes) -> None:
        """Write `data` at `path` on the lake's filesystem, whole and atomically; an `OSError` as it comes."""

    # -- tables -----------------------------------------------------------------------------------
    @abstractmethod
    def write_table(
        self, folder: str, table: pa.Table, compression: str = "zstd", filesystem: pafs.FileSystem | None = None
    ) -> LakeFile:
        """Write `table` as a new Parquet file in `folder` (`spans/date=…/hour=…`, `scores`), atomically.
        `filesystem`: the driver's, for an engine's worker that may not have the driver's settings."""

    @abstractmethod
    def write_tables(
        self, folder: str, tables: Iterable[pa.Table], schema: pa.Schema, compression: str = "zstd"
    ) -> LakeFile | None:
        """Write `tables` (of `schema`) as one new Parquet file in `folder`, a table after another, each let go
        once written (memory holds one); the file appears once the last is written, or not at all if
        iterating `tables` fails. None when they held no row."""

    # -- files finished elsewhere (the collector's sink) --------------------------------------------
    @abstractmethod
    def staging(self, staging: Path | None) -> Path:
        """The local folder a sink writes its open files in before `publish` makes them the lake's: the lake
        itself (local), or `staging` (object storage: a `ValueError` when there is none)."""

    @abstractmethod
    def final_path(self, folder: str, name: str) -> Path:
        """Where a file a sink finishes is published: its path in the lake, or its key on the store."""

    @abstractmethod
    def publish(self, pairs: list[tuple[Path, Path]]) -> None:
        """Make finished local files (temporary, final) visible under their final names, durably and
        idempotently (a pair already published is left alone, so a failed publish can run again)."""

    def prices(self) -> dict[str, tuple[float, float]]:
        """The price table the lake carries in `prices.json` (JSON or YAML, as `model.prices.load_prices`
        reads it), or none: the prices a team pays for its models, or the demo's for its simulated ones."""
        from tracevals.model.prices import prices_from_text

        text = self.read_text(PRICES_FILE)
        return {} if text is None else prices_from_text(text, f"{self.location.rstrip('/')}/{PRICES_FILE}")

    # -- errors -----------------------------------------------------------------------------------
    def error(self, exc: BaseException, doing: str) -> LakeError:
        """One line for a failed request: what (`doing`), where (the lake) and the reason."""
        text = str(exc).strip().splitlines()
        return LakeError(f"{doing} {self.location} failed: {text[0] if text else type(exc).__name__}")


def partition_key(path: str) -> tuple[dt.date, int] | None:
    """(date, hour) of a file in a `date=YYYY-MM-DD/hour=HH/` folder; None for a file outside one."""
    parts = path.replace(os.sep, "/").rsplit("/", 3)
    if len(parts) < 4 or not parts[1].startswith("date=") or not parts[2].startswith("hour="):
        return None
    try:
        return dt.date.fromisoformat(parts[1][5:]), int(parts[2][5:])
    except ValueError:
        return None


def in_range(key: Bound, low: Bound | None, high: Bound | None) -> bool:
    return (low is None or key >= low) and (high is None or key <= high)


def check_entries(root: Path, location: str) -> None:
    """A local folder passed as --lake holds one of `LAKE_ENTRIES` or nothing; a project folder passed by
    mistake says where its lake probably is, instead of reading as a lake of 0 sessions."""
    if any((root / name).exists() for name in LAKE_ENTRIES) or not any(root.iterdir()):
        return
    inside = sorted(p.parent for p in root.glob("*/spans") if p.is_dir()) + sorted(
        p.parent for p in root.glob("*/*/spans") if p.is_dir()
    )
    hint = f"; the lake is probably {inside[0]}" if inside else ""
    raise LakeError(f"{location!r} is not a lake: it has no spans/ folder (nor logs/, scores/){hint}")


#: What the public entry points take (`Lake.open` turns it into a `Lake` once): a `Lake`, a directory, a URL.
LakeLike = Lake | str | os.PathLike[str]
