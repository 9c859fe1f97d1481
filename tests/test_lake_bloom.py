"""Bloom filters on the lake's id columns: both writers put them in every row group, and DuckDB uses them.

Ids are random, so every row group's min/max statistics cover nearly the whole range of ids and cannot
tell a lookup which row groups hold a session; the filters can. The check is DuckDB's own profile of a
real scan of the written files: the row groups it read for one session's id, and for a few trace ids.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tracevals.lake.lake import Lake
from tracevals.lake.schema import SPAN_SCHEMA, SPANS_DIR
from tracevals.lake.sink import RotatingParquetSink
from tracevals.lake.writer import BLOOM_COLUMNS, ROW_GROUP_ROWS, LakeWriter

SPANS = 5 * ROW_GROUP_ROWS + 123  # six row groups in one hour
T0_NS = 1_795_000_000 * 10**9


def _spans(seed: int = 7) -> pa.Table:
    """Sessions of 8 spans in 2 traces, with random ids, in one hour."""
    rnd = random.Random(seed)
    sessions, traces = [], []
    for _ in range(SPANS // 8 + 1):
        session = str(uuid.UUID(int=rnd.getrandbits(128)))
        first, second = f"{rnd.getrandbits(128):032x}", f"{rnd.getrandbits(128):032x}"
        sessions += [session] * 8
        traces += [first] * 4 + [second] * 4
    columns = {f.name: pa.nulls(SPANS, f.type) for f in SPAN_SCHEMA}
    columns.update(
        trace_id=pa.array(traces[:SPANS]),
        span_id=pa.array([f"{rnd.getrandbits(64):016x}" for _ in range(SPANS)]),
        name=pa.array(["chat"] * SPANS),
        start_time=pa.array([T0_NS + i * 1000 for i in range(SPANS)], pa.timestamp("ns", tz="UTC")),
        session_id=pa.array(sessions[:SPANS]),
    )
    return pa.table(columns, schema=SPAN_SCHEMA)


def _written_by_lake_writer(lake: Path, table: pa.Table) -> list[Path]:
    return LakeWriter(lake).write_table(table)


def _written_by_sink(lake: Path, table: pa.Table) -> list[Path]:
    sink = RotatingParquetSink(Lake.open(lake))
    for start in range(0, table.num_rows, 10_000):  # batches that do not line up with row groups
        sink.write(SPANS_DIR, table.slice(start, 10_000))
    sink.commit()
    return sorted((lake / SPANS_DIR).rglob("*.parquet"))


def _scanned(con: duckdb.DuckDBPyConnection, query: str) -> tuple[int, int]:
    """(row groups read, row groups in the files) of `query`'s Parquet scans, from DuckDB's profile."""
    con.execute("PRAGMA enable_profiling = 'json'")
    profile = json.loads(con.execute(f"EXPLAIN ANALYZE {query}").fetchall()[0][1])
    con.execute("PRAGMA disable_profiling")
    read = total = 0

    def walk(node: dict) -> None:
        nonlocal read, total
        if "total_row_groups_to_scan" in node and node.get("type") == "TABLE_SCAN":
            read += int(node["row_groups_scanned"])
            total += int(node["total_row_groups_to_scan"])
        for child in [*node.get("operator", []), *node.get("children", [])]:  # the root holds "operator"
            walk(child)

    walk(profile)
    assert total, f"no Parquet scan in the profile of {query}: {profile}"
    return read, total


@pytest.mark.parametrize("write", [_written_by_lake_writer, _written_by_sink], ids=["lake_writer", "collector_sink"])
def test_every_row_group_has_bloom_filters_and_lookups_read_only_theirs(tmp_path: Path, write: Any) -> None:
    table = _spans()
    files = write(tmp_path / "lake", table)
    assert len(files) == 1
    meta = pq.ParquetFile(files[0]).metadata
    groups = meta.num_row_groups
    assert groups >= 6 and meta.num_rows == SPANS
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    for g in range(groups):
        assert meta.row_group(g).num_rows <= ROW_GROUP_ROWS
        for column in BLOOM_COLUMNS:
            chunk = meta.row_group(g).column(names.index(column))
            assert chunk.bloom_filter_offset is not None and chunk.bloom_filter_length > 0, (g, column)

    con = duckdb.connect()
    path = str(files[0])
    rnd = random.Random(3)
    for row in rnd.sample(range(SPANS), 5):
        session = table["session_id"][row].as_py()
        query = f"SELECT count(*) FROM read_parquet('{path}') WHERE session_id = '{session}'"
        expected = table["session_id"].to_pylist().count(session)
        assert con.execute(query).fetchall() == [(expected,)]
        read, total = _scanned(con, query)
        # the session's 8 spans lie in one or two row groups; min/max statistics alone would read them all
        assert total == groups and read <= 2, (read, total)

    traces = [table["trace_id"][row].as_py() for row in (10, SPANS // 2, SPANS - 1)]
    listed = ", ".join(f"'{t}'" for t in traces)
    query = f"SELECT count(*) FROM read_parquet('{path}') WHERE trace_id IN ({listed})"
    expected = sum(table["trace_id"].to_pylist().count(t) for t in traces)
    assert con.execute(query).fetchall() == [(expected,)]
    read, total = _scanned(con, query)
    assert total == groups and read <= 2 * len(traces), (read, total)


def test_min_max_statistics_alone_cannot_find_a_random_id(tmp_path: Path) -> None:
    """The reason for the filters: the same file written without them is read whole for one session."""
    table = _spans()
    path = tmp_path / "plain.parquet"
    pq.write_table(table, path, row_group_size=ROW_GROUP_ROWS)
    session = table["session_id"][SPANS // 3].as_py()
    read, total = _scanned(
        duckdb.connect(), f"SELECT count(*) FROM read_parquet('{path}') WHERE session_id = '{session}'"
    )
    assert read == total == 6
