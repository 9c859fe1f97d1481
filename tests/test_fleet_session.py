"""A collector fleet: a session whose turns went to two collectors, in two hours, is one session.

Two real collectors (each its own ports and write-ahead log) write one lake, as a fleet behind the OTel
Collector's load-balancing exporter does when it routes by trace id: the turns of one conversation then
land in different collectors' files, and here also in different hours. Every view that carries a
session id gives those turns the same one, `sessions` has one row for it, and scoring the lake a group
of files at a time (a collector's file of an hour a group, so the session crosses groups) gives the
rows of scoring it whole.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from fixtures.fleet import SPLIT, write_fleet_lake

from tracevals.queries import open_lake
from tracevals.scoring.offline import score_lake


@pytest.fixture(scope="module")
def fleet_lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The lake two collectors wrote; the split session's trace ids."""
    base = tmp_path_factory.mktemp("fleet")
    return base / "lake", write_fleet_lake(base / "lake", base)


def test_the_split_session_lies_in_two_collectors_files_and_two_hours(fleet_lake: tuple[Path, list[str]]) -> None:
    lake, split = fleet_lake
    con = open_lake(lake)
    try:
        files = con.execute(
            "SELECT DISTINCT source_file, hour FROM raw_spans WHERE trace_id IN (?, ?)", split
        ).fetchall()
    finally:
        con.close()
    assert len({f for f, _ in files}) >= 2 and len({h for _, h in files}) == 2, files


def test_every_view_gives_the_split_turns_one_session(fleet_lake: tuple[Path, list[str]]) -> None:
    lake, split = fleet_lake
    con = open_lake(lake)
    try:
        views = [
            name
            for (name,) in con.execute(
                "SELECT DISTINCT table_name FROM information_schema.columns WHERE column_name = 'session_id' "
                "AND table_name IN (SELECT table_name FROM information_schema.columns WHERE column_name = 'trace_id') "
                "AND table_name NOT LIKE 'raw%' AND table_name NOT LIKE 'tv_%' ORDER BY 1"
            ).fetchall()
        ]
        assert {"spans", "attempts", "model_calls", "tool_calls", "steps", "trajectories"} <= set(views)
        for view in views:
            seen = con.execute(f"SELECT DISTINCT session_id FROM {view} WHERE trace_id IN (?, ?)", split).fetchall()
            assert seen in ([(SPLIT,)], []), f"{view}: {seen}"
        row = con.execute("SELECT turn_count, turns, finished FROM sessions WHERE session_id = ?", [SPLIT]).fetchall()
        assert row == [(2, split, True)]
        [(count,)] = con.execute("SELECT count(*) FROM sessions").fetchall()
        assert count == 9
    finally:
        con.close()


def test_scoring_a_group_per_file_gives_the_rows_of_the_whole_lake(fleet_lake: tuple[Path, list[str]]) -> None:
    lake, split = fleet_lake
    columns = ["trace_id", "session_id", "evaluator", "passed", "score", "reason", "details"]
    whole = score_lake(lake, write=False, max_rows=10**9)
    grouped = score_lake(lake, write=False, max_rows=15)  # 40 rows in 4 files: a file a group
    assert whole.groups == 1 and grouped.groups > 2
    assert whole.scores.height > 0
    assert grouped.scores.select(columns).sort(columns).equals(whole.scores.select(columns).sort(columns))
    mine = whole.scores.filter(pl.col("trace_id").is_in(split))
    assert mine.height > 0 and mine.get_column("session_id").unique().to_list() == [SPLIT]
