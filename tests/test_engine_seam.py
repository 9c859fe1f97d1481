"""The seam a distributed engine scores through (`tracevals.scoring.engine`), without an engine.

A lake written by two separate writers (tests/fixtures/engine_lakes.py: sessions whose turns went to both
writers and lie in two hours, a trace with two session ids, a trace without one, OTLP-retry copies, a log
record filed an hour later, harness attempts against cases) is read as an engine reads it (its files'
rows with their paths), cut into partitions by `session_bucket`, and each partition scored on its own
with `score_sessions`: the union of the partitions' rows is `score_lake`'s, row for row, every column but
`scored_at`, under every selection a nightly job uses.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from fixtures.engine_lakes import CASES, SPLIT, T0, lake_fixture, rows

from tracevals.lake.lake import Lake
from tracevals.lake.schema import SCORE_SCHEMA
from tracevals.queries.live_source import read_log_files, read_span_files
from tracevals.queries.selection import Selection
from tracevals.scoring import score_sessions
from tracevals.scoring.engine import (
    normalise,
    partition_files,
    row_buckets,
    session_bucket,
    session_buckets,
    session_key,
    session_keys,
)
from tracevals.scoring.job import SESSION_MARGIN
from tracevals.scoring.offline import score_lake

lake = lake_fixture("seam")


def _read(lake: Path, since: dt.datetime | None) -> tuple[pa.Table, pa.Table]:
    lower = since - SESSION_MARGIN if since is not None else None
    span_files = partition_files(Lake.open(lake), "spans", lower)
    log_files = partition_files(Lake.open(lake), "logs", lower)
    return read_span_files([Path(p) for p in span_files]), read_log_files([Path(p) for p in log_files])


def _partitioned(lake: Path, selection: Selection | None, n: int) -> pa.Table:
    spans, logs = _read(lake, selection.since if selection is not None else None)
    keys = session_buckets(session_keys(spans), n)
    span_part, log_part = row_buckets(spans, keys, n), row_buckets(logs, keys, n)
    parts = []
    for b in range(n):
        mine = spans.filter(pc.equal(span_part, b))
        if mine.num_rows:
            parts.append(score_sessions(mine, logs.filter(pc.equal(log_part, b)), tasks=CASES, selection=selection))
    return pa.concat_tables(parts)


SELECTIONS = {
    "all": None,
    "sample": Selection(fraction=0.5, seed=3),
    "since": Selection(since=T0 + dt.timedelta(minutes=10)),
    "range": Selection(since=T0, until=T0 + dt.timedelta(hours=2), fraction=0.8, seed=11),
    "runs": Selection(runs=("r1",)),
}


@pytest.mark.parametrize("name", list(SELECTIONS))
def test_partitions_by_session_bucket_score_as_one_process(lake: Path, name: str) -> None:
    selection = SELECTIONS[name]
    local = score_lake(lake, tasks=CASES, selection=selection, write=False)
    assert local.scores.height > 0
    for n in (1, 3) if selection is None else (3,):
        scored = _partitioned(lake, selection, n)
        assert scored.schema.equals(SCORE_SCHEMA, check_metadata=False)
        assert rows(scored).equals(rows(local.scores)), (name, n)


def test_a_session_over_two_writers_and_two_hours_is_one_key(lake: Path) -> None:
    spans, logs = _read(lake, None)
    files = spans.filter(pc.equal(spans.column("session_id"), SPLIT)).column("source_file").unique().to_pylist()
    hours = {Path(f).parent.name for f in files}
    assert len(files) >= 2 and hours == {"hour=09", "hour=10"}
    keys = session_keys(spans)
    split_traces = set(spans.filter(pc.equal(spans.column("session_id"), SPLIT)).column("trace_id").to_pylist())
    assert len(split_traces) == 2
    key_of = dict(zip(keys.column("trace_id").to_pylist(), keys.column("session_key").to_pylist(), strict=True))
    assert {key_of[t] for t in split_traces} == {SPLIT}
    # two session ids on one trace join two sessions; a span without a session id goes with its trace
    assert key_of[_trace_of(spans, "two-ids-b")] == key_of[_trace_of(spans, "two-ids")] == "two-ids"
    every = session_key(spans, keys)
    assert every.null_count == 0 and len(set(every.to_pylist())) == keys.num_rows - _joined(keys)
    assert session_key(logs, keys).to_pylist() == [key_of[t] for t in logs.column("trace_id").to_pylist()]
    assert 0 <= session_bucket(SPLIT, 7) < 7 and session_bucket(SPLIT, 7) == session_bucket(SPLIT, 7)


def _trace_of(spans: pa.Table, session: str) -> str:
    only = spans.filter(pc.equal(spans.column("session_id"), session))
    traces = set(only.column("trace_id").to_pylist())
    return sorted(traces)[0]


def _joined(keys: pa.Table) -> int:
    """Traces sharing a key with another trace (sessions of several turns): how many fewer keys than traces."""
    return keys.num_rows - len(set(keys.column("session_key").to_pylist()))


def test_large_strings_dictionaries_and_extra_columns_are_normalised(lake: Path) -> None:
    spans, logs = _read(lake, None)
    plain = score_sessions(spans, logs, tasks=CASES)
    odd = spans.cast(
        pa.schema(
            [
                pa.field(f.name, pa.large_string())
                if f.type == pa.string() and f.name != "kind"
                else pa.field(f.name, pa.large_list(pa.large_string()))
                if f.type == pa.list_(pa.string())
                else f
                for f in spans.schema
            ]
        )
    )
    odd = odd.set_column(odd.schema.get_field_index("kind"), "kind", pc.dictionary_encode(spans.column("kind")))
    odd = odd.append_column("bucket", pa.repeat(pa.scalar(0, pa.int32()), odd.num_rows))
    odd = odd.set_column(odd.schema.get_field_index("hour"), "hour", spans.column("hour").cast(pa.string()))
    odd = odd.set_column(odd.schema.get_field_index("date"), "date", spans.column("date").cast(pa.string()))
    assert normalise(odd, spans.schema).equals(normalise(spans, spans.schema))
    assert rows(score_sessions(odd, logs, tasks=CASES)).equals(rows(plain))
    assert all(f.type != pa.large_string() for f in plain.schema)


def test_an_engine_not_installed_is_one_line(lake: Path) -> None:
    from click.testing import CliRunner

    from tracevals.cli import main

    try:
        import pyspark  # noqa: F401
    except ImportError:
        result = CliRunner().invoke(main, ["score", "--lake", str(lake), "--engine", "spark", "--no-write"])
        assert result.exit_code == 1
        assert result.output.strip().splitlines() == [
            "Error: the spark engine needs pyspark (and Java 17): pip install 'tracevals[spark]'"
        ]
    else:
        pytest.skip("pyspark is installed here")
    refused = CliRunner().invoke(main, ["score", "--lake", str(lake), "--engine", "ray", "--follow"])
    assert refused.exit_code == 1 and "--follow" in refused.output
