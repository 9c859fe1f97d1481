"""The commit journal: which write-ahead log records are in committed Parquet files, so that a restart
writes each acknowledged record to the lake exactly once.

A commit of the Parquet sink has two halves: the open files are finished and fsynced under temporary
names (`RotatingParquetSink.prepare`), then renamed into place (`publish`). Between the two, the pipeline
writes one small journal entry (`commit-<n>.json`, fsynced) naming the files and the log records they
hold. A crash before the entry is durable leaves only temporary files: they are deleted at the next start
and the records written again from the log. A crash after it leaves a complete set of finished files:
the next start renames whatever was not renamed yet (`recover`, roll forward) and skips the records the
entry names when it reads the log. Without the journal, a kill between a commit and the deletion of the
log segment it emptied (or during the replay of a long log) wrote the same rows again at every restart.

An entry is deleted once every segment it names is gone (`prune`): by then no restart can read those
records again.

On a lake on object storage the finished files wait in the log's `staging/` folder and publishing one is
an upload of it (`RotatingParquetSink.publish_one`): the journal is the same, and `recover` uploads what a
crash left staged. The log is marked committed only after every upload of a commit succeeded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from tracevals.collector.wal_format import Ref
from tracevals.lake.writer import fsync_path

_log = logging.getLogger(__name__)
_PREFIX = "commit-"


class CommitJournal:
    """`commit-<n>.json` entries in the write-ahead log's directory (which the log's lock makes ours)."""

    def __init__(self, directory: Path, publish: Callable[[Path, Path], None] | None = None) -> None:
        self.directory = directory
        self._publish = publish or _rename
        self._next = 1
        self._entries: dict[Path, set[int]] = {}  # entry -> the log segments it names

    def recover(self) -> set[Ref]:
        """Finish every journalled commit (rename the temporary files still there) and return the records
        they hold, which must not be written again. Call before deleting stale temporary files."""
        done: set[Ref] = set()
        for leftover in self.directory.glob(f"{_PREFIX}*.tmp"):  # an entry a crash left half written
            with contextlib.suppress(OSError):
                leftover.unlink()
        for path in sorted(self.directory.glob(f"{_PREFIX}*.json"), key=_number):
            self._next = max(self._next, _number(path) + 1)
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
                files = [(Path(tmp), Path(final)) for tmp, final in entry["files"]]
                refs = [Ref(int(seq), int(offset)) for seq, offsets in entry["records"].items() for offset in offsets]
            except (OSError, ValueError, KeyError, TypeError):
                # Not durable when the crash came (written, not yet fsynced): its files were never published
                # and are deleted as stale; its records are in the log and written again.
                _log.warning("tracevals collector: %s is incomplete; its commit did not happen", path)
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            for tmp, final in files:
                self._publish(tmp, final)
            done.update(refs)
            self._entries[path] = {ref.seq for ref in refs}
        return done

    def write(self, files: list[tuple[Path, Path]], refs: Iterable[Ref]) -> Path:
        """Record, durably, that `files` (prepared, not yet published) hold `refs`."""
        records: dict[str, list[int]] = {}
        for ref in refs:
            records.setdefault(str(ref.seq), []).append(ref.offset)
        path = self.directory / f"{_PREFIX}{self._next:012d}.json"
        self._next += 1
        tmp = path.with_suffix(".tmp")
        body = json.dumps({"files": [[str(t), str(f)] for t, f in files], "records": records}, separators=(",", ":"))
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(body)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
            fsync_path(self.directory)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        self._entries[path] = {int(seq) for seq in records}
        return path

    def prune(self, live_segments: set[int]) -> None:
        """Delete the entries none of whose segments is left."""
        for path, seqs in list(self._entries.items()):
            if not seqs & live_segments:
                with contextlib.suppress(OSError):
                    path.unlink()
                del self._entries[path]


def _rename(tmp: Path, final: Path) -> None:
    """Publish a finished file of a local lake (idempotent: a file renamed already is left alone)."""
    if tmp.exists():
        os.replace(tmp, final)
        fsync_path(final.parent)


def _number(path: Path) -> int:
    try:
        return int(path.stem[len(_PREFIX) :])
    except ValueError:
        return 0
