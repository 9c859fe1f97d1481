"""The nightly job on Ray Data (`tracevals score --engine ray`): the rows of `--engine local`, row for row.

A local Ray of 2 CPUs (one for the whole module: it takes about 10 s to start) scores a lake whose sessions
are spread over two writers' files and two hours (tests/fixtures/engine_lakes.py): the session keys
computed over both writers' files, the rows shuffled by session bucket into two partitions, each scored by
`engine.score_sessions`. Everything, a sample with its seed, and a `since` give the rows of one process
over the same lake; the CLI writes them to `scores/` with the lake's score schema.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from fixtures.engine_lakes import CASES, SPLIT, T0, check_summary_run, lake_fixture, on_engine, rows
from fixtures.fleet import SPLIT as FLEET_SPLIT
from fixtures.fleet import write_fleet_lake
from fixtures.s3 import S3, s3  # noqa: F401  (the fixture)

from tracevals.cli import main
from tracevals.lake.schema import SCORE_SCHEMA
from tracevals.queries import open_lake
from tracevals.queries.selection import Selection
from tracevals.scoring.offline import score_lake

ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'tracevals[ray]'")

from tracevals.scoring.engine_ray import (  # noqa: E402 (after the skip)
    SORT_SHUFFLE_BUCKETS,
    shuffle_strategy,
)


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


lake = lake_fixture("ray")


SELECTIONS = {
    "all": None,
    "sample": Selection(fraction=0.5, seed=3),
    "since": Selection(since=T0 + dt.timedelta(minutes=10)),
}


@pytest.mark.parametrize("name", list(SELECTIONS))
def test_ray_scores_equal_one_process(lake: Path, name: str) -> None:
    selection = SELECTIONS[name]
    local = score_lake(lake, tasks=CASES, selection=selection, write=False)
    on_ray = on_engine("ray", lake, tasks=CASES, selection=selection, write=False, workers=2)
    assert local.scores.height > 0
    assert rows(on_ray.scores).equals(rows(local.scores))
    assert on_ray.traces == local.traces
    if name == "all":  # the session of two writers and two hours: both of its traces, one session
        split = on_ray.scores.filter(session_id=SPLIT)
        assert split.get_column("trace_id").n_unique() == 2


def test_beyond_the_sort_shuffles_buckets_the_hash_shuffle_gives_the_same_rows(lake: Path) -> None:
    """A lake of more buckets than `SORT_SHUFFLE_BUCKETS` is shuffled by Ray's hash shuffle (the sort
    shuffle's pieces grow as buckets^2): the same rows."""
    buckets = SORT_SHUFFLE_BUCKETS + 1
    assert shuffle_strategy(buckets) == "hash_shuffle" and shuffle_strategy(buckets - 1).startswith("sort")
    local = score_lake(lake, tasks=CASES, write=False)
    on_ray = on_engine("ray", lake, tasks=CASES, write=False, workers=2, buckets=buckets)
    assert rows(on_ray.scores).equals(rows(local.scores))


def test_the_cli_writes_the_local_rows_to_scores(lake: Path, tmp_path: Path) -> None:
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    options = ["--sample", "0.7", "--seed", "5", "--since", (T0 - dt.timedelta(hours=1)).isoformat()]
    result = CliRunner().invoke(
        main, ["score", "--lake", str(copy), "--engine", "ray", "--workers", "2", "--summary", *options]
    )
    assert result.exit_code == 0, result.output
    written = sorted((copy / "scores").glob("*.parquet"))  # --summary: each group wrote its own file
    assert written
    tables = [pq.read_table(f) for f in written]
    assert all(t.schema.equals(SCORE_SCHEMA, check_metadata=False) for t in tables)
    table = pa.concat_tables(tables)
    selection = Selection(since=T0 - dt.timedelta(hours=1), fraction=0.7, seed=5)
    local = score_lake(lake, selection=selection, write=False)
    assert rows(table).equals(rows(local.scores))
    assert '"sample": {"fraction": 0.7, "seed": 5}' in table.column("details")[0].as_py()


def test_a_summary_run_writes_from_the_groups_and_counts_as_one_process(lake: Path, tmp_path: Path) -> None:
    """`--summary` (keep_scores=False): each group writes its own scores file (fixtures/engine_lakes.py)."""
    check_summary_run("ray", lake, tmp_path)


def test_ray_over_an_s3_lake_two_collectors_wrote_gives_the_local_rows(s3: S3, tmp_path: Path) -> None:  # noqa: F811
    """Issue 25's whole path on one machine: two real collectors commit to one s3:// lake (moto on 127.0.0.1),
    a session's two turns one to each and in two hours; the nightly job on Ray gives the rows of `--engine
    local` over the same lake, the split session is one, and the CLI writes the rows into the bucket."""
    remote = s3.lake("fleet")
    split = write_fleet_lake(remote, tmp_path)
    assert len({k.split("/")[3] for k in s3.keys("fleet/spans/") if k.endswith(".parquet")}) == 2  # two hours
    local = score_lake(remote, write=False)
    on_ray = on_engine("ray", remote, write=False, workers=2)
    assert local.scores.height > 0
    assert rows(on_ray.scores).equals(rows(local.scores))
    mine = on_ray.scores.filter(pl.col("trace_id").is_in(split))
    assert mine.height > 0 and mine.get_column("session_id").unique().to_list() == [FLEET_SPLIT]
    # the CLI writes them into the bucket's scores/
    result = CliRunner().invoke(main, ["score", "--lake", remote, "--engine", "ray", "--workers", "2", "--summary"])
    assert result.exit_code == 0, result.output
    assert s3.keys("fleet/scores/")
    con = open_lake(remote)
    try:
        in_bucket = con.sql("SELECT * FROM scores").to_arrow_table()
    finally:
        con.close()
    assert rows(in_bucket).equals(rows(local.scores))
