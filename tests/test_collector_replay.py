"""The replay of a previous run's write-ahead log at start: committed once read (not at the next rotation),
each record once, beside new data."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracevals.collector.pipeline import Pipeline
from tracevals.collector.testing import local_config
from tracevals.collector.wal import TRACES, WriteAheadLog

NO_ROTATION = {"exporters": {"parquet": {"rotation": {"max_age": "1h", "max_rows": 10_000_000}}}}


def _batches(batches: int, per_batch: int) -> list[list[ReadableSpan]]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test.replay")
    for b in range(batches):
        for i in range(per_batch):
            with tracer.start_as_current_span(f"chat {b}.{i}", attributes={"gen_ai.conversation.id": f"s{b}"}):
                pass
    spans = list(memory.get_finished_spans())
    return [spans[i : i + per_batch] for i in range(0, len(spans), per_batch)]


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


def _rows(lake: Path) -> Counter[str]:
    rows: Counter[str] = Counter()
    for file in (lake / "spans").rglob("*.parquet"):
        rows.update(pq.read_table(file, columns=["span_id"])["span_id"].to_pylist())
    return rows


def until(condition: Any, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


def test_a_previous_runs_log_is_committed_once_read_not_at_the_next_rotation(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    batches = _batches(30, 20)
    _previous_run(lake / "_wal", batches, segment_bytes=8 * 1024)  # several segments
    assert len(list((lake / "_wal").glob("wal-*.log"))) > 1
    pipeline = Pipeline(local_config(lake, NO_ROTATION))
    pipeline.start()
    try:
        # no flush, no stop, rotation an hour away: the replay commits what it wrote, and the log goes
        assert until(lambda: _rows(lake) == _ids(batches))
        assert until(lambda: not list((lake / "_wal").glob("wal-*.log")))
        assert pipeline.stats.replayed_records == len(batches)
    finally:
        pipeline.close()
    assert _rows(lake) == _ids(batches)  # each once
