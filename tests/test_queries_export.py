"""export_view: a per-trace view written a group of hours at a time has exactly the rows of the one
query over the whole lake, including traces whose spans or log records fall in two groups."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from fixtures.otlp_lakes import DIALECTS, fixture_doc, ingest_doc, moved

from tracevals.queries import LakeError, open_lake
from tracevals.queries.export import export_view


@pytest.fixture(scope="module")
def spread_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every dialect's conversation, copied into five hours; two copies cross an hour boundary (a late
    span, a late log record), and one document is written twice (a client's retry)."""
    lake = tmp_path_factory.mktemp("spread") / "lake"
    n = 0
    for dialect in DIALECTS:
        doc = fixture_doc(dialect)
        for hours in range(5):
            n += 1
            late = {1: "span", 3: "log"}.get(hours)
            ingest_doc(lake, moved(doc, n, hours, late))
        ingest_doc(lake, moved(doc, n, 4))  # the last copy again
    assert len(list((lake / "spans").glob("date=*/hour=*"))) >= 5
    return lake


@pytest.mark.parametrize(
    "view", ["trajectories", "steps", "tool_call_gaps", "requested_tool_calls", "model_calls", "message_parts"]
)
def test_an_export_a_few_hours_at_a_time_has_the_rows_of_one_query(
    spread_lake: Path, tmp_path: Path, view: str
) -> None:
    whole = open_lake(spread_lake).execute(f"SELECT * FROM {view} ORDER BY ALL").fetchall()
    done: list[tuple[int, int]] = []
    result = export_view(spread_lake, view, tmp_path / "out", max_spans=1, progress=lambda d, t: done.append((d, t)))
    assert result.groups >= 5 and result.crossing_traces >= 2  # every hour its own group
    assert done[-1][0] == done[-1][1] == result.groups + 1
    parts = duckdb.connect().execute(f"SELECT * FROM read_parquet('{tmp_path / 'out'}/*.parquet') ORDER BY ALL")
    assert parts.fetchall() == whole and whole
    assert result.rows == len(whole)


def test_one_group_is_the_plain_query(spread_lake: Path, tmp_path: Path) -> None:
    result = export_view(spread_lake, "trajectories", tmp_path / "out")
    assert (result.groups, result.crossing_traces, len(result.files)) == (1, 0, 1)
    [(count,)] = open_lake(spread_lake).execute("SELECT count(*) FROM trajectories").fetchall()
    assert result.rows == count


def test_per_session_views_and_used_directories_are_refused(spread_lake: Path, tmp_path: Path) -> None:
    with pytest.raises(LakeError, match="not computed trace by trace"):
        export_view(spread_lake, "sessions", tmp_path / "a")
    with pytest.raises(LakeError, match="unknown view"):
        export_view(spread_lake, "trajectory", tmp_path / "a")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "keep.txt").write_text("mine")
    with pytest.raises(LakeError, match="not an empty directory"):
        export_view(spread_lake, "steps", tmp_path / "used")
    assert (tmp_path / "used" / "keep.txt").read_text() == "mine"


def test_worker_processes_write_the_same_rows(spread_lake: Path, tmp_path: Path) -> None:
    whole = open_lake(spread_lake).execute("SELECT * FROM steps ORDER BY ALL").fetchall()
    result = export_view(spread_lake, "steps", tmp_path / "out", max_spans=1, workers=2)
    assert result.groups >= 5 and result.crossing_traces >= 2
    parts = duckdb.connect().execute(f"SELECT * FROM read_parquet('{tmp_path / 'out'}/*.parquet') ORDER BY ALL")
    assert parts.fetchall() == whole and whole
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [p.name for p in result.files]  # no leftovers


def test_a_connection_keeps_no_footers_from_one_group_of_hours_to_the_next(
    spread_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each group of hours reads files no other group reads; DuckDB kept every footer read (its object cache,
    which nothing empties), so a worker's native heap grew group after group (as `tracevals score`'s did)."""
    from fixtures.footers import cached_footers, footers_of

    from tracevals.queries import export

    footers = footers_of(spread_lake)
    held: list[int] = []
    write_part = export._write_part

    def spied(con, task):  # type: ignore[no-untyped-def]
        rows = write_part(con, task)
        if task.group is not None:
            held.append(cached_footers(con))
        return rows

    monkeypatch.setattr(export, "_write_part", spied)
    result = export_view(spread_lake, "steps", tmp_path / "out", max_spans=1)
    assert result.groups >= 5 and len(held) >= 5 and footers > 0
    assert max(held) < footers / 10, (held, footers)


def test_the_export_command(spread_lake: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tracevals.cli import main

    args = ["export", "trajectories", "--lake", str(spread_lake), "--workers", "2", "--max-spans", "1"]
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "out"), "--format", "json"])
    assert result.exit_code == 0, result.output
    files = [row["file"] for row in json.loads(result.stdout)]
    [(count,)] = open_lake(spread_lake).execute("SELECT count(*) FROM trajectories").fetchall()
    assert duckdb.connect().execute(f"SELECT count(*) FROM read_parquet({files})").fetchall() == [(count,)]
    # never into the lake, whose readers would take the parts for spans
    inside = CliRunner().invoke(main, [*args, "--out", str(spread_lake / "spans" / "export")])
    assert inside.exit_code == 1 and "inside the lake" in inside.output
    assert not (spread_lake / "spans" / "export").exists()


def test_a_script_without_a_main_guard_gets_a_clear_error_not_a_hang(spread_lake: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "nightly.py"
    script.write_text(
        "from tracevals.queries.export import export_view\n"
        f"export_view({str(spread_lake)!r}, 'steps', {str(tmp_path / 'out')!r}, max_spans=1, workers=2)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert 'if __name__ == "__main__":' in done.stderr.splitlines()[-1]
