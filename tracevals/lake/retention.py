"""What readers and compaction promise each other: a file a reader listed is still there when it reads it.

A compaction replaces an hour's files by one merged file; deleting the files it merged at once would break
every reader that listed them a moment before (DuckDB expands a glob when a query starts and opens the files
as it goes; a reader of an object store holds the listing its connection started with; a selection keeps
an explicit list of files). So, as a table format's vacuum does, the merged inputs stay for a retention
period after the merge (`RETENTION_S`, 10 minutes; `TRACEVALS_COMPACT_RETENTION`, or `tracevals compact
--retention`), and a later compaction deletes them:

- a reader that started before the merge reads the inputs; one that lists the files after it reads the merged
  file alone, leaving out the inputs its footer names (`superseded`, applied by every listing of the lake,
  `Lake.current`), as a table format's reader reads its latest snapshot; so both see every row once (and
  should a copy of a row reach a reader twice, the views count it once: `spans` and `logs` deduplicate); a
  reader that runs longer than the retention period can still fail (say a longer one);
- the merged file's footer names its inputs (`tracevals.compacted_from`) and when it was written
  (`tracevals.compacted_at`, the compacting host's clock): a compaction never merges a file some footer
  names again (no row is ever merged twice), and deletes it once `compacted_at + retention` has passed and
  whatever it itself replaced is gone (so a chain of merges is undone from the oldest end, and no file is
  ever left unnamed while its rows are in a merged file);
- where deletions are pending, a small note (`LAKE/compaction/pending/<partition>.json`, when they are due)
  lets the end-of-run merge of `tracevals run`, which compacts only its own hours, finish them in any hour
  without reading every footer of the lake.

A merge is written before anything is deleted, and compactions of one lake never run at once (a lock file
on disk, a lease on object storage: `tracevals.lake.leases`), so two merges never lose or duplicate a row.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tracevals import env
from tracevals.lake.lake import Lake
from tracevals.lake.paths import LakeError
from tracevals.model.json_text import loads as json_loads

if TYPE_CHECKING:  # pyarrow is imported where it is used: a reader of a local lake never needs it
    import pyarrow.parquet as pq

RETENTION_S = 600.0
COMPACTED_AT = b"tracevals.compacted_at"
# The footer key that names the files a compacted file replaced (a JSON list of file names).
MARKER = b"tracevals.compacted_from"
# Beside it (b"1"): the list is complete, every file of the partition the merged file holds when it was written,
# through the merged files it replaced too (`holds`): a reader needs no footer of a merged file it names.
COMPLETE = b"tracevals.compacted_from_complete"
# The end of a compacted file's name (`<newest file's name>-c<8 hex>.parquet`).
COMPACTED_NAME = re.compile(r"(-c[0-9a-f]{8})+(?=\.parquet$)")
PENDING_DIR = "compaction/pending"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_seconds(text: str, what: str) -> float:
    """`90`, `90s`, `10m`, `2h`, `1d` as seconds; a `ValueError` naming `what` otherwise."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"{what} {text!r} is not a duration (e.g. 0, 90s, 10m, 2h, 1d)")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


def retention_seconds() -> float:
    """How long merged inputs stay: TRACEVALS_COMPACT_RETENTION, else `RETENTION_S`."""
    text = os.environ.get(env.COMPACT_RETENTION, "").strip()
    if not text:
        return RETENTION_S
    try:
        return parse_seconds(text, env.COMPACT_RETENTION)
    except ValueError as exc:
        raise LakeError(f"{exc}; unset it or set e.g. 10m") from None


def marked(meta: pq.FileMetaData) -> list[str] | None:
    """The file names a merged file's footer says it replaced; None for a writer's file."""
    return marker(meta.metadata)


def marker(metadata: Mapping[bytes, bytes] | None) -> list[str] | None:
    """The file names a footer's key-value metadata says its file replaced; None for a writer's file."""
    value = (metadata or {}).get(MARKER)
    if value is None:
        return None
    names = json_loads(value)  # a ValueError when it is not JSON (or nested past the parser)
    if not isinstance(names, list):  # a foreign or hostile footer: replaces nothing (superseded's rule)
        raise ValueError(f"{MARKER.decode()} is not a list of file names")
    return [str(name) for name in names]


def holds(group: Iterable[str], marks: Mapping[str, list[str] | None]) -> list[str]:
    """The names a file merged from the files `group` holds of its partition (`marks`: each file there -> the
    names its footer says it replaced, or None): the group's, and through every merged file among them, what
    that one holds, as far as it is still there. Written as the merged file's `MARKER` with `COMPLETE`, it
    lets a reader read the newest merged file's footer alone, not every one of a chain of merges."""
    held = dict.fromkeys(group)  # in order, and a lookup per name (a chain's list runs to a thousand names)
    todo = list(held)
    while todo:
        for name in marks.get(todo.pop()) or ():
            if name in marks and name not in held:
                held[name] = None
                todo.append(name)
    return list(held)


def replaced_names(marks: Mapping[str, list[str] | None]) -> set[str]:
    """Of a partition's files (`marks`: file name -> the names its footer says it replaced, or None), the
    names some merged file holds (a file never names itself): the inputs kept for readers that listed them."""
    return {name for merged, names in marks.items() for name in names or () if name != merged}


def superseded(paths: Iterable[str], read: Callable[[str], Mapping[bytes, bytes] | None]) -> set[str]:
    """Of a table's listed files (paths, '/'-separated), those a reader leaves out: the merged inputs kept
    for readers that listed them before the merge (a file some merged file of the same partition holds).
    A reader that lists after the merge reads the merged file alone, as a table format's reader reads
    its latest snapshot: every row once, from one file instead of the dozens a run or a collector wrote.

    `read`: a file's footer key-value metadata (`Lake.footer_metadata`). Only the footers of merged files
    (`COMPACTED_NAME`) in a folder of two files or more are read, the newest first (by name), and not one
    that a newer merged file's complete list (`COMPLETE`) names: it holds nothing that list does not name
    (a run that merges its hour at its end merges the previous merge again: fifty runs leave a chain of
    fifty merged files, and a reader read fifty footers). An hour compacted to one file costs nothing. A
    merged file whose footer cannot be read replaces nothing (its inputs are read as before, and the file
    itself is skipped or fails as any unreadable file does)."""
    folders: dict[str, list[str]] = {}
    for path in paths:
        folders.setdefault(path.rpartition("/")[0], []).append(path)
    gone: set[str] = set()
    for files in folders.values():
        if len(files) < 2:
            continue
        marks: dict[str, list[str] | None] = {}
        named: set[str] = set()  # the names of the complete lists read so far
        merged = [(name, path) for path in files if COMPACTED_NAME.search(name := path.rpartition("/")[2])]
        for name, path in sorted(merged, reverse=True):
            if name in named:
                continue
            try:
                metadata = read(path)
                marks[name] = marker(metadata)
            except (OSError, ValueError):  # an unreadable footer (pyarrow's ArrowInvalid is a ValueError)
                continue
            if metadata is not None and metadata.get(COMPLETE) == b"1":
                named.update(marks[name] or ())
        names = replaced_names(marks)
        gone.update(p for p in files if p.rpartition("/")[2] in names)
    return gone


def compacted_at(meta: pq.FileMetaData) -> float | None:
    """When a merged file was written (its footer); None for a writer's file or a merge from before."""
    value = (meta.metadata or {}).get(COMPACTED_AT)
    try:
        return None if value is None else float(value)
    except ValueError:
        return None


def deletable(
    marks: Mapping[str, list[str] | None], stamps: Mapping[str, float | None], now: float, retention: float
) -> tuple[set[str], float | None]:
    """Of a partition's files (`marks`: file name -> the names its footer says it replaced, or None), those a
    compaction may delete now, and when the next of the others may go (None: no other is pending).

    A file is pending when some merged file names it; it may go once that merge is `retention` old (a merge
    without a time, from before retention or a crash's leftover, at once) and whatever the file itself
    replaced is gone or goes now."""
    named_by: dict[str, list[str]] = {}
    for merged, names in marks.items():
        for name in names or ():
            if name != merged:
                named_by.setdefault(name, []).append(merged)
    due: dict[str, float] = {}
    for name, mergers in named_by.items():
        if name in marks:
            due[name] = min((stamps.get(m) or 0.0) + retention for m in mergers)
    gone: set[str] = set()
    changed = True
    while changed:  # a chain (a merged file merged again) is undone from its oldest end
        changed = False
        for name, at in due.items():
            if name in gone or at > now:
                continue
            inputs = [n for n in marks.get(name) or () if n in marks and n != name]
            if all(n in gone for n in inputs):
                gone.add(name)
                changed = True
    later = [at for name, at in due.items() if name not in gone]
    return gone, (max(min(later), now) if later else None)


@dataclass(frozen=True)
class Footers:
    """What the footers of a partition's files say: the readable ones (in the order listed), each one's
    metadata and the names it says it replaced (None: a writer's file); the merged inputs kept for readers
    (`pending`), those of them a compaction may delete now (`removed`), and when the next of the rest may go."""

    files: list[Path]
    metas: dict[Path, pq.FileMetaData]
    marks: dict[Path, list[str] | None]
    pending: list[Path]
    removed: list[Path]
    next_due: float | None


def read_footers(
    files: list[Path],
    read: Callable[[Path], pq.FileMetaData],
    marked: Callable[[pq.FileMetaData], list[str] | None],
    retention: float,
) -> Footers | str:
    """The `Footers` of a partition's `files` (a file gone since it was listed is left out), or the line that
    says which one is not Parquet (then nothing of the partition may be touched)."""
    import pyarrow as pa

    metas: dict[Path, pq.FileMetaData] = {}
    for path in files:
        try:
            metas[path] = read(path)
        except FileNotFoundError:
            continue
        except (pa.ArrowInvalid, OSError) as exc:  # not Parquet, truncated, unreadable: touch nothing here
            return f"{path.name} is not a readable Parquet file ({exc}); move it out of the lake"
    files = [p for p in files if p in metas]
    marks: dict[Path, list[str] | None] = {}
    for path, meta in metas.items():
        try:
            marks[path] = marked(meta)
        except ValueError as exc:  # a marker that names no files: touch nothing of the partition
            return f"{path.name} has a footer that is not tracevals' ({exc}); move it out of the lake"
    # files a merged file already holds: kept for readers that listed them, never merged again
    replaced = replaced_names({p.name: names for p, names in marks.items()})
    pending = [p for p in files if p.name in replaced]
    stamps = {p.name: compacted_at(m) for p, m in metas.items()}
    gone, next_due = deletable({p.name: marks[p] for p in files}, stamps, time.time(), retention)
    return Footers(files, metas, marks, pending, [p for p in pending if p.name in gone], next_due)


# -- the notes of pending deletions ------------------------------------------------------------------


def _note_name(partition: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]", "_", partition.replace("/", "__")) + ".json"


def note_pending(lake: Lake, partition: str, due: float | None) -> None:
    """Say that `partition` (`spans/date=…/hour=…`, relative to the lake) has deletions due at `due`
    (None: none any more: the note goes)."""
    path = lake.path(PENDING_DIR, _note_name(partition))
    if due is None:
        with contextlib.suppress(FileNotFoundError, OSError):
            lake.filesystem.delete_file(path)
        return
    lake.put(path, json.dumps({"partition": partition, "due": due}).encode())


def pending_partitions(lake: Lake, now: float) -> list[str]:
    """The partitions (relative to the lake) whose noted deletions are due by `now`."""
    import pyarrow.fs as pafs

    fs = lake.filesystem
    try:
        infos = fs.get_file_info(pafs.FileSelector(lake.path(PENDING_DIR), allow_not_found=True))
    except OSError:
        return []
    found = []
    for info in infos:
        if info.type != pafs.FileType.File or not info.base_name.endswith(".json"):
            continue
        try:
            with fs.open_input_stream(info.path) as fh:
                doc = json_loads(bytes(fh.read()).decode("utf-8"))
            if float(doc["due"]) <= now:
                found.append(str(doc["partition"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted(found)


def stamp() -> bytes:
    """The value of `COMPACTED_AT` for a merge written now."""
    return f"{time.time():.3f}".encode()
