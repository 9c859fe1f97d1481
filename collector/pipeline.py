"""The collector's pipeline: admission, the write-ahead log, batching, and commits to Parquet.

Receivers reserve what they read through `admission` (`Admission.admit`, refused when the queue or
memory is full) and call `submit` once a request decoded cleanly; `submit` returns
when the request is in the fsynced write-ahead log, which is when the receiver acknowledges it. One
exporter thread writes queued requests to the open Parquet files (converted through each signal's
processors by `batches.BatchConverter`) in batches of `send_batch_size` spans or every `timeout`, and
commits those on rotation; the log segments whose records are all committed are then deleted. What a
previous run's log holds is read beside new data, as the exporter needs it.

Admission (the sending queue and the memory limiter) is `admission.py`; what a processor does to rows
is `processors/`; the log's format is `wal_format.py`. A failed write or commit (a full disk) discards
the open files and writes their records again from the log, after a pause (`_failed`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracevals.collector.admission import Admission, Throttled
from tracevals.collector.batches import BatchConverter, Queued
from tracevals.collector.commits import CommitJournal
from tracevals.collector.config import CollectorConfig
from tracevals.collector.processors import chains
from tracevals.collector.stats import PipelineStats
from tracevals.collector.wal import TRACES, Record, Ref, WriteAheadLog
from tracevals.lake.sink import RotatingParquetSink

__all__ = ["REPLAY_BATCHES", "Pipeline", "PipelineStats", "Throttled"]

_log = logging.getLogger(__name__)
# Records read back from the log (a previous run's, or after a failed write) are converted this many
# `send_batch_size` batches a call: the conversion's fixed cost spread thinner (~15% less CPU a span than one
# batch; four cost more RSS, ~+100 MiB, for no further gain: bench/wal_replay.py).
REPLAY_BATCHES = 2


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
        self._cond = threading.Condition()  # an RLock: admission takes it too, from the exporter's calls
        self.admission = Admission(
            ex.queue_bytes, config.memory_limiter, self._cond, self.stats, lambda: bool(self._pending)
        )
        self.converter = BatchConverter(
            chains(config.pipelines, config.processors),
            ex.max_attribute_value_bytes,
            config.batch.send_batch_size,
            ex.wal_path / "quarantine",
            self.stats,
        )
        self._pending: list[Queued] = []  # received, with their payloads (and their reservations)
        self._pending_spans = 0
        self._backlog: deque[Queued] = deque()  # to write again after a failed write: read back from the log
        self._replay: Iterator[Record | int] | None = None  # a previous run's log, read as the exporter needs it
        self._replay_queued: Counter[int] = Counter()
        self._replay_read = False  # the previous run's log is all read: commit it now, not at the next rotation
        self._done_refs: set[Ref] = set()  # records a journalled commit of a previous run holds
        self._in_open: list[Queued] = []  # written to the open Parquet files, not committed yet
        self._quarantined: list[Ref] = []
        self._degraded = False  # since a failed write: commit after every batch, to free log space soonest
        self._last_error_log = self._last_refusal_log = -1e9
        self._flush_generation = 0
        self._flushed_generation = 0
        self._stopping = False
        self._abandon = False
        self._threads: list[threading.Thread] = []
        self.segments_to_replay = 0  # a previous run's log segments found at start

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
            self._spawn(self.admission.watch_memory, "tracevals-memory-limiter")

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
            self.admission.close()
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

    # -- durability ------------------------------------------------------------------------

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
            self._pending.append(Queued(kind, payload, ref, reserved, count))
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
        if self.admission.memory_over and self._pending:
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

    def _failed(self, exc: Exception, items: list[Queued]) -> None:
        """A write or commit failed: the open files are discarded (a Parquet writer that failed cannot go on),
        their records read again from the log later, the batch in hand put back; retry after a pause."""
        self.stats.sink_failures += 1
        now = time.monotonic()
        if now - self._last_error_log >= 60:
            self._last_error_log = now
            _log.error("tracevals collector: could not write Parquet (%s); everything acknowledged stays in the "
                       "write-ahead log and is retried every %.0f s", exc, self.admission.retry_after)  # fmt: skip
        self.sink.abort()
        with self._cond:
            redo = [Queued(i.kind, None, i.ref, 0, i.count) for i in self._in_open]
            self._in_open = []
            self._quarantined = []  # their records are not committed yet: quarantined again next time
            live = [i for i in items if i.reserved]
            self._backlog.extendleft(reversed(redo + [i for i in items if not i.reserved]))
            self._pending[:0] = live
            self._pending_spans += sum(i.count for i in live)
            self._degraded = True
            self._cond.wait(timeout=self.admission.retry_after)

    def _take_backlog(self) -> list[Queued]:
        """Up to a batch of records to write again or of a previous run's log, read from the log."""
        budget, size = REPLAY_BATCHES * self.config.batch.send_batch_size, REPLAY_BATCHES * 16 * 1024**2
        taken: list[Queued] = []
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
            taken.append(Queued(record.kind, record.payload, record.ref, 0, count))
            spans, nbytes = spans + count, nbytes + len(record.payload)
        return taken

    def _write(self, items: list[Queued], batches: int = 1) -> None:
        """Rows of `items` into the open Parquet files; their queue bytes are released, and they wait for the
        commit (a quarantined one too: its record is kept aside, so the log may let it go)."""
        tables, quarantined = self.converter.convert(items, batches)
        for name, table in tables.items():
            self.sink.write(name, table)
        with self._cond:
            self.admission.release(sum(item.reserved for item in items))
            for item in items:
                item.reserved = 0
            bad = {id(item) for item in quarantined}
            self._in_open += [item for item in items if id(item) not in bad]
            self._quarantined += [item.ref for item in quarantined]
        for item in items:
            item.payload = None  # free it now; its rows are on disk (and its record in the log)

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
        _retrying(lambda: self.sink.publish(pairs), self.admission.retry_after)
        with self._cond:
            self._in_open, self._quarantined = [], []
            if not self._backlog:
                self._degraded = False
        self.wal.mark_committed(Counter(ref.seq for ref in refs))
        self.wal.seal()
        self.journal.prune(self.wal.live_segments())
