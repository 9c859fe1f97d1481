"""The collector's write-ahead log: a request is acknowledged once its bytes are fsynced here.

Why a log and not a Parquet file per request: a committed Parquet file costs a file, a footer, a
rename and two fsyncs per request, and leaves the lake with thousands of tiny files; appending the
request's protobuf bytes to a log costs at most one `fdatasync` (concurrent requests share one: group
commit) and writes each byte twice in all (log, then Parquet). What a killed collector had logged is
written to Parquet by the next one (`Pipeline`), so `kill -9` loses nothing that was acknowledged.

Layout: `wal-<seq>.log` segments of records, whose format, and how damage is met when they are read
back, is `wal_format`'s. A record is named by its `Ref` (segment, byte offset).

What can go wrong while writing, and what the log does:
- A crash in the middle of an append leaves a torn record at the end of a segment. It was never
  acknowledged (its fdatasync did not return), and replay skips it.
- An append that fails (disk full, I/O error) is cut off again (`ftruncate` back to where it started)
  before the error reaches the receiver, which answers 503: later appends never follow a partial record.
  If even the cut fails, the segment is sealed as it is and the next append starts a new one.
- The log keeps `reserve_bytes` free on its file system: an append that would leave less is refused
  (`DiskReserve`, an `OSError`, so 503), so the log cannot take the space the Parquet files need to
  commit what it holds (and so to free it).

A sealed segment is deleted once every record in it is in a committed Parquet file (`mark_committed`).
Segments are opened lazily, at the first append, so a collector starts on a full disk.

One collector at a time: `lock()` takes an exclusive lock on the directory (`LOCK`, flock; the kernel
drops it when the process ends, `kill -9` included). A second collector on the same log would replay and
then delete segments the first is still appending to: it fails at start instead (`LogInUse`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from tracevals.collector.wal_format import LOGS, MAGIC, TRACES, Record, Ref, encode, read_record, read_segment
from tracevals.lake.writer import fsync_path

__all__ = [
    "LOGS",
    "TRACES",
    "DiskReserve",
    "LogInUse",
    "Record",
    "Ref",
    "WriteAheadLog",
    "default_reserve",
    "encode",
    "free_bytes",
]

_log = logging.getLogger(__name__)

_NO_COUNT = 1 << 62  # an old segment's records while it is still being read: not deletable yet


class LogInUse(OSError):
    """Another process holds the write-ahead log's lock."""


class DiskReserve(OSError):
    """The append would leave less free space than the log's reserve."""


def free_bytes(directory: Path) -> int:
    """Bytes an unprivileged writer may still use on `directory`'s file system."""
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


def default_reserve(directory: Path) -> int:
    """The reserve when none is configured: 5 % of the file system, at most 256 MiB."""
    st = os.statvfs(directory)
    return min(256 * 1024**2, st.f_blocks * st.f_frsize // 20)


class WriteAheadLog:
    """Append-only, fsynced segments in `directory`; thread-safe."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        segment_bytes: int = 64 * 1024**2,
        reserve_bytes: int | None = 0,
    ) -> None:
        """`reserve_bytes`: free space appends leave on the file system (None: `default_reserve`)."""
        self.directory = Path(directory)
        self.segment_bytes = segment_bytes
        self._reserve_setting = reserve_bytes
        self.reserve_bytes = reserve_bytes or 0
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()  # one fdatasync at a time (group commit, see `append`)
        self._written = 0  # records written so far, counted from open
        self._synced = 0  # of which are known durable
        self._appended: Counter[int] = Counter()
        self._committed: Counter[int] = Counter()
        self._fd: int | None = None  # the open segment, or None: the next append starts one
        self._open = False
        self._seq = 0
        self._first_seq = 0
        self._size = 0
        self.bytes_appended = 0
        self._lock_fd: int | None = None

    def lock(self) -> None:
        """Take the directory's lock, held until `close` (or the process's end); `LogInUse` if another
        process holds it. Call before reading old segments."""
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
        with contextlib.suppress(OSError):  # the pid is for the message above; a full disk must not stop us
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

    def _seqs(self) -> list[int]:
        """The numbers of the segments on disk, oldest first."""
        return [int(p.stem.split("-")[1]) for p in self.segments()]

    def _path(self, seq: int) -> Path:
        return self.directory / f"wal-{seq:012d}.log"

    def old_segments(self) -> list[int]:
        """The segments that were on disk before `open` (a previous run's), oldest first."""
        return [s for s in self._seqs() if s < self._first_seq]

    def replay(self, seq: int | None = None) -> Iterator[Record]:
        """Every intact record of segment `seq` (default: of every segment on disk), oldest first."""
        for s in [seq] if seq is not None else self._seqs():
            yield from read_segment(self._path(s), s)

    def read(self, ref: Ref) -> Record:
        """The record at `ref`, read again (after a failed Parquet write)."""
        return read_record(self._path(ref.seq), ref)

    def open(self) -> None:
        """Number new segments after any existing ones; the first append creates the first of them."""
        self.directory.mkdir(parents=True, exist_ok=True)
        existing = self._seqs()
        self._seq = existing[-1] + 1 if existing else 1
        self._first_seq = self._seq
        if self._reserve_setting is None:
            self.reserve_bytes = default_reserve(self.directory)
        self._open = True

    def expect(self, seq: int, records: int) -> None:
        """An old segment is read: `records` of it are queued for Parquet; it goes once they are committed.
        Until this is called for it, an old segment is never deleted."""
        with self._lock:
            self._appended[seq] = records
            self._delete_done_locked()

    def hold(self, seq: int) -> None:
        """An old segment is being read: keep it whatever is committed, until `expect`."""
        with self._lock:
            self._appended[seq] = _NO_COUNT

    def _start_segment_locked(self) -> None:
        path = self._path(self._seq)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            _write_all(fd, MAGIC)
            os.fsync(fd)
            fsync_path(self.directory)  # the new file's name must survive a crash too
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
            raise
        self._fd = fd
        self._size = len(MAGIC)

    def append(self, kind: int, payload: bytes, count: int = 0) -> Ref:
        """Write one record and return once it is on disk; returns where it is (for `mark_committed`).

        Group commit: records are written one at a time, and an `fdatasync` covers every record written
        before it started, so concurrent appends (the receivers' threads) share one instead of queueing
        for one each. Raises `OSError` (nothing of the record is left behind) if it cannot be stored."""
        record = encode(kind, payload, count)
        with self._lock:
            if not self._open:
                raise RuntimeError("write-ahead log is closed")
            if self.reserve_bytes and free_bytes(self.directory) - len(record) < self.reserve_bytes:
                raise DiskReserve(
                    errno.ENOSPC,
                    f"less than the write-ahead log's reserve of {self.reserve_bytes // 1024**2} MiB free "
                    f"on {self.directory}",
                )
            if self._fd is None:
                self._start_segment_locked()
            fd = self._fd
            assert fd is not None
            start = self._size
            try:
                _write_all(fd, record)
            except OSError:
                self._cut_locked(fd, start)
                raise
            seq = self._seq
            self._appended[seq] += 1
            self._size += len(record)
            self.bytes_appended += len(record)
            self._written += 1
            ticket = self._written
            if self._size >= self.segment_bytes:
                self._seal_locked()
        self._sync(ticket)
        return Ref(seq, start)

    def _cut_locked(self, fd: int, start: int) -> None:
        """Remove a failed append's partial record; if that fails too, seal the segment where it is."""
        try:
            os.ftruncate(fd, start)
            return
        except OSError:
            pass
        _log.error("tracevals collector: could not cut a failed append out of %s; sealing it", self._path(self._seq))
        with contextlib.suppress(OSError):
            self._sync_locked()
        with contextlib.suppress(OSError):
            os.close(fd)
        self._fd = None
        self._seq += 1

    def _sync(self, ticket: int) -> None:
        """Return once the `ticket`-th record written is durable."""
        with self._sync_lock:
            with self._lock:
                if self._synced >= ticket:  # an fdatasync that started after it was written has returned
                    return
                if self._fd is None:  # a seal syncs first, so only a failed write's seal gets here
                    raise OSError(errno.EIO, "the write-ahead log segment was sealed after a failed write")
                target = self._written
                fd = os.dup(self._fd)  # a seal may close the file meanwhile; it syncs it first
            try:
                os.fdatasync(fd)
            except OSError:
                # The kernel may have dropped the pages: the segment's later records can no longer be
                # trusted to reach the disk. Seal it; this append is not acknowledged (the caller answers 503).
                with self._lock:
                    if self._fd is not None and os.path.sameopenfile(fd, self._fd):
                        with contextlib.suppress(OSError):
                            os.close(self._fd)
                        self._fd = None
                        self._seq += 1
                raise
            finally:
                os.close(fd)
            with self._lock:
                self._synced = max(self._synced, target)

    def seal(self) -> None:
        """End the current segment (the next append starts a new one), so that it can be deleted once its
        records are committed."""
        with self._lock:
            if self._fd is not None and self._appended[self._seq]:
                self._seal_locked()
            self._delete_done_locked()

    def _seal_locked(self) -> None:
        assert self._fd is not None
        self._sync_locked()
        os.close(self._fd)
        self._fd = None
        self._seq += 1

    def _sync_locked(self) -> None:
        """Make every record written so far durable (with the lock held: before the file is closed)."""
        assert self._fd is not None
        if self._synced < self._written:
            os.fdatasync(self._fd)
            self._synced = self._written

    def mark_committed(self, per_segment: Counter[int]) -> None:
        """Records of these segments are in committed Parquet files: delete sealed, fully committed segments."""
        with self._lock:
            self._committed.update(per_segment)
            self._delete_done_locked()

    def live_segments(self) -> set[int]:
        """The segments not deleted yet (appended to, or old and not yet committed)."""
        with self._lock:
            return set(self._appended) | ({self._seq} if self._fd is not None else set())

    def _delete_done_locked(self) -> None:
        deleted = False
        for seq in sorted(self._appended):
            if (seq == self._seq and self._fd is not None) or self._committed[seq] < self._appended[seq]:
                continue
            self._path(seq).unlink(missing_ok=True)
            del self._appended[seq]
            self._committed.pop(seq, None)
            deleted = True
        if deleted:
            fsync_path(self.directory)

    def close(self, delete_current: bool = False) -> None:
        """Close the open segment; `delete_current` deletes every segment whose records are all committed
        (clean shutdown). Releases the directory's lock."""
        with self._lock:
            self._open = False
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    self._sync_locked()  # appends still waiting for their fdatasync find their records durable
                os.close(self._fd)
                self._fd = None
                if not self._appended[self._seq]:
                    self._path(self._seq).unlink(missing_ok=True)  # an empty segment
                    self._appended.pop(self._seq, None)
            if delete_current:
                with contextlib.suppress(OSError):
                    self._delete_done_locked()
            self._unlock()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
