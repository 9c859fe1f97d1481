"""Admission: whether the collector takes a request's bytes now, or tells the client to retry.

Memory is bounded by refusing data, never by dropping it: a request is refused (HTTP 503 with
Retry-After, gRPC UNAVAILABLE with RetryInfo) while the bytes received but not yet in a row group would
pass `sending_queue.queue_size`, or while the process's resident memory (checked every `check_interval`)
is over `limit_mib`, or over the soft limit (`limit_mib - spike_limit_mib`) with data queued or being
received (`check_memory`). Clients retry.

Receivers reserve what they hold as it arrives (`admit`, `resize`), and the pipeline releases it once
the rows are in a row group (`release`). A step that holds much for a moment (a large JSON parse) takes
its turn (`large`), and starts only once resident memory has room for it or nothing more can be freed
(`_room`). All of it under the pipeline's lock, which the exporter shares.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator

import pyarrow as pa

from tracevals.collector.config import MemoryLimiter
from tracevals.collector.stats import PipelineStats

_log = logging.getLogger(__name__)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class Throttled(Exception):
    """The pipeline cannot take more now; the client should retry after `retry_after` seconds."""

    def __init__(self, reason: str, retry_after: float) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


def release_unused_memory() -> None:
    """Hand the allocators' free memory back to the system: Arrow's pool, and glibc's heap where it is one."""
    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: not glibc
        ctypes.CDLL(None).malloc_trim(0)


def fewer_malloc_arenas(arenas: int = 2) -> None:
    """At most `arenas` glibc malloc arenas in this process, unless `MALLOC_ARENA_MAX` says how many. By
    default glibc gives each thread that allocates at once an arena of its own (up to eight per core), and
    what a request's thread frees stays in its arena, fragmented between others' live blocks: the
    collector's resident memory grew by 200-300 MiB that `malloc_trim` could not give back. Call before
    the threads start."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: not glibc
        ctypes.CDLL(None).mallopt(-8, arenas)  # -8: M_ARENA_MAX (malloc.h)


def resident_bytes() -> int:
    """This process's resident memory (Linux `/proc/self/statm`; 0 where unavailable)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


class Admission:
    """The sending queue's reservations and the memory limiter's verdict (see the module docstring).

    `lock` is the pipeline's condition: a refusal and the queue it protects change together, and the
    exporter is woken when memory is over (writing the queue out frees it). `queued()` says whether
    requests wait for the exporter (called with the lock held)."""

    def __init__(
        self,
        queue_bytes: int,
        limiter: MemoryLimiter | None,
        lock: threading.Condition,
        stats: PipelineStats,
        queued: Callable[[], bool],
    ) -> None:
        self.queue_bytes = queue_bytes
        self.limiter = limiter
        self.stats = stats
        self.reserved = 0  # bytes received (as held: decompressed, parsed) and not yet in a row group
        self.memory_over = False
        self.closed = False  # shutting down: everything is refused
        self._lock = lock
        self._queued = queued
        self._large_step = threading.Lock()  # see `large`
        self._parked = 0  # bytes held by requests waiting for the large step's turn (they free nothing meanwhile)
        self._idle_over_warned = False

    @property
    def retry_after(self) -> float:
        return self.limiter.retry_after if self.limiter else 1.0

    def admit(self, nbytes: int, held: int = 0) -> None:
        """Reserve room for `nbytes` more of a request that holds `held` already, or raise `Throttled`; pair
        with `release`. A request alone is always let in (one larger than the queue could never be)."""
        with self._lock:
            if self.closed:
                raise Throttled("the collector is shutting down", self.retry_after)
            if self.memory_over:
                self.stats.requests_throttled += 1
                raise Throttled("memory limit reached", self.retry_after)
            if self.reserved > held and self.reserved + nbytes > self.queue_bytes:
                self.stats.requests_throttled += 1
                raise Throttled("sending queue is full", self.retry_after)
            self.reserved += nbytes
            self.stats.reserved_high_water = max(self.stats.reserved_high_water, self.reserved)

    @contextlib.contextmanager
    def large(self, nbytes: int, held: int, timeout: float) -> Iterator[bool]:
        """Around a step that holds `nbytes` for a moment (a JSON parse) for a request that holds `held`
        already: True if that is over a quarter of the queue, once this caller's turn came (one such step at
        a time) and there is room for it (`_room`); `Throttled` after `timeout`."""
        if nbytes <= self.queue_bytes // 4:
            yield False
            return
        deadline = time.monotonic() + timeout
        with self._lock:
            self._parked += held
        try:
            turn = self._large_step.acquire(timeout=timeout)
        finally:
            with self._lock:
                self._parked -= held
        if not turn:
            with self._lock:
                self.stats.requests_throttled += 1
            raise Throttled("another large request is being decoded", self.retry_after)
        try:
            self._room(nbytes, held, deadline)
            yield True
        finally:
            release_unused_memory()  # the parse's objects are freed: hand their pages back now
            self._large_step.release()

    def _room(self, nbytes: int, held: int, deadline: float) -> None:
        """Wait until resident memory plus `nbytes` fits under `limit_mib`, while waiting can free memory:
        the exporter has rows to write out (others' requests, not parked behind this step, are held). The
        periodic check alone would let a large step start just under the limit and end far over it. When
        nothing more can be freed the step goes ahead (a request alone is always let in); `Throttled` at
        `deadline`."""
        if self.limiter is None:
            return
        hard = self.limiter.limit_mib * 1024**2
        while resident_bytes() + nbytes > hard:
            with self._lock:
                if not (self._queued() or self.reserved - held - self._parked > 0):
                    return
                if time.monotonic() >= deadline:
                    self.stats.requests_throttled += 1
                    raise Throttled("memory limit reached", self.retry_after)
                if not self.memory_over:
                    _log.warning("tracevals collector: memory over the limit (room for a large request)")
                self.memory_over = True  # refuse new data, and the exporter writes the queue out now
                self._lock.notify_all()
                self._lock.wait(0.05)
            release_unused_memory()  # what the exporter freed, back to the system before RSS is read again

    def resize(self, old: int, new: int) -> int:
        """Change a reservation (no throttling: the request is already read); returns `new`."""
        with self._lock:
            self.reserved += new - old
            self.stats.reserved_high_water = max(self.stats.reserved_high_water, self.reserved)
        return new

    def release(self, nbytes: int) -> None:
        with self._lock:
            self.reserved -= nbytes

    def close(self) -> None:
        """Refuse everything from now on, and stop `watch_memory`."""
        with self._lock:
            self.closed = True
            self._lock.notify_all()

    def watch_memory(self) -> None:
        """The memory limiter's thread: `check_memory` every `check_interval` until `close`."""
        assert self.limiter is not None
        while True:
            with self._lock:
                if self._lock.wait_for(lambda: self.closed, self.limiter.check_interval):
                    return
                self.check_memory()

    def check_memory(self) -> None:
        """Refuse data (`admit`) while RSS is over the hard limit, or over the soft limit while data is queued
        or being received: writing it out frees memory. An idle process over the soft limit first hands its
        allocators' unused memory back; if it is still over, refusing would free nothing (RSS is what the
        process holds idle, and allocators keep freed memory), so data is taken until the hard limit."""
        limiter = self.limiter
        assert limiter is not None
        hard, soft = limiter.limit_mib * 1024**2, (limiter.limit_mib - limiter.spike_limit_mib) * 1024**2
        with self._lock:
            rss = resident_bytes()
            busy = self._queued() or self.reserved > 0
            if rss > soft and not busy:
                release_unused_memory()
                rss = resident_bytes()
                if soft < rss <= hard and not self._idle_over_warned:
                    self._idle_over_warned = True
                    _log.warning(
                        "tracevals collector: %d MiB resident with nothing queued, over the memory limiter's soft "
                        "limit (%d MiB): taking data up to limit_mib; raise limit_mib for headroom",
                        rss // 1024**2,
                        soft // 1024**2,
                    )
            over = rss > hard or (rss > soft and busy)
            if over != self.memory_over:
                _log.warning("tracevals collector: memory %s the limit", "over" if over else "back under")
            self.memory_over = over
            if over:
                self._lock.notify_all()  # the exporter writes the queue out now, to free its memory
