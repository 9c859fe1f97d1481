"""What the collector's pipeline counts: `tracevals collect` prints some, tests and benchmarks read them."""

from __future__ import annotations

from dataclasses import dataclass


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
