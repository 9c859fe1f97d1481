"""The collector's write-ahead log: a request is acknowledged once its bytes are fsynced here.

Why a log and not a Parquet file per request: a committed Parquet file costs a file, a footer, a
rename and two fsyncs per request, and leaves the lake with thousands of tiny files; appending the
request's protobuf bytes to a log costs at most one `fdatasync` (concurrent requests share one: group
commit) and writes each byte twice in all (log, then Parquet). The log is replayed into Parquet when the
collector starts, so `kill -9` loses nothing that was acknowledged.

Layout: `wal-<seq>.log` segments. A record is a header `kind (1 byte) | length (4) | crc32 (4)`, then
the payload. A crash can leave a torn last record; its CRC (or its length running past the end of the
file) marks it, and it was never acknowledged, so replay stops there. A sealed segment is deleted once
every record in it is in a committed Parquet file (`mark_committed`).

One collector at a time: `lock()` takes an exclusive lock on the directory (`LOCK`, flock; the kernel
drops it when the process ends, `kill -9` included). A second collector on the same log would replay and
then delete segments the first is still appending to: it fails at start instead (`LogInUse`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import threading
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

_log = logging.getLogger(__name__)

TRACES = 1
LOGS = 2
_HEADER = struct.Struct("<BII")
_MAGIC = b"TVWAL001"


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LogInUse(OSError):
    """Another process holds the write-ahead log's lock."""


class WriteAheadLog:
    """Append-only, fsynced segments in `directory`; thread-safe."""

    def __init__(self, directory: str | os.PathLike[str], segment_bytes: int = 64 * 1024**2) -> None:
        self.directory = Path(directory)
        self.segment_bytes = segment_bytes
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()  # one fdatasync at a time (group commit, see `append`)
        self._written = 0  # records written so far, counted from open
        self._synced = 0  # of which are known durable
        self._appended: Counter[int] = Counter()
        self._committed: Counter[int] = Counter()
        self._fh: BinaryIO | None = None
        self._seq = 0
        self._first_seq = 0
        self._size = 0
        self.bytes_appended = 0
        self._lock_fd: int | None = None

    def lock(self) -> None:
        """Take the directory's lock, held until `close` (or the process's end); `LogInUse` if another
        process holds it. Call before `replay`."""
        if self._lock_fd is not None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / "LOCK"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            import fcntl  # POSIX; where it is missing, no lock (one collector per log is then on the user)
        except ImportError:
            self._lock_fd = fd
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            if not isinstance(exc, BlockingIOError):
                raise
            raise LogInUse(
                f"the write-ahead log {self.directory} is in use by another collector (pid {holder}); stop it, "
                "or give this one its own exporters.parquet.wal.dir (and ports)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    def segments(self) -> list[Path]:
        return sorted(self.directory.glob("wal-*.log"))

    def replay(self) -> Iterator[tuple[int, bytes]]:
        """Every intact record of the segments on disk, oldest first (call before `open`)."""
        for path in self.segments():
            yield from _read_segment(path)

    def open(self) -> None:
        """Start a new segment after any existing ones (which `replay` read and `discard_old` removes)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        existing = self.segments()
        self._seq = int(existing[-1].stem.split("-")[1]) + 1 if existing else 1
        self._first_seq = self._seq
        self._start_segment()

    def discard_old(self) -> None:
        """Delete the segments that were on disk before `open` (their records are now in Parquet)."""
        for path in self.segments():
            if int(path.stem.split("-")[1]) < self._first_seq:
                path.unlink()
        _fsync_dir(self.directory)

    def _start_segment(self) -> None:
        path = self.directory / f"wal-{self._seq:012d}.log"
        self._fh = open(path, "ab")  # noqa: SIM115 - held open across appends, closed in seal/close
        self._fh.write(_MAGIC)
        self._fh.flush()
        os.fsync(self._fh.fileno())
        _fsync_dir(self.directory)  # the new file's name must survive a crash too
        self._size = len(_MAGIC)

    def append(self, kind: int, payload: bytes) -> int:
        """Write one record and return once it is on disk; returns its segment number (for `mark_committed`).

        Group commit: records are written one at a time, and an `fdatasync` covers every record written
        before it started, so concurrent appends (the receivers' threads) share one instead of queueing
        for one each."""
        header = _HEADER.pack(kind, len(payload), zlib.crc32(payload))
        with self._lock:
            fh = self._fh
            if fh is None:
                raise RuntimeError("write-ahead log is closed")
            fh.write(header)
            fh.write(payload)
            fh.flush()
            seq = self._seq
            self._appended[seq] += 1
            self._size += len(header) + len(payload)
            self.bytes_appended += len(header) + len(payload)
            self._written += 1
            ticket = self._written
            if self._size >= self.segment_bytes:
                self._seal_locked()
        self._sync(ticket)
        return seq

    def _sync(self, ticket: int) -> None:
        """Return once the `ticket`-th record written is durable."""
        with self._sync_lock:
            with self._lock:
                if self._synced >= ticket:  # an fdatasync that started after it was written has returned
                    return
                if self._fh is None:
                    raise RuntimeError("write-ahead log is closed")
                target = self._written
                fd = os.dup(self._fh.fileno())  # a seal may close the file meanwhile; it syncs it first
            try:
                os.fdatasync(fd)
            finally:
                os.close(fd)
            with self._lock:
                self._synced = max(self._synced, target)

    def seal(self) -> None:
        """Start a new segment, so the current one can be deleted once its records are committed."""
        with self._lock:
            if self._fh is not None and self._appended[self._seq]:
                self._seal_locked()
            self._delete_done_locked()

    def _seal_locked(self) -> None:
        assert self._fh is not None
        self._sync_locked()
        self._fh.close()
        self._seq += 1
        self._start_segment()

    def _sync_locked(self) -> None:
        """Make every record written so far durable (with the lock held: before the file is closed)."""
        assert self._fh is not None
        if self._synced < self._written:
            os.fdatasync(self._fh.fileno())
            self._synced = self._written

    def mark_committed(self, per_segment: Counter[int]) -> None:
        """Records of these segments are in committed Parquet files: delete sealed, fully committed segments."""
        with self._lock:
            self._committed.update(per_segment)
            self._delete_done_locked()

    def _delete_done_locked(self) -> None:
        deleted = False
        for seq in sorted(self._appended):
            if seq == self._seq or self._committed[seq] < self._appended[seq]:
                continue
            (self.directory / f"wal-{seq:012d}.log").unlink(missing_ok=True)
            del self._appended[seq]
            self._committed.pop(seq, None)
            deleted = True
        if deleted:
            _fsync_dir(self.directory)

    def close(self, delete_current: bool = False) -> None:
        """Close the open segment; `delete_current` when all its records are committed (clean shutdown).
        Releases the directory's lock."""
        with self._lock:
            if self._fh is None:
                self._unlock()
                return
            self._sync_locked()  # appends still waiting for their fdatasync find their records durable
            self._fh.close()
            self._fh = None
            done = self._committed[self._seq] >= self._appended[self._seq]
            if delete_current and done:
                (self.directory / f"wal-{self._seq:012d}.log").unlink(missing_ok=True)
                _fsync_dir(self.directory)
            self._unlock()


def _read_segment(path: Path) -> Iterator[tuple[int, bytes]]:
    data = path.read_bytes()
    if not data.startswith(_MAGIC):
        if data:
            _log.warning("tracevals collector: %s is not a write-ahead log segment; skipped", path)
        return
    pos = len(_MAGIC)
    while pos + _HEADER.size <= len(data):
        kind, length, crc = _HEADER.unpack_from(data, pos)
        start = pos + _HEADER.size
        payload = data[start : start + length]
        if len(payload) != length or zlib.crc32(payload) != crc or kind not in (TRACES, LOGS):
            # A torn write from a crash: never acknowledged, since the fsync did not return.
            _log.warning("tracevals collector: %s has a torn record at byte %d; ignoring the rest", path, pos)
            return
        yield kind, payload
        pos = start + length
