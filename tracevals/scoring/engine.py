"""The seam a distributed engine scores through: whole sessions' rows in, score rows out, no I/O.

A nightly job on Ray or Spark (`tracevals score --engine ray|spark`, docs/scale.md) does three things:

1. gives every span and log row its **session key** (`session_keys`, `session_key`): the key
   `select_sessions` and `find_crossing` go by, so that a session is never split. A trace's key is its
   largest session id, else its own id (`coalesce(max(session_id), trace_id)`: a span without a session
   id goes with its trace); keys that de-duplication could make one session are joined first, as
   `queries.selection.find_crossing` joins them (a trace with several session ids, a trace whose own id
   is another trace's session id), into the smallest key of their component. A log record goes with its
   trace.
2. shuffles the rows by `session_bucket(key, n)` (the md5 bucket of `tracevals.lake.sampling`, salted
   `engine:`), so each partition holds whole sessions;
3. calls `score_sessions(spans, logs, ...)` per partition: the views of `queries/views/` over those
   rows (`queries.live_source.connection_for_spans`), the selection of `select_sessions` (a session is
   in `[since, until)` by its first span; the sample by session), the evaluators
   (`scoring.offline.score_connection`), and the rows `tracevals score` writes to `scores/`.

Since every evaluator reads one session at most and every selection rule is a rule on whole sessions,
the union of the partitions' rows is the rows of one process over the same files (tests/test_engine_seam.py,
tests/test_engine_ray.py).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from tracevals.evaluators.evaluator import Evaluator
from tracevals.evaluators.registry import instances
from tracevals.lake.lake import Lake
from tracevals.lake.sampling import bucket
from tracevals.lake.schema import SCORE_SCHEMA, conformed_columns, empty_table
from tracevals.model.case import Case
from tracevals.model.errors import UserError
from tracevals.queries.binding import release, work_table
from tracevals.queries.groups import components
from tracevals.queries.interrupts import connect
from tracevals.queries.live_source import LiveConnection, empty_logs, empty_spans
from tracevals.queries.selection import Selection
from tracevals.scoring.config import ScoringConfig
from tracevals.scoring.offline import score_connection
from tracevals.scoring.results import ScoringRun, tally

PricesT = Mapping[str, tuple[float, float]]

#: The columns `score_sessions` reads: the lake's span / log schema plus the file columns `raw_spans` has
#: (`date`, `hour`, `source_file`: the `spans` view's tie-break between two copies of a span prefers the
#: later file, so pass each row's file path when there are OTLP-retry copies).
SPAN_COLUMNS: pa.Schema = empty_spans().schema
LOG_COLUMNS: pa.Schema = empty_logs().schema

#: The salt of `session_bucket` (the sample's is `"{seed}:"`, the chunks' `"chunk:"`).
BUCKET_SALT = "engine:"


class EngineMissing(UserError, RuntimeError):
    """A distributed engine's package is not installed (the message says how to install it)."""


# ---------------------------------------------------------------- the partitioning rule


def session_keys(rows: pa.Table) -> pa.Table:
    """One row per trace of `rows` (span rows: `trace_id`, `session_id`; other columns are ignored):
    `trace_id`, `session_key`. The key is what `select_sessions` keys a trace by (its largest session id,
    else its own id), with the keys that could be one session joined as `find_crossing` joins them.

    Any rows of the lake will do, repeated or not, as long as every span row of the traces is among them
    (the engines hand it the distinct (trace_id, session_id) pairs of every file)."""
    con = connect()
    try:
        con.execute("SET enable_progress_bar = false")
        pairs = rows.select(["trace_id", "session_id"])
        con.register("tv_pairs", _strings(pairs))
        work_table(
            con,
            "tv_keys",
            "SELECT trace_id, coalesce(max(session_id), trace_id) AS key, "
            "min(session_id) AS low FROM tv_pairs WHERE trace_id IS NOT NULL GROUP BY trace_id",
        )
        # a trace with several session ids: each of them joined to its key
        edges: list[tuple[str, str]] = con.execute(
            "SELECT DISTINCT k.key, p.session_id FROM tv_pairs AS p JOIN tv_keys AS k USING (trace_id) "
            "WHERE k.low <> k.key AND p.session_id IS NOT NULL"
        ).fetchall()
        # a trace whose own id is some trace's key (or a joined id): joined to its own key
        work_table(con, "tv_edges", columns="a VARCHAR, b VARCHAR")
        if edges:
            con.executemany("INSERT INTO tv_edges VALUES (?, ?)", edges)
        edges += con.execute(
            "SELECT trace_id, key FROM tv_keys WHERE trace_id <> key AND trace_id IN "
            "(SELECT key FROM tv_keys UNION SELECT b FROM tv_edges)"
        ).fetchall()
        keys = con.sql("SELECT trace_id, key FROM tv_keys ORDER BY trace_id").to_arrow_table()
    finally:
        con.close()
    key = keys.column("key")
    if edges:
        joined = components(edges)
        key = pa.chunked_array([pa.array([joined.get(k, k) for k in key.to_pylist()], pa.string())])
    return pa.table({"trace_id": keys.column("trace_id").cast(pa.string()), "session_key": key.cast(pa.string())})


def session_bucket(key: str, n: int) -> int:
    """The partition (0 .. n-1) of the session `key`: the md5 bucket of `tracevals.lake.sampling`."""
    return bucket(BUCKET_SALT, key) % max(1, int(n))


def session_buckets(keys: pa.Table, n: int) -> pa.Table:
    """`session_keys`' table with each trace's `bucket` (int32) among `n` partitions."""
    values = [session_bucket(k, n) for k in keys.column("session_key").to_pylist()]
    return keys.append_column("bucket", pa.array(values, pa.int32()))


def session_key(rows: pa.Table, keys: pa.Table) -> pa.ChunkedArray:
    """Each row's session key (span or log rows: by `trace_id`), from a `session_keys` table; a row whose
    trace is not in it (a log record of a trace without spans) is keyed by its own trace id."""
    return _lookup(rows, keys, "session_key", fallback=rows.column("trace_id").cast(pa.string()))


def row_buckets(rows: pa.Table, keys: pa.Table, n: int) -> pa.ChunkedArray:
    """Each row's partition among `n`, from a `session_buckets` table (a trace not in it: by its own id)."""
    trace_ids = rows.column("trace_id").cast(pa.string())
    found = _lookup(rows, keys, "bucket", fallback=None)
    if found.null_count:
        own = pa.array(
            [session_bucket(t or "", n) for t in trace_ids.to_pylist()], pa.int32()
        )  # rare: logs without spans
        found = pc.coalesce(found, own)
    return found


def _lookup(rows: pa.Table, keys: pa.Table, column: str, fallback: pa.ChunkedArray | None) -> pa.ChunkedArray:
    trace_ids = rows.column("trace_id").cast(pa.string())
    index = pc.index_in(trace_ids, value_set=keys.column("trace_id").combine_chunks())
    found = pc.take(keys.column(column), index)
    return pc.coalesce(found, fallback) if fallback is not None else found


# ---------------------------------------------------------------- rows in, score rows out


def normalise(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with exactly the columns of `schema` (`SPAN_COLUMNS` / `LOG_COLUMNS`), in order and of its
    types: large strings and lists, dictionary columns, timestamps of another unit (or int64 nanoseconds,
    as Spark's `nanosAsLong` reads them) and partition columns read as text are cast; a missing column
    (an older file, no `source_file`) is null; extra columns are dropped (`lake.schema.conformed_columns`)."""
    columns = conformed_columns(table, schema)
    fields = [pa.field(f.name, f.type) for f in schema]  # nullable: a missing column is null
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=schema.metadata))


def _strings(table: pa.Table) -> pa.Table:
    return table.cast(pa.schema([pa.field(f.name, pa.string()) for f in table.schema]))


@dataclass
class SessionScorer:
    """`score_sessions` that keeps its connection (its views bound once: about 1.5 s of CPU) for the
    next partition: an engine's worker process holds one and scores partition after partition with it."""

    prices: PricesT | None = None
    threads: int | None = None  # DuckDB threads (an engine's worker: 1, the CPU it was given)
    _connection: LiveConnection | None = field(default=None, repr=False)

    def score(
        self,
        spans: pa.Table,
        logs: pa.Table | None = None,
        *,
        tasks: Sequence[Case] | None = None,
        config: ScoringConfig | None = None,
        evaluators: Sequence[Evaluator] | None = None,
        selection: Selection | None = None,
        prices: PricesT | None = None,
    ) -> pa.Table:
        prices = self.prices if prices is None else prices
        config = (config or ScoringConfig()).with_prices_beneath(dict(prices or {}))
        chosen = list(evaluators) if evaluators is not None else instances(config.evaluators)
        if self._connection is None:
            self._connection = LiveConnection(prices)
            if self.threads:
                self._connection.con.execute(f"SET threads = {int(self.threads)}")
        else:
            self._connection.prices(prices)
        live = self._connection
        whole = selection is None or selection == Selection()
        try:
            con = live.load(normalise(spans, SPAN_COLUMNS), normalise(logs, LOG_COLUMNS) if logs is not None else None)
            run = score_connection(
                con, tasks=tasks, config=config, evaluators=chosen, selection=None if whole else selection
            )
        finally:
            _unrestrict(live.con)
            live.release()
        return score_table(run.scores)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def score_sessions(
    spans: pa.Table,
    logs: pa.Table | None = None,
    *,
    tasks: Sequence[Case] | None = None,
    config: ScoringConfig | None = None,
    evaluators: Sequence[Evaluator] | None = None,
    selection: Selection | None = None,
    prices: PricesT | None = None,
) -> pa.Table:
    """Score rows (the lake's `SCORE_SCHEMA`, as `tracevals score` writes them to `scores/`) of the
    sessions whose span rows (and OTLP log records) are `spans` (and `logs`): whole sessions, as a
    partition of `session_bucket` holds them. No I/O.

    `spans`: the lake's span columns (`SPAN_SCHEMA`; `date`, `hour`, `source_file` when known); types are
    normalised (`normalise`) and extra columns dropped. `selection`: a range and a sample, applied to
    these sessions as `select_sessions` applies them to a lake (the sample is recorded in `details`).
    `prices`: the lake's own model prices (`LAKE/prices.json`), beneath the config's, as `score_lake`
    takes them. `scored_at` is the time of the call."""
    scorer = SessionScorer(prices)
    try:
        return scorer.score(spans, logs, tasks=tasks, config=config, evaluators=evaluators, selection=selection)
    finally:
        scorer.close()


def score_table(scores: pl.DataFrame, scored_at_ns: int | None = None) -> pa.Table:
    """A frame of score rows (`model.score.SCORE_FRAME_SCHEMA`) as the rows of `scores/`: `SCORE_SCHEMA`
    exactly (plain strings), `scored_at` now unless given."""
    now = time.time_ns() if scored_at_ns is None else scored_at_ns
    table = scores.with_columns(pl.lit(now).cast(pl.Datetime("ns", "UTC")).alias("scored_at")).to_arrow()
    return table.select(SCORE_SCHEMA.names).cast(SCORE_SCHEMA)


def _unrestrict(con: duckdb.DuckDBPyConnection) -> None:
    """Drop what `select_sessions` left on a connection (the temporary tables that shadow `raw_spans` /
    `raw_logs`), so its views read the next `load`'s rows."""
    release(con)


# ---------------------------------------------------------------- which files a job reads (the engines' I/O)


def partition_files(lake: Lake, sub: str, since: dt.datetime | None = None) -> list[str]:
    """The span or log files (`sub`) a scoring run of `lake` reads, as paths on the lake's filesystem
    (`lake.filesystem`): the `date=/hour=` partitions from `since`'s hour on (`since`: the selection's, minus
    `job.SESSION_MARGIN`), or every file; as `score_lake` reads them (unreadable files skipped with one
    warning, or failed with --strict)."""
    return lake.readable_files(sub, since)


#: What a group that wrote its own score rows returns (`write_group`): one row per evaluator, with the
#: group's traces, sessions and the file it wrote (a group of no rows: no row).
GROUP_SUMMARY: pa.Schema = pa.schema(
    [
        pa.field("evaluator", pa.string()),
        pa.field("scores", pa.int64()),
        pa.field("passed", pa.int64()),
        pa.field("rated", pa.int64()),
        pa.field("traces", pa.int64()),
        pa.field("sessions", pa.int64()),
        pa.field("file", pa.string()),
    ]
)


def group_writes(lake: Lake, *, write: bool, keep_scores: bool) -> Lake | None:
    """Where an engine's groups write their own score rows (`write_group`, one file each, as `score_lake`
    writes a group at a time) and send back only counts: the lake (pickled with its absolute root and, on
    object storage, the driver's filesystem: a worker need not have the driver's AWS_* settings or cwd) for a
    written run that keeps no rows (`--summary`, the nightly job); else None, and every row comes back to
    the driver, which would hold all of them."""
    if not write or keep_scores:
        return None
    return lake


def write_group(lake: Lake, scored: pa.Table) -> pa.Table:
    """On a worker: a group's score rows (`SCORE_SCHEMA`) written to `lake/scores/` as one file with the
    store's writer, and summarised as `GROUP_SUMMARY` (a session is in one group, so the counts add up)."""
    from tracevals.lake.schema import SCORES_DIR

    if not scored.num_rows:
        return empty_table(GROUP_SUMMARY)
    scores = _score_frame(scored)
    traces, sessions = _counts(scores)
    written = lake.write_table(SCORES_DIR, scored)  # the rows of `scores/` already
    counts = tally(scores).with_columns(traces=pl.lit(traces, pl.Int64), sessions=pl.lit(sessions, pl.Int64))
    counts = counts.with_columns(file=pl.lit(str(written), pl.String))
    return counts.to_arrow().select(GROUP_SUMMARY.names).cast(GROUP_SUMMARY)


def _score_frame(scored: pa.Table) -> pl.DataFrame:
    from tracevals.model.score import SCORE_FRAME_SCHEMA

    scores = pl.from_arrow(scored.drop_columns(["scored_at"]))
    assert isinstance(scores, pl.DataFrame)
    return scores.cast(dict(SCORE_FRAME_SCHEMA))  # type: ignore[arg-type]


def _counts(scores: pl.DataFrame) -> tuple[int, int]:
    if not scores.height:
        return 0, 0
    traces = scores.get_column("trace_id").n_unique()
    return traces, scores.select(pl.coalesce("session_id", "trace_id")).n_unique()


def engine_summary(lake: Lake, summary: pa.Table) -> ScoringRun:
    """The groups' `GROUP_SUMMARY` rows (collected on the driver) as `score_lake(keep_scores=False)` returns
    its run: counts per evaluator, traces and sessions, the files written."""
    from tracevals.model.score import SCORE_FRAME_SCHEMA

    frame = pl.from_arrow(summary)
    assert isinstance(frame, pl.DataFrame)
    per_file = frame.group_by("file").agg(pl.col("traces").first(), pl.col("sessions").first()).sort("file")
    tallies = frame.group_by("evaluator").agg(pl.col("scores", "passed", "rated").sum()).sort("evaluator")
    files = tuple(lake.file_of(f) for f in per_file.get_column("file").drop_nulls())
    return ScoringRun(
        pl.DataFrame(schema=SCORE_FRAME_SCHEMA),
        int(per_file.get_column("traces").sum()),
        int(per_file.get_column("sessions").sum()),
        written=files[-1] if files else None,
        tallies=tallies,
        files=files,
        groups=per_file.height,
    )


def engine_run(lake: Lake, scored: pa.Table, *, write: bool, keep_scores: bool) -> ScoringRun:
    """An engine's score rows (`SCORE_SCHEMA`, collected on the driver) as `score_lake` returns them:
    written to `lake/scores/` unless `write=False`, counted, and kept unless `keep_scores=False` (then only
    the counts per evaluator)."""
    from tracevals.model.score import SCORE_FRAME_SCHEMA
    from tracevals.scoring.store import write_score_frame

    scores = _score_frame(scored)
    traces, sessions = _counts(scores)
    written = write_score_frame(lake, scores) if write else None
    files = (written,) if written else ()
    if not keep_scores:
        empty = pl.DataFrame(schema=SCORE_FRAME_SCHEMA)
        return ScoringRun(empty, traces, sessions, written=written, tallies=tally(scores), files=files)
    return ScoringRun(scores, traces, sessions, written=written, files=files)
