"""The nightly job on Ray Data: `tracevals score --engine ray` (docs/scale.md).

The same sessions, the same rows as `tracevals score --engine local`, computed on a Ray cluster over the
lake's Parquet:

1. the files: the `date=/hour=` partitions from `since` minus `job.SESSION_MARGIN` on (the local
   path's pruning; a session is in range by its first span, so earlier hours must still show where it
   began), listed on the lake's pyarrow filesystem (`engine.lake_filesystem`);
2. the session keys: `ray.data.read_parquet` of `trace_id, session_id` only, each block cut to its
   distinct pairs on the workers; the driver joins them into one key per trace (`engine.session_keys`:
   one row per trace, the rule of `select_sessions` / `find_crossing`) and a bucket per key
   (`engine.session_bucket`);
3. the rows: `ray.data.read_parquet` of every span and log column (with each row's file, which the
   `spans` view's de-duplication prefers the later of), tagged with their trace's bucket, as one dataset;
   `groupby(bucket, num_partitions=workers).map_groups(..., batch_format="pyarrow")`: each group is whole
   sessions, scored by `engine.score_sessions` (the views, the selection, the evaluators of one process);
4. a run that writes and keeps no rows (`--summary`, the nightly job): each group writes its rows to
   `LAKE/scores/` (one file, the store's writer: `engine.write_group`) and sends back counts per evaluator;
   otherwise the rows come back to the driver, which writes them with the same writer.

`ray` is imported only here, when this engine is chosen (`pip install 'tracevals[ray]'`). Locally
`ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)`; with `RAY_ADDRESS` set, the
job connects to that cluster instead: `ray job submit -- python -m tracevals score --engine ray --lake ...`
runs the command itself as the job's entry point (the workers need tracevals installed: a runtime_env or
the cluster's image). An already initialised Ray (a test's session) is used as it is.
"""

from __future__ import annotations

import importlib
import math
import os
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from tracevals.evaluators.evaluator import Evaluator
from tracevals.lake.lake import Lake
from tracevals.lake.schema import LOG_SCHEMA, LOGS_DIR, SCORE_SCHEMA, SPANS_DIR, empty_table
from tracevals.model.case import Case
from tracevals.model.score import SCORE_FRAME_SCHEMA
from tracevals.queries.selection import Selection
from tracevals.scoring.config import ScoringConfig
from tracevals.scoring.engine import (
    GROUP_SUMMARY,
    LOG_COLUMNS,
    SPAN_COLUMNS,
    EngineMissing,
    PricesT,
    SessionScorer,
    engine_run,
    engine_summary,
    group_writes,
    normalise,
    partition_files,
    row_buckets,
    session_buckets,
    session_keys,
    write_group,
)
from tracevals.scoring.job import ScoringJob
from tracevals.scoring.results import ScoringRun

INSTALL = "the ray engine needs Ray Data: pip install 'tracevals[ray]'"

# Traces of one group (a `map_groups` call): a group holds whole sessions, about 7 spans a trace; its
# rows and the evaluators' frames follow this. More groups than workers when the lake is big.
GROUP_TRACES = 20_000

_TABLE = "_tracevals_table"  # which table a row of the shuffled dataset is from: spans or logs
_BUCKET = "_tracevals_bucket"


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError:
        raise EngineMissing(INSTALL) from None
    return ray


def _nullable(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type) for f in schema])


# The rows of the shuffle: every span column, the log records' own, and the table and bucket of each row.
_LOG_ONLY = [pa.field(f.name, f.type) for f in LOG_COLUMNS if f.name not in SPAN_COLUMNS.names]
SHUFFLED = pa.schema(
    [*_nullable(SPAN_COLUMNS), *_LOG_ONLY, pa.field(_TABLE, pa.string()), pa.field(_BUCKET, pa.int32())]
)
_PARTITION = r"/date=(?P<date>\d{4}-\d{2}-\d{2})/hour=(?P<hour>\d{1,2})/[^/]*$"


@dataclass(frozen=True)
class _Job:
    """What every group is scored with (sent to the workers with the function)."""

    tasks: Sequence[Case] | None
    config: ScoringConfig
    evaluators: Sequence[Evaluator]
    selection: Selection | None
    prices: PricesT
    lake: Lake | None = None  # each group writes its rows here and returns a summary (`engine.write_group`)


# ---------------------------------------------------------------- on the workers


def _distinct_pairs(batch: pa.Table) -> pa.Table:
    """A block's distinct (trace_id, session_id): what the driver keys sessions by."""
    pairs = batch.select(["trace_id", "session_id"])
    pairs = pairs.cast(pa.schema([pa.field("trace_id", pa.string()), pa.field("session_id", pa.string())]))
    return pairs.group_by(["trace_id", "session_id"], use_threads=False).aggregate([])


def _tagged(batch: pa.Table, keys: pa.Table, buckets: int, table: str) -> pa.Table:
    """A block of span or log rows as rows of the shuffle: the file columns `raw_spans` has (`date`, `hour`
    from the file's partition, `source_file` its path), the table, the trace's bucket."""
    paths = batch.column("path").cast(pa.string())
    found = pc.extract_regex(paths, _PARTITION)
    date = pc.struct_field(found, "date")
    hour = pc.struct_field(found, "hour")
    extra = {
        "date": pc.strptime(date, format="%Y-%m-%d", unit="s").cast(pa.date32()),
        "hour": hour.cast(pa.int64()),
        "source_file": paths,
    }
    for name, column in extra.items():
        if name in batch.column_names:
            batch = batch.drop_columns([name])
        batch = batch.append_column(name, column)
    batch = batch.append_column(_TABLE, pa.repeat(pa.scalar(table), batch.num_rows))
    batch = batch.append_column(_BUCKET, row_buckets(batch, keys, buckets))
    return normalise(batch, SHUFFLED)


_SCORER: list[SessionScorer] = []  # a worker process's scorer: its views are bound once, for every group


def _score_group(group: pa.Table, job: _Job) -> pa.Table:
    """One group of whole sessions (rows of the shuffle) -> its score rows."""
    if not _SCORER:
        _SCORER.append(SessionScorer(job.prices, threads=1))
    table = group.column(_TABLE)
    spans = group.filter(pc.equal(table, "spans"))
    logs = group.filter(pc.equal(table, "logs"))
    scored = _SCORER[0].score(
        spans,
        logs if logs.num_rows else None,
        tasks=job.tasks,
        config=job.config,
        evaluators=job.evaluators,
        selection=job.selection,
    )
    return write_group(job.lake, scored) if job.lake is not None else scored


# ---------------------------------------------------------------- on the driver


def score_job(job: ScoringJob) -> ScoringRun:
    """The `ray` engine (the module docstring): the rows of the local engine, written to `lake/scores/` unless
    `job.write` is False (by the groups themselves when `keep_scores` is False, else by the driver).
    `job.workers`: CPUs of a local Ray; `job.buckets`: buckets of sessions (default: one per `GROUP_TRACES`
    traces, at least `workers`)."""
    ray = _ray()
    lake, lower = job.lake, job.lower_bound()
    fs, span_files = lake.filesystem, partition_files(lake, SPANS_DIR, lower)
    log_files = partition_files(lake, LOGS_DIR, lower)
    group_job = _Job(job.tasks, job.config, job.chosen(), job.selection, lake.prices(),
                     group_writes(lake, write=job.write, keep_scores=job.keep_scores))  # fmt: skip
    if not span_files:
        return ScoringRun(pl.DataFrame(schema=SCORE_FRAME_SCHEMA), 0, 0)
    started = _start(ray, job.workers)
    try:
        scored = _run(ray, fs, span_files, log_files, group_job, job.workers, job.buckets)
    finally:
        if started:
            ray.shutdown()
    if group_job.lake is not None:
        return engine_summary(lake, scored)
    return engine_run(lake, scored, write=job.write, keep_scores=job.keep_scores)


def _start(ray: Any, workers: int) -> bool:
    """Start a local Ray of `workers` CPUs (or connect to RAY_ADDRESS); False when one is running already."""
    if ray.is_initialized():
        return False
    if os.environ.get("RAY_ADDRESS"):
        ray.init(log_to_driver=False)
    else:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    return True


def _without_fsspec_http() -> None:
    """Ray 2.60 resolves every path (in threads) through `path_util._is_http_filesystem`, which imports
    fsspec's HTTP filesystem and catches only ModuleNotFoundError. With fsspec installed without aiohttp
    (as the lock has it), two threads importing it at once can see the module half-initialised and fail
    with ImportError ("cannot import name 'HTTPFileSystem'"). When it cannot be imported, a stand-in
    module is registered, whose `HTTPFileSystem` no filesystem is an instance of: the answer Ray wants."""
    name = "fsspec.implementations.http"
    module = sys.modules.get(name)
    if module is not None and hasattr(module, "HTTPFileSystem"):
        return
    sys.modules.pop(name, None)
    try:
        importlib.import_module(name)
        return
    except ImportError:
        sys.modules.pop(name, None)
    stand_in = types.ModuleType(name, "fsspec's HTTP filesystem is not available (aiohttp is not installed)")
    stand_in.HTTPFileSystem = type("HTTPFileSystem", (), {})  # type: ignore[attr-defined]
    sys.modules[name] = stand_in


SORT_SHUFFLE = "sort_shuffle_pull_based"
HASH_SHUFFLE = "hash_shuffle"
# Up to this many buckets the job shuffles with Ray's sort shuffle (tasks only: on 2 cores Ray's hash
# shuffle took 24 s for a lake of 100 traces, starting its aggregator actors, the sort 4 s); its pieces grow
# as buckets^2 (64 buckets: 4,096 pieces, ~40 CPU-s), so a bigger lake takes the hash shuffle, whose
# pieces grow with the blocks.
SORT_SHUFFLE_BUCKETS = 64


def shuffle_strategy(buckets: int) -> str:
    """Ray Data's shuffle for a job of `buckets` buckets: RAY_DATA_DEFAULT_SHUFFLE_STRATEGY when set, else
    the sort shuffle up to `SORT_SHUFFLE_BUCKETS`, the hash shuffle beyond."""
    chosen = os.environ.get("RAY_DATA_DEFAULT_SHUFFLE_STRATEGY")
    if chosen:
        return chosen
    return SORT_SHUFFLE if buckets <= SORT_SHUFFLE_BUCKETS else HASH_SHUFFLE


def _run(
    ray: Any, fs: Any, span_files: list[str], log_files: list[str], job: _Job, workers: int, groups: int | None
) -> pa.Table:
    from ray.data import DataContext

    context = DataContext.get_current()
    context.enable_progress_bars = False
    # the file listing on the driver (DataSourceV2 lists files in remote tasks, which import fsspec's HTTP
    # filesystem: see `_without_fsspec_http`)
    context.use_datasource_v2 = False
    context.print_on_execution_start = False
    key_schema = pa.schema([pa.field("trace_id", pa.string()), pa.field("session_id", pa.string())])
    _without_fsspec_http()
    pairs_ds = ray.data.read_parquet(
        span_files, filesystem=fs, columns=["trace_id", "session_id"], schema=key_schema, partitioning=None
    ).map_batches(_distinct_pairs, batch_format="pyarrow", batch_size=None)
    pairs = _collect(ray, pairs_ds, key_schema)
    keys = session_keys(pairs)
    buckets = groups or max(workers, math.ceil(keys.num_rows / GROUP_TRACES))
    keyed = session_buckets(keys, buckets).select(["trace_id", "bucket"])
    keys_ref = ray.put(keyed)
    strategy = shuffle_strategy(buckets)
    context.shuffle_strategy = strategy  # before the datasets are made: each keeps a copy of the context
    rows = _rows(ray, fs, span_files, SPAN_COLUMNS, "spans", keys_ref, buckets)
    if log_files:
        rows = rows.union(_rows(ray, fs, log_files, _nullable(LOG_SCHEMA), "logs", keys_ref, buckets))
    if strategy.startswith("sort_shuffle"):
        # The sort shuffle cuts every input block into one piece per output block (as many as there are
        # input blocks), and each piece costs Ray ~10 ms to serialise whatever its size: 32 files read as
        # 128 blocks were 16,384 pieces, 230 s of a 250 s run. The rows are first combined (no shuffle) into
        # a block per bucket: buckets^2 pieces.
        rows = rows.repartition(buckets, shuffle=False)
    # (the sort shuffle ignores num_partitions; the hash shuffle makes a block of each partition: a bucket)
    scored = rows.groupby(_BUCKET, num_partitions=buckets).map_groups(
        _score_group, batch_format="pyarrow", fn_kwargs={"job": job}
    )
    return _collect(ray, scored, GROUP_SUMMARY if job.lake is not None else SCORE_SCHEMA)


def _rows(ray: Any, fs: Any, files: list[str], schema: pa.Schema, table: str, keys_ref: Any, buckets: int) -> Any:
    read = _nullable(pa.schema([f for f in schema if f.name not in ("date", "hour", "source_file")]))
    _without_fsspec_http()
    # a read task (and a block) per file: Ray otherwise splits each file's rows into 4 blocks for
    # parallelism, and every block is a task and pieces of the shuffle
    return ray.data.read_parquet(
        files, filesystem=fs, schema=read, include_paths=True, partitioning=None, override_num_blocks=len(files)
    ).map_batches(
        _tag_remote,
        batch_format="pyarrow",
        batch_size=None,
        fn_kwargs={"keys": keys_ref, "buckets": buckets, "table": table},
    )


def _tag_remote(batch: pa.Table, keys: Any, buckets: int, table: str) -> pa.Table:
    import ray

    if isinstance(keys, ray.ObjectRef):
        keys = ray.get(keys)
    return _tagged(batch, keys, buckets, table)


def _collect(ray: Any, dataset: Any, schema: pa.Schema) -> pa.Table:
    tables = [t for t in ray.get(dataset.to_arrow_refs()) if t.num_rows]
    if not tables:
        return empty_table(_nullable(schema))
    return pa.concat_tables([normalise(t, _nullable(schema)) for t in tables])
