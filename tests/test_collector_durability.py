"""Durability: acknowledged means in the fsynced write-ahead log; `kill -9` loses nothing acknowledged,
SIGTERM flushes, and no crash leaves a file a reader cannot open."""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from fixtures.faults import CollectorProcess, lake_rows, span_batches, span_ids, until
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tracevals.collector.pipeline import Pipeline
from tracevals.collector.service import Collector
from tracevals.collector.testing import config_document, local_config
from tracevals.collector.wal import TRACES, LogInUse, WriteAheadLog, encode
from tracevals.lake.lake import Lake
from tracevals.lake.sink import LEGACY_STALE_S, RotatingParquetSink

CLI = [sys.executable, "-c", "from tracevals.cli import main; main()", "collect", "--config"]


def _write_config(tmp_path: Path, rotation: dict[str, object]) -> Path:
    doc = config_document(
        tmp_path / "lake",
        {"exporters": {"parquet": {"rotation": rotation}}, "processors": {"batch": {"timeout": "50ms"}}},
    )
    path = tmp_path / "otel-config.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _lake_span_ids(lake: Path) -> set[str]:
    return set(lake_rows(lake))  # every file must open


def test_sigkill_while_sending_loses_nothing_acknowledged(tmp_path: Path) -> None:
    # Rotation every few batches, so the kill lands with files committed, files open, and log records.
    config = _write_config(tmp_path, {"max_rows": 150})
    batches = span_batches(batches=60, per_batch=20)
    collector = CollectorProcess(config)
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", timeout=5)
    acknowledged: set[str] = set()
    enough = threading.Event()
    stop_sending = threading.Event()

    def send() -> None:
        for batch in batches:
            if stop_sending.is_set():
                return
            if exporter.export(batch) is SpanExportResult.SUCCESS:
                acknowledged.update(span_ids(batch))
            if len(acknowledged) >= 400:
                enough.set()  # the kill comes while later batches are still being sent
        enough.set()

    sender = threading.Thread(target=send)
    sender.start()
    assert enough.wait(60)
    collector.proc.kill()  # SIGKILL: no handler runs, no flush
    collector.proc.wait(timeout=30)
    stop_sending.set()
    sender.join(timeout=60)
    exporter.shutdown()
    lake = tmp_path / "lake"
    assert any(lake.rglob("wal-*.log"))
    restarted = CollectorProcess(config)  # replays the log into Parquet before listening
    assert restarted.stop(signal.SIGTERM) == 0
    found = _lake_span_ids(lake)
    assert acknowledged and acknowledged <= found, f"lost {len(acknowledged - found)} acknowledged spans"
    assert not list(lake.rglob("*.tmp"))
    assert not [p for p in lake.rglob("wal-*.log") if p.stat().st_size > 8]  # only an empty segment, if any


def test_sigterm_flushes_and_leaves_no_log(tmp_path: Path) -> None:
    config = _write_config(tmp_path, {"max_age": "1h"})  # nothing would be committed without the flush
    collector = CollectorProcess(config)
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", timeout=5)
    (batch,) = span_batches(batches=1, per_batch=5)
    assert exporter.export(batch) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert collector.stop(signal.SIGTERM) == 0
    assert "5 spans" in collector.log[-1]
    assert _lake_span_ids(tmp_path / "lake") == span_ids(batch)
    assert not list((tmp_path / "lake").rglob("wal-*.log"))


def test_wal_replay_ignores_a_torn_tail(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path / "wal")
    wal.open()
    wal.append(TRACES, b"first")
    wal.append(TRACES, b"second")
    wal.close()
    (segment,) = wal.segments()
    with open(segment, "ab") as fh:  # a crash in the middle of the third append
        fh.write(encode(TRACES, b"third, never acknowledged", 1)[:-5])
    assert [(r.kind, r.payload) for r in WriteAheadLog(tmp_path / "wal").replay()] == [
        (TRACES, b"first"),
        (TRACES, b"second"),
    ]


def test_wal_deletes_a_sealed_segment_once_committed(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path / "wal")
    wal.open()
    seq = wal.append(TRACES, b"a").seq
    wal.append(TRACES, b"b")
    wal.seal()  # the next segment is created by the next append
    assert len(wal.segments()) == 1
    wal.mark_committed(Counter({seq: 1}))
    assert len(wal.segments()) == 1  # one record of the sealed segment is not committed yet
    wal.mark_committed(Counter({seq: 1}))
    assert wal.segments() == []
    wal.append(TRACES, b"c")
    assert len(wal.segments()) == 1
    wal.close(delete_current=True)
    assert len(wal.segments()) == 1  # its record is not committed: it stays for the next start
    wal.mark_committed(Counter({seq + 1: 1}))
    wal.close(delete_current=True)
    assert wal.segments() == []
    assert os.listdir(tmp_path / "wal") == []


def test_wal_concurrent_appends_share_an_fdatasync_and_return_only_once_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Group commit: appends that arrive while an fdatasync runs share the next one; none returns before an
    fdatasync that started after its record was written (the size synced covers it), and a segment
    sealed meanwhile is synced before it is closed."""
    wal = WriteAheadLog(tmp_path / "wal", segment_bytes=4096)
    wal.open()
    synced: list[tuple[int, int]] = []  # (inode, bytes covered) of each fdatasync
    real = os.fdatasync

    def slow_fdatasync(fd: int) -> None:
        stat = os.fstat(fd)
        time.sleep(0.05)  # long enough for every other thread to write its record meanwhile
        real(fd)
        synced.append((stat.st_ino, stat.st_size))

    monkeypatch.setattr(os, "fdatasync", slow_fdatasync)
    covered: list[bool] = []
    start = threading.Barrier(8)

    def append(i: int) -> None:
        start.wait()
        seq = wal.append(TRACES, bytes([i]) * 1000).seq
        segment = tmp_path / "wal" / f"wal-{seq:012d}.log"
        # this record is somewhere in its segment: some fdatasync of that file covered all of it by now
        ino = os.stat(segment).st_ino
        end = _record_end(segment, i)
        covered.append(any(inode == ino and size >= end for inode, size in synced))

    threads = [threading.Thread(target=append, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wal.close()
    assert covered == [True] * 8
    assert len(synced) < 8  # shared: 8 appends, one fdatasync each would be 8 (a seal adds one)
    records = sorted(record.payload for record in WriteAheadLog(tmp_path / "wal").replay())
    assert records == [bytes([i]) * 1000 for i in range(8)]


def _record_end(segment: Path, byte: int) -> int:
    """Where the record made of `byte` repeated ends in `segment`."""
    data = segment.read_bytes()
    return data.index(bytes([byte]) * 1000) + 1000


def test_the_log_takes_one_collector_at_a_time(tmp_path: Path) -> None:
    first = WriteAheadLog(tmp_path / "wal")
    first.lock()
    second = WriteAheadLog(tmp_path / "wal")
    with pytest.raises(LogInUse, match=rf"in use by another collector \(pid {os.getpid()}\).*own exporters"):
        second.lock()
    first.open()
    first.close()  # releases the lock
    second.lock()
    second.close()


def test_a_second_collector_on_the_same_log_stops_before_touching_it(tmp_path: Path) -> None:
    """Started by mistake with the first one's config, a second collector used to replay the first's log,
    then delete its open segment (what the first acknowledged after that had no log behind it) and its
    temporary Parquet files. Now it stops at start with one line, and the first loses nothing."""
    first = Collector(local_config(tmp_path / "lake"))
    first.start()
    try:
        batch = span_batches(1, 5)[0]
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{first.http_port}/v1/traces")
        assert exporter.export(batch) == SpanExportResult.SUCCESS
        segments = sorted((tmp_path / "lake" / "_wal").glob("wal-*.log"))
        assert segments
        second = Collector(local_config(tmp_path / "lake"))
        with pytest.raises(LogInUse):
            second.start()
        assert sorted((tmp_path / "lake" / "_wal").glob("wal-*.log")) == segments
        later = span_batches(1, 3)[0]
        assert exporter.export(later) == SpanExportResult.SUCCESS
    finally:
        first.stop()
    assert _lake_span_ids(tmp_path / "lake") == span_ids(batch) | span_ids(later)


def test_a_collector_removes_only_its_own_leftovers(tmp_path: Path) -> None:
    """At start a collector deletes the temporary files its crashed run left, not another writer's write
    in progress (another collector with its own log, an agent's embedded writer); an ownerless one only
    when it is over an hour old."""
    directory = tmp_path / "lake" / "spans" / "date=2026-11-30" / "hour=01"
    directory.mkdir(parents=True)
    sink = RotatingParquetSink(Lake.open(tmp_path / "lake"), owner="cmine")
    names = {
        "own": ".part-1-a.cmine.parquet.tmp",
        "other collector": ".part-2-b.cother.parquet.tmp",
        "embedded, writing": ".part-3-c.parquet.tmp",
        "embedded, crashed": ".part-4-d.parquet.tmp",
    }
    for name in names.values():
        (directory / name).write_bytes(b"PAR1")
    old = time.time() - LEGACY_STALE_S - 60
    os.utime(directory / names["embedded, crashed"], (old, old))
    assert sink.remove_stale() == 2
    assert sorted(p.name for p in directory.iterdir()) == sorted([names["other collector"], names["embedded, writing"]])


def test_a_failed_append_leaves_no_torn_record_behind_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills in the middle of an append: half the record is written, then ENOSPC. The half is cut
    off again before the error reaches the receiver, so the next append (acknowledged) is readable: replay
    used to stop at the torn record and lose every acknowledged record after it."""
    wal = WriteAheadLog(tmp_path / "wal")
    wal.open()
    wal.append(TRACES, b"first", 1)
    real = os.write

    def half_then_full(fd: int, data: Any) -> int:
        monkeypatch.setattr(os, "write", real)
        real(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError, match="No space"):
        wal.append(TRACES, b"never acknowledged" * 10, 1)
    wal.append(TRACES, b"third", 1)
    wal.close()
    assert [r.payload for r in WriteAheadLog(tmp_path / "wal").replay()] == [b"first", b"third"]


def test_replay_skips_a_damaged_record_between_good_ones(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    wal = WriteAheadLog(tmp_path / "wal")
    wal.open()
    wal.append(TRACES, b"one", 1)
    second = wal.append(TRACES, b"two" * 100, 1)
    wal.append(TRACES, b"three", 1)
    wal.close()
    (segment,) = wal.segments()
    data = bytearray(segment.read_bytes())
    data[second.offset + 40] ^= 0xFF  # a bad sector in the middle of the second record
    segment.write_bytes(bytes(data))
    with caplog.at_level("WARNING"):
        assert [r.payload for r in WriteAheadLog(tmp_path / "wal").replay()] == [b"one", b"three"]
    assert any("damaged bytes" in r.getMessage() for r in caplog.records)


def test_the_log_keeps_its_reserve_free(tmp_path: Path) -> None:
    from tracevals.collector.wal import DiskReserve, free_bytes

    wal = WriteAheadLog(tmp_path / "wal", reserve_bytes=free_bytes(tmp_path) + 1024**3)  # more than is free
    wal.open()
    with pytest.raises(DiskReserve, match="reserve"):
        wal.append(TRACES, b"x", 1)
    assert wal.segments() == []  # nothing written, not even a segment
    wal.close()


class FailingSink(RotatingParquetSink):
    """Fails its first `failures` writes or prepares the way a full disk does."""

    failures = 0

    def write(self, table_name: str, table: Any) -> None:
        if FailingSink.failures > 0 and table.num_rows:
            FailingSink.failures -= 1
            super().write(table_name, table)  # some rows reach the open file first, as on a real disk
            raise OSError(errno.ENOSPC, "No space left on device")
        super().write(table_name, table)

    def prepare(self) -> Any:
        if FailingSink.failures > 0:
            FailingSink.failures -= 1
            self.abort()
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().prepare()


def test_after_failed_parquet_writes_every_record_is_committed_once(tmp_path: Path) -> None:
    """The sink used to fail for ever after its first failed write (`Operation on closed file`). Now the open
    files are discarded, their records read again from the log, and all are committed once space returns."""
    overrides = {"processors": {"batch": {"timeout": "20ms"}, "memory_limiter": {"retry_after": "50ms"}}}
    config = local_config(tmp_path / "lake", overrides)
    ex = config.exporter
    FailingSink.failures = 0
    sink = FailingSink(ex.lake, max_rows=40, owner="ctest")
    pipeline = Pipeline(config, sink)
    pipeline.start()
    batches = span_batches(batches=12, per_batch=10)
    try:
        for i, batch in enumerate(batches):
            request = encode_spans(batch)
            pipeline.submit(TRACES, request.SerializeToString(), 0, len(batch))
            if i == 3:
                FailingSink.failures = 3  # a write fails (rows half written), then two prepares
        assert pipeline.flush(timeout=60)
    finally:
        pipeline.close()
    rows = Counter(id_ for file in (tmp_path / "lake" / "spans").rglob("*.parquet")
                   for id_ in pq.read_table(file, columns=["span_id"])["span_id"].to_pylist())  # fmt: skip
    assert set(rows) == set().union(*(span_ids(b) for b in batches))
    assert set(rows.values()) == {1}  # none twice
    assert pipeline.stats.sink_failures >= 2
    assert not list((tmp_path / "lake").rglob("*.tmp"))


def test_a_commit_journalled_before_a_crash_is_finished_at_start_and_not_written_again(tmp_path: Path) -> None:
    """A kill after the journal entry and before the renames: the next start renames the finished files and
    skips the records they hold (without the journal the log was written again: rows twice)."""
    config = local_config(tmp_path / "lake", {"processors": {"batch": {"timeout": "20ms"}}})
    first = Pipeline(config)
    first.start()
    batches = span_batches(batches=3, per_batch=5)
    for batch in batches:
        first.submit(TRACES, encode_spans(batch).SerializeToString(), 0, len(batch))
    # what the exporter does at a commit, stopped after the journal (the process is killed there); rotation
    # is 30 s away, so the exporter thread has written the rows and waits to commit
    assert until(lambda: len(first._in_open) == 3, 30, 0.01)
    with first._cond:
        refs = [item.ref for item in first._in_open]
    pairs = first.sink.prepare()
    first.journal.write(pairs, refs)
    first._abandon = True  # the "kill": no publish, the log stays, the lock is dropped with the process
    first.wal._unlock()
    assert not list((tmp_path / "lake" / "spans").rglob("*.parquet"))  # nothing visible yet
    second = Pipeline(config)
    second.start()
    try:
        assert second.flush(timeout=30)
    finally:
        second.close()
    rows = Counter(id_ for file in (tmp_path / "lake" / "spans").rglob("*.parquet")
                   for id_ in pq.read_table(file, columns=["span_id"])["span_id"].to_pylist())  # fmt: skip
    assert set(rows) == set().union(*(span_ids(b) for b in batches)) and set(rows.values()) == {1}
    assert second.stats.replay_skipped == 3 and second.stats.replayed_records == 0
    assert not list((tmp_path / "lake" / "_wal").glob("wal-*.log"))
    assert not list((tmp_path / "lake" / "_wal").glob("commit-*.json"))


def test_a_request_parquet_cannot_hold_is_quarantined_not_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = local_config(tmp_path / "lake", {"processors": {"batch": {"timeout": "20ms"}}})
    pipeline = Pipeline(config)
    monkeypatch.setattr(pipeline.converter, "_columnar", lambda items: None)  # request by request
    real = pipeline.converter._tables

    def refuse_poison(kind: int, request: Any) -> Any:
        if any(s.name == "poison" for r in request.resource_spans for sc in r.scope_spans for s in sc.spans):
            raise ValueError("Arrow cannot hold this")
        return real(kind, request)

    monkeypatch.setattr(pipeline.converter, "_tables", refuse_poison)
    pipeline.start()
    good = span_batches(batches=2, per_batch=3)
    bad = encode_spans(span_batches(batches=1, per_batch=1)[0])
    bad.resource_spans[0].scope_spans[0].spans[0].name = "poison"
    try:
        pipeline.submit(TRACES, encode_spans(good[0]).SerializeToString(), 0, 3)
        pipeline.submit(TRACES, bad.SerializeToString(), 0, 1)
        pipeline.submit(TRACES, encode_spans(good[1]).SerializeToString(), 0, 3)
        assert pipeline.flush(timeout=30)
    finally:
        pipeline.close()
    assert _lake_span_ids(tmp_path / "lake") == span_ids(good[0]) | span_ids(good[1])
    [kept] = list((tmp_path / "lake" / "_wal" / "quarantine").iterdir())
    assert kept.read_bytes() == bad.SerializeToString()
    assert pipeline.stats.items_failed == 1
    assert not list((tmp_path / "lake" / "_wal").glob("wal-*.log"))  # committed: the log is gone
