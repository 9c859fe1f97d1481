"""open_lake's plumbing: partition ranges, object-store paths, snapshots, one session's lookup, and the
framework rule that reads Google ADK's own attributes."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.otlp_lakes import DIALECTS, fixture_doc, ingest_fixture, ingest_scrambled
from fixtures.plain import plain_rows

from tracevals.lake.lake import Lake, LocalScan
from tracevals.lake.schema import SPAN_SCHEMA
from tracevals.queries import LakeError, open_lake, partition_filter, session_lookup
from tracevals.queries.connection import define_views
from tracevals.queries.sources import local_sql
from tracevals.spans.normalize import normalize
from tracevals.spans.rules import unwrap


def test_a_local_lake_reads_through_one_read_parquet_call_pruned_by_partition(tmp_path: Path) -> None:
    # the SQL of a local lake (an s3:// lake is read as pyarrow datasets: tests/test_lake_object_storage.py)
    lake = str(tmp_path / "lake")
    sql = local_sql(LocalScan([f"{lake}/spans/**/*.parquet"], partitioned=True), hive=True)
    assert sql == (
        "SELECT * EXCLUDE (filename), filename AS source_file FROM read_parquet("
        f"['{lake}/spans/**/*.parquet'], hive_partitioning = true, union_by_name = true, "
        "filename = true, hive_types = {'date': DATE, 'hour': BIGINT})"
    )
    for day, hour in (("2026-11-28", 21), ("2026-11-28", 22), ("2026-11-29", 3), ("2026-11-29", 4)):
        folder = tmp_path / "lake" / "spans" / f"date={day}" / f"hour={hour:02d}"
        folder.mkdir(parents=True)
        (folder / "part-0.parquet").write_bytes(b"")  # listed, never opened
    hours = Lake.open(lake).partition_globs("spans", "2026-11-28T22", "2026-11-29T03")
    assert hours == [
        f"{lake}/spans/date=2026-11-28/hour=22/*.parquet",
        f"{lake}/spans/date=2026-11-29/hour=03/*.parquet",
    ]
    where = partition_filter("2026-11-28T22", "2026-11-29T03")
    ranged = local_sql(LocalScan(hours, partitioned=True), hive=True, where=where)
    assert ranged.endswith(
        "WHERE (date > DATE '2026-11-28' OR (date = DATE '2026-11-28' AND hour >= 22)) "
        "AND (date < DATE '2026-11-29' OR (date = DATE '2026-11-29' AND hour <= 3))"
    )
    assert f"['{lake}/spans/date=2026-11-28/hour=22/*.parquet', '{lake}/spans/date=2026-11-29/hour=03" in ranged


def test_range_bounds_accept_days_hours_and_datetimes() -> None:
    assert (
        partition_filter(dt.date(2026, 11, 28))
        == "(date > DATE '2026-11-28' OR (date = DATE '2026-11-28' AND hour >= 0))"
    )
    # a bare date as the upper bound covers its whole day; an aware datetime is read in UTC
    assert partition_filter(until="2026-11-28").endswith("hour <= 23))")
    aware = dt.datetime(2026, 11, 28, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-2)))
    assert partition_filter(since=aware).startswith(
        "(date > DATE '2026-11-29' OR (date = DATE '2026-11-29' AND hour >= 1"
    )
    assert partition_filter() == ""
    with pytest.raises(LakeError, match="is not a date"):
        partition_filter("last tuesday")


def test_a_local_range_lists_only_the_partitions_in_it(lake: Path) -> None:
    for day, hour in (("2026-11-27", "23"), ("2026-11-28", "00"), ("2026-11-28", "05"), ("2026-11-29", "00")):
        part = lake / "spans" / f"date={day}" / f"hour={hour}"
        part.mkdir(parents=True)
        (part / "part-1.parquet").write_bytes(b"")
    (lake / "spans" / "date=2026-11-28" / "hour=07").mkdir()  # empty: nothing to read
    globs = Lake.open(lake).partition_globs("spans", "2026-11-28", "2026-11-28T06")
    assert [Path(g).parent.name for g in globs] == ["hour=00", "hour=05"]
    assert Lake.open(lake).partition_globs("spans") == [f"{lake}/spans/**/*.parquet"]


def test_session_lookup_reads_one_session(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    for dialect in DIALECTS:
        ingest_fixture(lake, dialect)
    for materialize in (False, True):
        con = open_lake(lake, materialize=materialize)
        turns = session_lookup(con, "sess-openinference", "turns")
        assert turns.column("turn_index").to_pylist() == [1, 2]
        assert turns.column("final_text").to_pylist() == ["Refunded order 7.", "You're welcome."]
        (session,) = session_lookup(con, "sess-openinference", "sessions").to_pylist()
        assert session["turn_count"] == 2
        # the lookup's restriction is gone afterwards: the connection sees every session again
        assert con.execute("SELECT count(*) FROM sessions").fetchall() == [(4,)]
        assert session_lookup(con, "no-such-session").num_rows == 0
    with pytest.raises(LakeError, match="unknown view"):
        session_lookup(con, "sess-openinference", "nope")


def test_session_lookup_equals_the_view_and_reads_a_lake_of_two_formats(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    for dialect in DIALECTS:
        ingest_fixture(lake, dialect)
    files = sorted((lake / "spans").rglob("*.parquet"))
    con = open_lake(lake)
    before = con.execute("SELECT current_setting('disabled_optimizers')").fetchall()
    query = "SELECT * FROM steps WHERE session_id = 'sess-openinference' ORDER BY trace_id, step_index"
    expected = con.sql(query).fetchall()
    looked_up = (
        session_lookup(con, "sess-openinference", "steps")
        .sort_by([("trace_id", "ascending"), ("step_index", "ascending")])
        .to_pylist()
    )
    assert [tuple(row.values()) for row in looked_up] == expected and expected
    assert con.execute("SELECT current_setting('disabled_optimizers')").fetchall() == before
    # An older file without a column (written before it existed): the first file read has it, a later
    # one lacks it, so the strict read fails and the lookup reads through union_by_name instead.
    table = pq.read_table(files[-1])
    pq.write_table(table.drop_columns(["tool_args_hash"]), files[-1])
    con = open_lake(lake)
    assert session_lookup(con, "sess-openinference", "steps").num_rows == len(expected)
    # and the other way round: the first file lacks it, so the strict read misses a column
    pq.write_table(pq.read_table(files[0]).drop_columns(["tool_args_hash"]), files[0])
    pq.write_table(table, files[-1])
    con = open_lake(lake)
    assert session_lookup(con, "sess-openinference", "steps").num_rows == len(expected)
    # a sandboxed connection cannot change settings; the lookup still answers
    sandboxed = open_lake(lake, read_only=True)
    assert session_lookup(sandboxed, "sess-openinference", "steps").num_rows == len(expected)


def test_a_lookup_over_files_of_two_formats_reads_every_value(tmp_path: Path) -> None:
    """One session's spans in several files, the first of which lacks columns a later one has (an older
    lake format first): the lookup must read the later file's values, not NULLs."""
    lake = tmp_path / "lake"
    ingest_scrambled(lake, [fixture_doc("genai_current")], seed=3)
    files = sorted((lake / "spans").rglob("*.parquet"))
    assert len(files) > 1
    first = pq.read_table(files[0], partitioning=None)
    pq.write_table(first.drop_columns(["tool_args_hash", "tool_name", "requested_tool_call_ids"]), files[0])
    con = open_lake(lake)
    [(session,)] = con.execute("SELECT DISTINCT session_id FROM sessions").fetchall()
    for view in ("steps", "trajectories"):
        expected = con.execute(f"SELECT * FROM {view} WHERE session_id = ?", [session]).fetchall()
        looked_up = plain_rows(session_lookup(con, session, view).to_pylist())
        assert sorted(map(repr, looked_up)) == sorted(map(repr, expected)) and expected


def test_snapshots(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    ingest_fixture(lake, "genai_current")
    with pytest.raises(LakeError, match="cannot materialize"):
        open_lake(lake, materialize=("spans_facts",))
    con = open_lake(lake, materialize=True, snapshot_path=tmp_path / "snapshot.duckdb")
    assert (tmp_path / "snapshot.duckdb").is_file()
    assert con.execute("SELECT count(*), sum(gap_count) FROM trajectories").fetchall() == [(2, 1)]
    # a snapshot does not see files that arrive later; the views do
    ingest_fixture(lake, "openllmetry")
    assert con.execute("SELECT count(*) FROM trajectories").fetchall() == [(2,)]
    assert open_lake(lake).execute("SELECT count(*) FROM trajectories").fetchall() == [(4,)]


def test_adk_tool_responses_unwrap() -> None:
    """ADK's `{"result": x}` is a wrapper (the generic rule, `rules.unwrap`), `<not specified>` a placeholder."""
    assert unwrap('{"result": null}') is None
    assert unwrap('{"result": "<not specified>"}') is None  # the tool raised
    assert unwrap('{"result": "Paris"}') == "Paris"
    assert json.loads(unwrap('{"error": "boom"}')) == {"error": "boom"}  # no wrapper: as recorded
    assert unwrap("not json") == "not json"


def test_adk_rule_fills_tool_columns_and_drops_the_merged_span() -> None:
    """The Google ADK declaration (tracevals/spans/dialects/google_adk.py): its keys fill the tool columns, its
    placeholder call id is none, and its merged-tools span is no call."""
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "<not specified>",
        "gcp.vertex.agent.tool_call_args": '{"city": "Paris"}',
        "gcp.vertex.agent.tool_response": '{"result": "<not specified>"}',
    }
    columns = normalize(attrs, "execute_tool get_weather")
    assert {k: columns[k] for k in ("kind", "tool_name", "tool_call_id", "tool_args", "tool_result")} == {
        "kind": "tool",
        "tool_name": "get_weather",
        "tool_call_id": None,
        "tool_args": '{"city": "Paris"}',
        "tool_result": None,
    }
    merged = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "(merged tools)",
              "gcp.vertex.agent.tool_call_args": "N/A"}  # fmt: skip
    assert normalize(merged, "execute_tool (merged)")["kind"] == "other"  # bookkeeping that repeats the calls


def test_open_lake_can_define_only_the_views_one_needs(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    ingest_fixture(lake, "genai_current")
    con = open_lake(lake, views=("trajectories",))
    defined = {row[0] for row in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert {"trajectories", "span_facts", "attempts"} <= defined
    assert not {"sessions", "turns", "runs", "retries"} & defined
    # a view only one other reads is written into that one (`inlined`), not defined: its rows are still there
    assert not {"steps", "tool_call_gaps", "spans"} & defined  # tool_call_gaps within steps within trajectories
    assert con.execute("SELECT count(*), sum(gap_count) FROM trajectories").fetchall() == [(2, 1)]
    define_views(con, ("tool_call_gaps",))  # and a later query that names one defines it
    assert con.execute("SELECT count(*) FROM tool_call_gaps").fetchall() == [(1,)]
    live = open_lake(lake, views=("trajectories",), materialize=False)  # no snapshot: every view defined
    assert "tool_call_gaps" in {r[0] for r in live.execute("SELECT view_name FROM duckdb_views()").fetchall()}
    assert live.execute("SELECT count(*), sum(gap_count) FROM trajectories").fetchall() == [(2, 1)]
    with pytest.raises(LakeError, match="unknown views"):
        open_lake(lake, views=("trajectory",))
    # and without the span files: the views bind against empty tables
    empty = open_lake(lake, views=("steps",), read_spans=False)
    assert empty.execute("SELECT count(*) FROM steps").fetchall() == [(0,)]


def test_hour_is_an_integer_even_in_the_early_hours(tmp_path: Path) -> None:
    """A lake with an hour=00 ... hour=09 partition: DuckDB would detect `hour` as text (the leading zero),
    and a date range (an integer comparison on it) would fail; it is declared BIGINT."""
    for date, hour in (("2026-11-30", "00"), ("2026-11-30", "07"), ("2026-11-29", "23")):
        directory = tmp_path / "lake" / "spans" / f"date={date}" / f"hour={hour}"
        directory.mkdir(parents=True)
        pq.write_table(SPAN_SCHEMA.empty_table(), directory / "part.parquet")
    for since in (None, "2026-11-30T05"):
        con = open_lake(tmp_path / "lake", since=since)
        described = con.execute("DESCRIBE SELECT date, hour FROM raw_spans").fetchall()
        assert [(row[0], row[1]) for row in described] == [("date", "DATE"), ("hour", "BIGINT")]
        assert con.execute("SELECT count(*) FROM spans").fetchall() == [(0,)]
