"""A batch of queued requests converted to the lake's tables, through each signal's processors.

Trace requests are converted column by column (`conversion.columnar`), a chunk of about
`send_batch_size` spans at a time: the intermediate arrays of a whole queue would hold several times its
size, and a remainder under half a chunk joins the chunk before it, as a chunk has a fixed cost of ~5 ms.
Log requests, and what the columnar path refuses, are converted request by request in Python
(`conversion.rows`). On both paths a signal's processors apply (`processors.Chain`): their filters while
converting, their transforms on the converted tables. A request the checks let through but Parquet cannot
hold is kept aside in the write-ahead log's quarantine folder (never dropped) and said loudly.

Writing the tables to the sink, and committing them, is the pipeline's.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracevals.collector.conversion import columnar as otlp_columnar
from tracevals.collector.conversion.rows import logs_table, spans_table
from tracevals.collector.processors import Chain
from tracevals.collector.stats import PipelineStats
from tracevals.collector.wal_format import TRACES, Ref
from tracevals.lake.schema import LOGS_DIR, SPANS_DIR

_log = logging.getLogger(__name__)
_SIGNAL = {SPANS_DIR: "traces", LOGS_DIR: "logs"}  # the lake's table -> the signal whose processors apply


@dataclass
class Queued:
    """A request between its acknowledgement and its commit."""

    kind: int
    payload: bytes | None  # the request's protobuf encoding, as in the log; None: read it from the log
    ref: Ref
    reserved: int  # queue bytes it holds (`admission`), released once its rows are in a row group
    count: int
    received: float = field(default_factory=time.monotonic)


def _parse(kind: int, payload: bytes) -> Any:
    """A logged request decoded again (it was checked when it was received)."""
    message = ExportTraceServiceRequest() if kind == TRACES else ExportLogsServiceRequest()
    message.ParseFromString(payload)
    return message


class BatchConverter:
    """Converts batches of `Queued` requests to tables of the lake (see the module docstring)."""

    def __init__(
        self,
        chains: Mapping[str, Chain],
        max_value_bytes: int,
        batch_spans: int,
        quarantine: Path,
        stats: PipelineStats,
    ) -> None:
        self.chains = {signal: chains.get(signal) or Chain(signal) for signal in _SIGNAL.values()}
        self.max_value_bytes = max_value_bytes
        self.batch_spans = batch_spans
        self.quarantine = quarantine
        self.stats = stats

    def convert(self, items: list[Queued], batches: int = 1) -> tuple[dict[str, pa.Table], list[Queued]]:
        """The rows of `items` by lake table (`spans`, `logs`), trace requests converted in chunks of `batches`
        times `send_batch_size` spans; and the items quarantined instead."""
        by_table: dict[str, list[pa.Table]] = {}
        columnar = self._columnar_chunks([item for item in items if item.kind == TRACES], batches)
        if columnar:
            by_table[SPANS_DIR] = [table for table, _ in columnar]
        done = {id(item) for _, chunk in columnar for item in chunk}
        quarantined: list[Queued] = []
        for item in items:
            if id(item) in done:
                continue
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
        converted = {}
        for name, tables in by_table.items():
            table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
            # every path to the lake (columnar, per request, a previous run's log) passes here
            converted[name] = self.chains[_SIGNAL[name]].transform(table)
        return converted, quarantined

    def _columnar_chunks(self, traces: list[Queued], batches: int) -> list[tuple[pa.Table, list[Queued]]]:
        """The chunks of trace requests the columnar path converted, each with its table."""
        converted: list[tuple[pa.Table, list[Queued]]] = []
        chunk: list[Queued] = []
        chunk_spans = 0
        size = batches * self.batch_spans
        left = sum(item.count for item in traces)
        for i, item in enumerate(traces):
            chunk.append(item)
            chunk_spans += item.count
            left -= item.count
            if (chunk_spans >= size and left >= size // 2) or i == len(traces) - 1:
                table = self._columnar(chunk)
                if table is not None:
                    converted.append((table, chunk))
                chunk, chunk_spans = [], 0
        return converted

    def _columnar(self, items: list[Queued]) -> pa.Table | None:
        """The spans of these trace requests (`conversion.columnar`), or None where that path refuses them."""
        payloads = [i.payload for i in items if i.payload is not None]
        try:
            batch = otlp_columnar.decode(payloads)  # the whole chunk in one call
            keep = self.chains["traces"].keep
            table = otlp_columnar.spans_table_columnar([batch], payloads, self.max_value_bytes, keep)
        except Exception:  # what the native decoder or a kernel refuses: request by request, in Python
            _log.debug("tracevals collector: columnar conversion failed; converting in Python", exc_info=True)
            self.stats.columnar_refused += 1
            return None
        self.stats.columnar_batches += 1
        return table

    def _tables(self, kind: int, request: Any) -> tuple[str, pa.Table]:
        """One request's rows, in Python: the lake table they go to, and the table."""
        if kind == TRACES:
            return SPANS_DIR, spans_table(request, self.max_value_bytes, self.chains["traces"].keep)
        return LOGS_DIR, logs_table(request, self.max_value_bytes, self.chains["logs"].keep)

    def _quarantine(self, item: Queued) -> None:
        assert item.payload is not None
        self.quarantine.mkdir(exist_ok=True)
        path = self.quarantine / f"{'traces' if item.kind == TRACES else 'logs'}-{item.ref.seq}-{item.ref.offset}.binpb"
        with open(path, "wb") as fh:
            fh.write(item.payload)
            fh.flush()
            os.fsync(fh.fileno())
        self.stats.items_failed += 1
        _log.exception(
            "tracevals collector: a request Parquet cannot hold is kept in %s (OTLP protobuf), not in the lake", path
        )
