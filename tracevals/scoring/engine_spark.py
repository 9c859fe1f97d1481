"""The nightly job on Spark: `tracevals score --engine spark` (docs/scale.md). An adapter, not tested in
the default suite: pyspark is the `spark` extra (`pip install 'tracevals[spark]'`, about 650 MB and Java
17), not in the lock; tests/test_engine_spark.py runs where it is importable.

The same steps as `engine_ray`, in Spark's terms:

1. the files of `engine.partition_files` (the local path's pruning from `since` minus the margin), read with
   `spark.read.parquet` (`mergeSchema`; `spark.sql.legacy.parquet.nanosAsLong=true`, since Spark reads
   no nanosecond timestamps otherwise: they arrive as int64 nanoseconds and `engine.normalise` casts them
   back), each row's file from `input_file_name()` and its `date` / `hour` from the path;
2. the distinct (trace_id, session_id) pairs to the driver, `engine.session_keys` and a bucket per key,
   broadcast back and joined on `trace_id`;
3. `repartition(workers, bucket).groupBy(bucket).applyInArrow(fn, schema)`: `fn` gets a group's rows
   as one Arrow table (strings as large_string: normalised) and returns `engine.score_sessions`' rows;
4. `toArrow()` on the driver, written to `LAKE/scores/` by the store's writer; or, for a run that writes
   and keeps no rows (`--summary`), each group writes its own rows (`engine.write_group`) and only counts
   per evaluator come back.

`spark.master` is `local[workers]` unless a session exists already or SPARK_REMOTE names a Spark
Connect server. Spark here cannot read `s3a://` without the hadoop-aws jar: give it what your
platform reads.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from tracevals.lake.schema import LOGS_DIR, SCORE_SCHEMA, SPANS_DIR
from tracevals.model.score import SCORE_FRAME_SCHEMA
from tracevals.scoring.engine import (
    GROUP_SUMMARY,
    EngineMissing,
    SessionScorer,
    engine_run,
    engine_summary,
    group_writes,
    normalise,
    partition_files,
    session_buckets,
    session_keys,
    write_group,
)
from tracevals.scoring.job import ScoringJob
from tracevals.scoring.results import ScoringRun

INSTALL = "the spark engine needs pyspark (and Java 17): pip install 'tracevals[spark]'"
_TABLE = "_tracevals_table"
_BUCKET = "_tracevals_bucket"
GROUP_TRACES = 20_000

# The score rows as Spark returns them from a group (`scored_at` as int64 nanoseconds: Spark's timestamps
# are microseconds), cast to SCORE_SCHEMA on the driver.
SCORE_DDL = (
    "trace_id string, session_id string, run_id string, task_id string, attempt long, variant string, "
    "evaluator string, evaluator_version int, passed boolean, score double, reason string, details string, "
    "scored_at long"
)
SUMMARY_DDL = "evaluator string, scores long, passed long, rated long, traces long, sessions long, file string"
_PARTITION = r"/date=(\d{4}-\d{2}-\d{2})/hour=(\d{1,2})/[^/]*$"


def _spark(workers: int) -> Any:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise EngineMissing(INSTALL) from None
    builder = SparkSession.builder.appName("tracevals-score")
    if not os.environ.get("SPARK_REMOTE"):
        builder = builder.master(f"local[{workers}]")
        # local workers run this interpreter (the one tracevals is installed in), not the first python3 on
        # PATH, which Spark starts otherwise and which cannot import tracevals or its dependencies
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (
        builder.config("spark.sql.legacy.parquet.nanosAsLong", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.shuffle.partitions", str(workers))
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )


_SCORER: list[SessionScorer] = []


def _group_scorer(job: dict[str, Any]) -> Any:
    """The function `applyInArrow` calls with one group's rows (one Arrow table)."""

    def score(group: pa.Table) -> pa.Table:
        if not _SCORER:
            _SCORER.append(SessionScorer(job["prices"], threads=1))
        table = group.column(_TABLE).cast(pa.string())
        spans = group.filter(pc.equal(table, "spans"))
        logs = group.filter(pc.equal(table, "logs"))
        rows = _SCORER[0].score(
            spans,
            logs if logs.num_rows else None,
            tasks=job["tasks"],
            config=job["config"],
            evaluators=job["evaluators"],
            selection=job["selection"],
        )
        if job["lake"] is not None:
            return write_group(job["lake"], rows)
        scored_at = rows.column("scored_at").cast(pa.int64())
        return rows.set_column(rows.schema.get_field_index("scored_at"), "scored_at", scored_at)

    return score


def score_job(job: ScoringJob) -> ScoringRun:
    """The `spark` engine (the module docstring): the rows of the local engine, written from the driver (or
    by the groups when `keep_scores` is False). `job.workers`: local Spark's cores and the partitions."""
    spark = _spark(job.workers)
    from pyspark.sql import functions as F

    lake, lower, workers = job.lake, job.lower_bound(), job.workers
    span_files = partition_files(lake, SPANS_DIR, lower)
    log_files = partition_files(lake, LOGS_DIR, lower)
    group_job = {
        "tasks": job.tasks, "config": job.config, "evaluators": job.chosen(), "selection": job.selection,
        "prices": lake.prices(), "lake": group_writes(lake, write=job.write, keep_scores=job.keep_scores),
    }  # fmt: skip
    empty = pl.DataFrame(schema=SCORE_FRAME_SCHEMA)
    if not span_files:
        return ScoringRun(empty, 0, 0)

    def read(files: list[str], table: str) -> Any:
        frame = spark.read.option("mergeSchema", "true").parquet(*files)
        path = F.input_file_name()
        return (
            frame.withColumn("source_file", path)
            .withColumn("date", F.to_date(F.regexp_extract(path, _PARTITION, 1), "yyyy-MM-dd"))
            .withColumn("hour", F.regexp_extract(path, _PARTITION, 2).cast("long"))
            .withColumn(_TABLE, F.lit(table))
        )

    spans = read(span_files, "spans")
    rows = spans
    pairs = _arrow(spans.select("trace_id", "session_id").distinct())
    if log_files:
        logs = read(log_files, "logs")
        rows = spans.unionByName(logs, allowMissingColumns=True)
        log_traces = _arrow(logs.select("trace_id").where(F.col("trace_id").isNotNull()).distinct())
        nulls = pa.nulls(log_traces.num_rows, pa.string())
        pairs = pa.concat_tables([pairs, pa.table({"trace_id": log_traces.column("trace_id"), "session_id": nulls})])
    keys = session_keys(pairs)
    buckets = job.buckets or max(workers, -(-keys.num_rows // GROUP_TRACES))
    keyed = session_buckets(keys, buckets).select(["trace_id", "bucket"]).rename_columns(["trace_id", _BUCKET])
    key_frame = spark.createDataFrame(keyed.to_pandas())
    rows = rows.join(F.broadcast(key_frame), on="trace_id", how="inner")
    grouped = rows.repartition(workers, _BUCKET).groupBy(_BUCKET)
    if group_job["lake"] is not None:
        summary = _arrow(grouped.applyInArrow(_group_scorer(group_job), schema=SUMMARY_DDL))
        return engine_summary(lake, normalise(summary, GROUP_SUMMARY))
    table = _arrow(grouped.applyInArrow(_group_scorer(group_job), schema=SCORE_DDL))
    table = table.set_column(
        table.schema.get_field_index("scored_at"), "scored_at", table.column("scored_at").cast(pa.int64())
    )
    table = normalise(table, pa.schema([pa.field(f.name, f.type) for f in SCORE_SCHEMA]))
    return engine_run(lake, table, write=job.write, keep_scores=job.keep_scores)


def _arrow(frame: Any) -> pa.Table:
    """A Spark frame's rows as one Arrow table (`toArrow`, Spark 4), strings as plain strings."""
    table = frame.toArrow()
    fields = [pa.field(f.name, pa.string() if pa.types.is_large_string(f.type) else f.type) for f in table.schema]
    return table.cast(pa.schema(fields))
