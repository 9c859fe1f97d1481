"""The replay of a previous run's write-ahead log at start: committed once read (not at the next rotation),
each record once, beside new data."""

from __future__ import annotations

import os
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fixtures.faults import lake_rows, span_batches, until
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from tracevals.collector import wal_format
from tracevals.collector.pipeline import REPLAY_BATCHES, Pipeline
from tracevals.collector.testing import local_config
from tracevals.collector.wal import TRACES, WriteAheadLog, encode

NO_ROTATION = {"exporters": {"parquet": {"rotation": {"max_age": "1h", "max_rows": 10_000_000}}}}


def _ids(batches: list[list[ReadableSpan]]) -> Counter[str]:
    return Counter(f"{s.context.span_id:016x}" for b in batches for s in b if s.context is not None)


def _previous_run(wal_dir: Path, batches: list[list[ReadableSpan]], segment_bytes: int = 64 * 1024**2) -> None:
    """A log as a killed collector leaves it: every request appended, nothing committed."""
    wal = WriteAheadLog(wal_dir, segment_bytes=segment_bytes)
    wal.lock()
    wal.open()
    for batch in batches:
        wal.append(TRACES, encode_spans(batch).SerializeToString(), len(batch))
    wal.close()  # not deleted: nothing is committed


def test_a_previous_runs_log_is_committed_once_read_not_at_the_next_rotation(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    batches = span_batches(30, 20)
    _previous_run(lake / "_wal", batches, segment_bytes=8 * 1024)  # several segments
    assert len(list((lake / "_wal").glob("wal-*.log"))) > 1
    pipeline = Pipeline(local_config(lake, NO_ROTATION))
    pipeline.start()
    try:
        # no flush, no stop, rotation an hour away: the replay commits what it wrote, and the log goes
        assert until(lambda: lake_rows(lake) == _ids(batches), 60, 0.02)
        assert until(lambda: not list((lake / "_wal").glob("wal-*.log")), 60, 0.02)
        assert pipeline.stats.replayed_records == len(batches)
    finally:
        pipeline.close()
    assert lake_rows(lake) == _ids(batches)  # each once


def test_replay_reads_records_larger_than_its_buffer_and_recovers_after_damage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Records are read one at a time, header then payload: payloads past the read buffer, a damaged record
    in the middle (its bytes skipped, the rest read), a header whose length runs past the end, a torn tail."""
    wal = WriteAheadLog(tmp_path / "wal")
    wal.open()
    payloads = [os.urandom(n) for n in (10, 3 * wal_format._READ_BUFFER + 7, 100, 2 * wal_format._READ_BUFFER, 5)]
    refs = [wal.append(TRACES, p, i) for i, p in enumerate(payloads)]
    wal.close()
    (segment,) = wal.segments()
    data = bytearray(segment.read_bytes())
    data[refs[2].offset + 20] ^= 0xFF  # the third record's payload: a bad sector
    torn = encode(TRACES, b"never acknowledged", 1)
    segment.write_bytes(bytes(data) + torn[:-3])
    with caplog.at_level("WARNING"):
        records = list(WriteAheadLog(tmp_path / "wal").replay())
    assert [(r.ref, r.items, r.payload) for r in records] == [(refs[i], i, payloads[i]) for i in (0, 1, 3, 4)]
    messages = [r.getMessage() for r in caplog.records]
    assert any("damaged bytes" in m for m in messages) and any("torn record" in m for m in messages)
    # a length that runs past the end of the segment: the record is torn, not read
    data = bytearray(segment.read_bytes())
    struct.pack_into("<I", data, refs[4].offset + 5, 1 << 31)
    segment.write_bytes(bytes(data))
    assert [r.payload for r in WriteAheadLog(tmp_path / "wal").replay()] == [payloads[i] for i in (0, 1, 3)]


def test_replay_converts_several_batches_a_call_and_writes_each_record_once(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    overrides = {**NO_ROTATION, "processors": {"batch": {"send_batch_size": 100, "timeout": "20ms"}}}
    batches = span_batches(40, 25)  # 1,000 spans: several calls of REPLAY_BATCHES x 100 spans
    _previous_run(lake / "_wal", batches)
    pipeline = Pipeline(local_config(lake, overrides))
    calls: list[int] = []
    real = pipeline.converter._columnar

    def counted(items: list[Any]) -> Any:
        calls.append(sum(i.count for i in items))
        return real(items)

    pipeline.converter._columnar = counted  # type: ignore[method-assign]
    pipeline.start()
    try:
        assert until(lambda: lake_rows(lake) == _ids(batches), 60, 0.02)
    finally:
        pipeline.close()
    assert lake_rows(lake) == _ids(batches)
    assert sum(calls) == 1000 and max(calls) >= REPLAY_BATCHES * 100 > 100
    assert pipeline.stats.columnar_refused == 0
