"""The collector's pipeline: admission (memory limits), the write-ahead log, batching, Parquet.

Receivers call `admit` before reading a body and `submit` once it decoded cleanly; `submit` returns
when the request is in the fsynced write-ahead log, which is when the receiver acknowledges it. One
exporter thread turns queued requests into Arrow tables (sampling and truncating on the way) in
batches of `send_batch_size` spans or every `timeout`, appends them to the open Parquet files, and
commits those on rotation; the log segments whose records are all committed are then deleted.

Memory is bounded by refusing data, never by dropping it: a request is refused (HTTP 503 with
Retry-After, gRPC UNAVAILABLE with RetryInfo) while the bytes received but not yet in a row group would
pass `sending_queue.queue_size`, or while the process's resident memory (checked every `check_interval`)
is over `limit_mib`, or over the soft limit (`limit_mib - spike_limit_mib`) with data queued or being
received (`_check_memory`). Clients retry.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracevals.collector.commits import CommitJournal
from tracevals.collector.config import CollectorConfig
from tracevals.collector.conversion import columnar as otlp_columnar
from tracevals.collector.conversion.rows import Keep, logs_table, spans_table
from tracevals.collector.wal import TRACES, Record, Ref, WriteAheadLog
from tracevals.lake.redaction import LOG_CONTENT_COLUMNS, SPAN_CONTENT_COLUMNS, Redactor, redact_table
from tracevals.lake.sampling import SessionSampler
from tracevals.lake.schema import LOGS_DIR, SPANS_DIR
from tracevals.lake.sink import RotatingParquetSink

_log = logging.getLogger(__name__)
# Records read back from the log (a previous run's, or after a failed write) are converted this many
# `send_batch_size` batches a call: the conversion's fixed cost spread thinner (~15% less CPU a span than one
# batch; four cost more RSS, ~+100 MiB, for no further gain: bench/wal_replay.py).
REPLAY_BATCHES = 2
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class Throttled(Exception):
    """The pipeline cannot take more now; the client should retry after `retry_after` seconds."""

    def __init__(self, reason: str, retry_after: float) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


@dataclass
class _Item:
    kind: int
    payload: bytes | None  # the request's protobuf encoding, as in the log; None: read it from the log
    ref: Ref
    reserved: int
    count: int
    received: float = field(default_factory=time.monotonic)


@dataclass
class PipelineStats:
    spans_accepted: int = 0
    logs_accepted: int = 0
    requests_throttled: int = 0
    reserved_high_water: int = 0
    replayed_records: int = 0  # records of a previous run's log written to Parquet by this one
    replay_skipped: int = 0  # of which a journalled commit already held (not written twice)
    stale_files_removed: int = 0
    items_failed: int = 0  # records Parquet cannot hold, kept in the log's quarantine folder
    sink_failures: int = 0  # Parquet writes or commits that failed (disk full ...) and were retried
    columnar_batches: int = 0  # batches of trace requests converted column by column (conversion.columnar)
    columnar_refused: int = 0  # batches that path refused, converted request by request in Python instead


def _parse(kind: int, payload: bytes) -> Any:
    """A logged request decoded again (it was checked when it was received)."""
    message = ExportTraceServiceRequest() if kind == TRACES else ExportLogsServiceRequest()
    message.ParseFromString(payload)
    return message


def _retrying(action: Any, pause: float) -> Any:
    """`action()` until it succeeds: for a step after which going back is wrong (a journalled commit's
    renames, which need no space, or uploads to an object store that is away). One error line a minute."""
    logged = -1e9
    while True:
        try:
            return action()
        except OSError as exc:
            if time.monotonic() - logged >= 60:
                logged = time.monotonic()
                _log.error("tracevals collector: could not publish committed files (%s); retrying every %.0f s "
                           "(acknowledged data stays in the write-ahead log)", str(exc).splitlines()[0] if str(exc)
                           else type(exc).__name__, pause)  # fmt: skip
            time.sleep(pause)


def _owner(wal: Path) -> str:
    """The name this collector's temporary lake files carry: one per write-ahead log (the log's lock makes
    it one collector's), so that at start it deletes its own crash leftovers and no other writer's."""
    return "c" + hashlib.sha1(os.fsencode(os.path.abspath(wal))).hexdigest()[:10]


def release_unused_memory() -> None:
    """Hand the allocators' free memory back to the system: Arrow's pool, and glibc's heap where it is one."""
    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: not glibc
        ctypes.CDLL(None).malloc_trim(0)


def resident_bytes() -> int:
    """This process's resident memory (Linux `/proc/self/statm`; 0 where unavailable)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


class Pipeline:
    """Admission, durability and batching between the receivers and the Parquet exporter."""

    def __init__(self, config: CollectorConfig, sink: RotatingParquetSink | None = None) -> None:
        self.config = config
        ex = config.exporter
        # a lake on object storage: files are finished in the log's staging/ folder, then uploaded (sink.py)
        self.sink = sink or RotatingParquetSink(
            ex.lake,
            ex.compression,
            ex.compression_level,
            ex.max_rows,
            ex.max_bytes,
            ex.max_age,
            _owner(ex.wal_path),
            staging=ex.wal_path / "staging",
        )
        self.wal = WriteAheadLog(ex.wal_path, reserve_bytes=ex.wal_reserve_bytes)
        self.journal = CommitJournal(ex.wal_path, self.sink.publish_one)
        self.stats = PipelineStats()
        sampler = config.sampler
        self._sampler = SessionSampler(sampler.sampling_percentage, sampler.hash_seed) if sampler else None
        redaction = config.redaction
        self._redactor = (
            Redactor(pii=redaction.pii, names=redaction.names, extra=redaction.blocked_values) if redaction else None
        )
        self._cond = threading.Condition()
        self._large_step = threading.Lock()  # see `large`
        self._pending: list[_Item] = []  # received, with their payloads (and their reservations)
        self._pending_spans = 0
        self._backlog: deque[_Item] = deque()  # to write again after a failed write: read back from the log
        self._replay: Iterator[Record | int] | None = None  # a previous run's log, read as the exporter needs it
        self._replay_queued: Counter[int] = Counter()
        self._replay_read = False  # the previous run's log is all read: commit it now, not at the next rotation
        self._done_refs: set[Ref] = set()  # records a journalled commit of a previous run holds
        self._in_open: list[_Item] = []  # written to the open Parquet files, not committed yet
        self._quarantined: list[Ref] = []
        self._degraded = False  # since a failed write: commit after every batch, to free log space soonest
        self._last_error_log = self._last_refusal_log = -1e9
        self._reserved = 0
        self._memory_over = False
        self._idle_over_warned = False
        self._flush_generation = 0
        self._flushed_generation = 0
        self._stopping = False
        self._abandon = False
        self._threads: list[threading.Thread] = []
        self.segments_to_replay = 0  # a previous run's log segments found at start

    @property
    def retry_after(self) -> float:
        return self.config.memory_limiter.retry_after if self.config.memory_limiter else 1.0

    def _keep(self, signal: str) -> Keep | None:
        if self._sampler is None or signal not in self.config.sampled_signals:
            return None
        return self._sampler.keep

    def _tables(self, kind: int, request: Any) -> tuple[str, pa.Table]:
        limit = self.config.exporter.max_attribute_value_bytes
        if kind == TRACES:
            return SPANS_DIR, spans_table(request, limit, self._keep("traces"))
        return LOGS_DIR, logs_table(request, limit, self._keep("logs"))

    def _store(self, name: str, table: pa.Table) -> None:
        """Rows into the sink, through the `redaction` processor where the signal's pipeline has it:
        every path to the lake (columnar, per request, a previous run's log) passes here."""
        signal, columns = ("traces", SPAN_CONTENT_COLUMNS) if name == SPANS_DIR else ("logs", LOG_CONTENT_COLUMNS)
        if self._redactor is not None and signal in self.config.redacted_signals:
            table = redact_table(table, columns, self._redactor)
        self.sink.write(name, table)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Recover what a previous run left, then start the threads. The log's lock first: a second collector
        on the same log stops here (`wal.LogInUse`), before touching it. A previous run's log is not written
        out here: the exporter thread reads it beside new data, so the receivers open at once (and a start
        on a full disk succeeds; the log waits for space like any other data)."""
        # the lake's folder, or the bucket and the credentials, before anything is acknowledged (one line)
        self.config.exporter.lake.prepare()
        self.wal.lock()
        try:
            self._done_refs = self.journal.recover()  # before the stale files go: it renames finished ones
            self.stats.stale_files_removed = self.sink.remove_stale()
            self.wal.open()
            old = self.wal.old_segments()
            self.segments_to_replay = len(old)
            for seq in old:
                self.wal.hold(seq)
            self._replay = self._read_old(old) if old else None
        except BaseException:
            self.wal.close()  # releases the lock
            raise
        self._spawn(self._export_loop, "tracevals-exporter")
        if self.config.memory_limiter is not None:
            self._spawn(self._memory_loop, "tracevals-memory-limiter")

    def _read_old(self, seqs: list[int]) -> Iterator[Record | int]:
        """A previous run's records, then each segment's number once all of it is read."""
        for seq in seqs:
            yield from self.wal.replay(seq)
            yield seq

    def _spawn(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def close(self, timeout: float | None = None) -> bool:
        """Write and commit everything queued, delete the log, stop the threads (idempotent). Returns False
        if that did not finish within `timeout` (default: the exporter's `shutdown_timeout`), e.g. on a full
        disk: what is left stays in the log, durable, and the next start writes it."""
        with self._cond:
            if self._stopping:
                return True
            self._stopping = True
            self._cond.notify_all()
        timeout = self.config.exporter.shutdown_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        finished = not any(thread.is_alive() for thread in self._threads)
        if not finished:
            with self._cond:
                self._abandon = True
                self._cond.notify_all()
                left = len(self._pending) + len(self._backlog) + len(self._in_open)
            _log.error(
                "tracevals collector: could not write everything to Parquet within %.0f s (%d request(s)%s left); "
                "they stay in the write-ahead log and the next start writes them",
                timeout,
                left,
                " and a previous run's log" if self._replay is not None else "",
            )
        self.wal.close(delete_current=finished)
        if finished:
            self.journal.prune(self.wal.live_segments())
        return finished

    # -- admission and durability ------------------------------------------------------------

    def admit(self, nbytes: int, held: int = 0) -> None:
        """Reserve room for `nbytes` more of a request that holds `held` already, or raise `Throttled`; pair
        with `release`. A request alone is always let in (one larger than the queue could never be)."""
        with self._cond:
            if self._stopping:
                raise Throttled("the collector is shutting down", self.retry_after)
            if self._memory_over:
                self.stats.requests_throttled += 1
                raise Throttled("memory limit reached", self.retry_after)
            if self._reserved > held and self._reserved + nbytes > self.config.exporter.queue_bytes:
                self.stats.requests_throttled += 1
                raise Throttled("sending queue is full", self.retry_after)
            self._reserved += nbytes
            self.stats.reserved_high_water = max(self.stats.reserved_high_water, self._reserved)

    @contextlib.contextmanager
    def large(self, nbytes: int, timeout: float) -> Iterator[bool]:
        """Around a step that holds `nbytes` for a moment (a JSON parse): True if that is over a quarter of
        the queue, once this caller's turn came (one such step at a time; `Throttled` after `timeout`)."""
        if nbytes <= self.config.exporter.queue_bytes // 4:
            yield False
            return
        if not self._large_step.acquire(timeout=timeout):
            self.stats.requests_throttled += 1
            raise Throttled("another large request is being decoded", self.retry_after)
        try:
            yield True
        finally:
            release_unused_memory()  # the parse's objects are freed: hand their pages back now
            self._large_step.release()

    def resize(self, old: int, new: int) -> int:
        """Change a reservation (no throttling: the request is already read); returns `new`."""
        with self._cond:
            self._reserved += new - old
            self.stats.reserved_high_water = max(self.stats.reserved_high_water, self._reserved)
        return new

    def release(self, nbytes: int) -> None:
        with self._cond:
            self._reserved -= nbytes

    def submit(self, kind: int, payload: bytes, reserved: int, count: int) -> None:
        """Log `payload` (a checked request's protobuf encoding) durably, then queue it for Parquet; the
        caller may acknowledge after. Only the encoding is queued: it is what `queue_size` counts, and a
        decoded request takes several times its size. Raises `OSError` if the log cannot store it."""
        try:
            ref = self.wal.append(kind, payload, count)
        except OSError as exc:
            now = time.monotonic()
            if now - self._last_refusal_log >= 60:  # once a minute, not once a request
                self._last_refusal_log = now
                _log.error("tracevals collector: refusing data (503), the write-ahead log cannot store it: %s", exc)
            raise
        with self._cond:
            self._pending.append(_Item(kind, payload, ref, reserved, count))
            self._pending_spans += count
            if kind == TRACES:
                self.stats.spans_accepted += count
            else:
                self.stats.logs_accepted += count
            if self._pending_spans >= self.config.batch.send_batch_size:
                self._cond.notify_all()

    def flush(self, timeout: float = 30.0) -> bool:
        """Write and commit everything acknowledged so far (and what a previous run's log held); True once
        done."""
        with self._cond:
            self._flush_generation += 1
            wanted = self._flush_generation
            self._cond.notify_all()
            return self._cond.wait_for(lambda: self._flushed_generation >= wanted or self._stopping, timeout)

    # -- the exporter thread -----------------------------------------------------------------

    def _more_to_read(self) -> bool:
        return bool(self._backlog) or self._replay is not None

    def _drain_due(self) -> bool:
        if self._abandon:
            return True
        if self._stopping or self._flush_generation > self._flushed_generation or self._more_to_read():
            return True
        if self._memory_over and self._pending:
            return True
        if self._pending_spans >= self.config.batch.send_batch_size:
            return True
        if self._pending and time.monotonic() - self._pending[0].received >= self.config.batch.timeout:
            return True
        return self.sink.age() >= self.sink.max_age > 0 and bool(self.sink.open_rows)

    def _export_loop(self) -> None:
        while True:
            with self._cond:
                while not self._drain_due():
                    self._cond.wait(timeout=min(self.config.batch.timeout or 0.05, 0.25))
                if self._abandon:
                    return
                items, self._pending, self._pending_spans = self._pending, [], 0
                flush_to, stopping = self._flush_generation, self._stopping
            try:
                taken = self._take_backlog()
                items += taken
                self._write(items, REPLAY_BATCHES if taken else 1)
                items = []
                more = self._more_to_read()
                if (
                    ((stopping or flush_to > self._flushed_generation or self._replay_read) and not more)
                    or self.sink.due()
                    or self._degraded
                ):
                    self._commit()
                    self._replay_read = self._replay_read and more
            except Exception as exc:  # disk full, permissions: discard the open files, write it all again
                self._failed(exc, items)
                continue
            with self._cond:
                if not more:
                    self._flushed_generation = max(self._flushed_generation, flush_to)
                    self._cond.notify_all()
                if stopping and not self._pending and not more and not self._in_open:
                    return

    def _failed(self, exc: Exception, items: list[_Item]) -> None:
        """A write or commit failed: the open files are discarded (a Parquet writer that failed cannot go on),
        their records read again from the log later, the batch in hand put back; retry after a pause."""
        self.stats.sink_failures += 1
        now = time.monotonic()
        if now - self._last_error_log >= 60:
            self._last_error_log = now
            _log.error("tracevals collector: could not write Parquet (%s); everything acknowledged stays in the "
                       "write-ahead log and is retried every %.0f s", exc, self.retry_after)  # fmt: skip
        self.sink.abort()
        with self._cond:
            redo = [_Item(i.kind, None, i.ref, 0, i.count) for i in self._in_open]
            self._in_open = []
            self._quarantined = []  # their records are not committed yet: quarantined again next time
            live = [i for i in items if i.reserved]
            self._backlog.extendleft(reversed(redo + [i for i in items if not i.reserved]))
            self._pending[:0] = live
            self._pending_spans += sum(i.count for i in live)
            self._degraded = True
            self._cond.wait(timeout=self.retry_after)

    def _take_backlog(self) -> list[_Item]:
        """Up to a batch of records to write again or of a previous run's log, read from the log."""
        budget, size = REPLAY_BATCHES * self.config.batch.send_batch_size, REPLAY_BATCHES * 16 * 1024**2
        taken: list[_Item] = []
        spans = nbytes = 0
        while self._backlog and spans < budget and nbytes < size:
            with self._cond:
                item = self._backlog.popleft()
            taken.append(item)
            if item.payload is None:
                try:
                    item.payload = self.wal.read(item.ref).payload
                except BaseException:
                    with self._cond:  # nothing taken is lost: back to the front, in order
                        self._backlog.extendleft(reversed(taken))
                    raise
            spans, nbytes = spans + max(item.count, 1), nbytes + len(item.payload)
        while self._replay is not None and spans < budget and nbytes < size:
            record = next(self._replay, None)
            if record is None:
                self._replay = None
                self._replay_read = True
                _log.info("tracevals collector: the previous run's write-ahead log is read (%d records written, "
                          "%d already committed)", self.stats.replayed_records, self.stats.replay_skipped)  # fmt: skip
                break
            if isinstance(record, int):  # a segment read to its end
                self.wal.expect(record, self._replay_queued.pop(record, 0))
                continue
            if record.ref in self._done_refs:
                self.stats.replay_skipped += 1
                continue
            self._replay_queued[record.ref.seq] += 1
            self.stats.replayed_records += 1
            count = record.items or max(1, len(record.payload) // 200)  # format 1 has no count: a guess, for batching
            taken.append(_Item(record.kind, record.payload, record.ref, 0, count))
            spans, nbytes = spans + count, nbytes + len(record.payload)
        return taken

    def _write(self, items: list[_Item], batches: int = 1) -> None:
        by_table: dict[str, list[pa.Table]] = {}
        # trace requests column by column (conversion.columnar), a batch of about send_batch_size spans at a time
        # (the intermediate arrays of a whole queue would hold several times its size; a remainder under
        # half a batch joins the batch before it, as a batch has a fixed cost of ~5 ms); the rest, and what
        # that path refuses, request by request in Python
        converted: list[_Item] = []
        chunk: list[_Item] = []
        chunk_spans = 0
        traces = [item for item in items if item.kind == TRACES]
        size = batches * self.config.batch.send_batch_size
        left = sum(item.count for item in traces)
        for i, item in enumerate(traces):
            chunk.append(item)
            chunk_spans += item.count
            left -= item.count
            if (chunk_spans >= size and left >= size // 2) or i == len(traces) - 1:
                table = self._columnar(chunk)
                if table is not None:
                    by_table.setdefault(SPANS_DIR, []).append(table)
                    converted += chunk
                chunk, chunk_spans = [], 0
        done = {id(item) for item in converted}
        rest = [item for item in items if id(item) not in done]
        quarantined: list[_Item] = []
        for item in rest:
            assert item.payload is not None
            try:
                name, table = self._tables(item.kind, _parse(item.kind, item.payload))
            except Exception:
                # A request the checks let through but Parquet cannot hold: retrying cannot fix it, and it must
                # not block the queue behind it. Its bytes are kept aside (never dropped) and said loudly.
                self._quarantine(item)
                quarantined.append(item)
                continue
            by_table.setdefault(name, []).append(table)
        for name, tables in by_table.items():
            self._store(name, pa.concat_tables(tables) if len(tables) > 1 else tables[0])
        with self._cond:
            for item in items:
                self._reserved -= item.reserved
                item.reserved = 0
            bad = {id(item) for item in quarantined}
            self._in_open += [item for item in items if id(item) not in bad]
            self._quarantined += [item.ref for item in quarantined]
        for item in items:
            item.payload = None  # free it now; its rows are on disk (and its record in the log)

    def _quarantine(self, item: _Item) -> None:
        assert item.payload is not None
        folder = self.config.exporter.wal_path / "quarantine"
        folder.mkdir(exist_ok=True)
        path = folder / f"{'traces' if item.kind == TRACES else 'logs'}-{item.ref.seq}-{item.ref.offset}.binpb"
        with open(path, "wb") as fh:
            fh.write(item.payload)
            fh.flush()
            os.fsync(fh.fileno())
        self.stats.items_failed += 1
        _log.exception(
            "tracevals collector: a request Parquet cannot hold is kept in %s (OTLP protobuf), not in the lake", path
        )

    def _columnar(self, items: list[_Item]) -> pa.Table | None:
        """The spans of these trace requests (`conversion.columnar`), or None where that path refuses them."""
        limit = self.config.exporter.max_attribute_value_bytes
        payloads = [i.payload for i in items if i.payload is not None]
        try:
            batch = otlp_columnar.decode(payloads)  # the whole chunk in one call
            table = otlp_columnar.spans_table_columnar([batch], payloads, limit, self._keep("traces"))
        except Exception:  # what the native decoder or a kernel refuses: request by request, in Python
            _log.debug("tracevals collector: columnar conversion failed; converting in Python", exc_info=True)
            self.stats.columnar_refused += 1
            return None
        self.stats.columnar_batches += 1
        return table

    def _commit(self) -> None:
        """Finish the open files, journal what they hold, publish them, then let the log delete what they
        emptied (see `commits`)."""
        with self._cond:
            items, quarantined = list(self._in_open), list(self._quarantined)
        refs = [item.ref for item in items] + quarantined
        if not refs and not self.sink.open_rows:
            return
        pairs = self.sink.prepare()
        try:
            self.journal.write(pairs, refs)
        except BaseException:  # not committed: the finished files must not take the space (a full disk)
            for tmp, _ in pairs:
                with contextlib.suppress(OSError):
                    tmp.unlink()
            raise
        _retrying(lambda: self.sink.publish(pairs), self.retry_after)
        with self._cond:
            self._in_open, self._quarantined = [], []
            if not self._backlog:
                self._degraded = False
        self.wal.mark_committed(Counter(ref.seq for ref in refs))
        self.wal.seal()
        self.journal.prune(self.wal.live_segments())

    # -- the memory limiter ------------------------------------------------------------------

    def _memory_loop(self) -> None:
        limiter = self.config.memory_limiter
        assert limiter is not None
        while True:
            with self._cond:
                if self._cond.wait_for(lambda: self._stopping, limiter.check_interval):
                    return
                self._check_memory()

    def _check_memory(self) -> None:
        """Refuse data (`admit`) while RSS is over the hard limit, or over the soft limit while data is queued
        or being received: writing it out frees memory. An idle process over the soft limit first hands its
        allocators' unused memory back; if it is still over, refusing would free nothing (RSS is what the
        process holds idle, and allocators keep freed memory), so data is taken until the hard limit."""
        limiter = self.config.memory_limiter
        assert limiter is not None
        hard, soft = limiter.limit_mib * 1024**2, (limiter.limit_mib - limiter.spike_limit_mib) * 1024**2
        rss = resident_bytes()
        busy = bool(self._pending) or self._reserved > 0
        if soft < rss <= hard and not busy:
            release_unused_memory()
            rss = resident_bytes()
            if rss > soft and not self._idle_over_warned:
                self._idle_over_warned = True
                _log.warning(
                    "tracevals collector: %d MiB resident with nothing queued, over the memory limiter's soft limit "
                    "(%d MiB): taking data up to limit_mib; raise limit_mib for headroom",
                    rss // 1024**2,
                    soft // 1024**2,
                )
        over = rss > hard or (rss > soft and busy)
        if over != self._memory_over:
            _log.warning("tracevals collector: memory %s the limit", "over" if over else "back under")
        self._memory_over = over
        if over:
            self._cond.notify_all()  # write the queue out now, to free its memory
