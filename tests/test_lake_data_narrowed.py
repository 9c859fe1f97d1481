"""A report reads the views for the sessions it selects, not for the whole lake.

`report` and `gate` on a small lake of 50 runs computed every view (message parts, calls, steps) for all
1,250 attempts at open, to report two runs' 50; the views are now narrowed to the selected runs' sessions
before anything is computed, and the report is the same.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest
from fixtures.demo_run import shared_demo
from fixtures.otlp_lakes import DIALECTS, ingest_fixture

from tracevals.lake.lake import Lake
from tracevals.queries import frames_or_views, open_lake, trajectories
from tracevals.queries.derived import derived_hours
from tracevals.queries.derived_write import derive_closed
from tracevals.queries.frames_or_views import FramesOrViews
from tracevals.queries.selection import Selection, SelectionError, select_sessions
from tracevals.scoring.lake_data import REPORT_VIEWS, _read_attempts, load_lake_data


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Lake:
    """The demo's lake (one run of 120 attempts) and production traffic beside it: four traces of no run."""
    lake = tmp_path_factory.mktemp("narrowed") / "lake"
    shutil.copytree(shared_demo(tmp_path_factory) / "lake", lake)
    for dialect in DIALECTS:
        ingest_fixture(lake, dialect)
    return Lake.open(lake)


def _traces(con: object, relation: str) -> int:
    [(count,)] = con.execute(f"SELECT count(DISTINCT trace_id) FROM {relation}").fetchall()  # type: ignore[attr-defined]
    return int(count)


def test_the_views_are_computed_for_the_selected_runs_alone(mixed: Lake) -> None:
    con = open_lake(mixed, views=REPORT_VIEWS, materialize=False)
    every = _traces(con, "raw_spans")
    [(run,)] = con.execute("SELECT DISTINCT run_id FROM runs").fetchall()
    data = load_lake_data(mixed, Selection(runs=(run,)), con=con)
    assert len(data.trajectories) == 120 < every
    assert _traces(con, "raw_spans") == 120  # what the views read: the run's sessions
    assert _traces(con, "message_parts") <= 120


def test_the_report_is_the_one_a_whole_lake_snapshot_gives(mixed: Lake) -> None:
    """A connection whose views were computed for the whole lake at open (a small lake's snapshot, as
    `open_lake` makes it by default) gives the same attempts, scores, environments and provenance."""
    narrowed = load_lake_data(mixed, Selection())
    whole = load_lake_data(mixed, Selection(), con=open_lake(mixed))
    assert narrowed.trajectories == whole.trajectories and len(narrowed.trajectories) == 120
    assert narrowed.scores == whole.scores and len(narrowed.scores) > 0
    assert narrowed.environments == whole.environments and narrowed.provenance == whole.provenance


def test_the_provenance_and_environments_are_what_the_runs_and_environments_views_say(mixed: Lake) -> None:
    """One query reads the selected attempts' provenance and environments (each query binds the tree of views
    again): per variant, the runs and dates of `attempts`, the commits and lock hashes of `runs`, as a query
    of those views gives them, and each attempt's `environments` row; production traffic has none."""
    data = load_lake_data(mixed, Selection())
    con = open_lake(mixed)
    traces = sorted(t.trace_id for t in data.trajectories)
    con.execute("CREATE TEMP TABLE picked AS SELECT unnest(?::VARCHAR[]) AS trace_id", [traces])
    rows = con.execute(
        "SELECT a.variant, list(DISTINCT a.run_id ORDER BY a.run_id), list(DISTINCT r.commit_hash ORDER BY "
        "r.commit_hash), list(DISTINCT r.lock_hash ORDER BY r.lock_hash), min(a.start_time), max(a.end_time) "
        "FROM attempts AS a JOIN picked USING (trace_id) LEFT JOIN runs AS r USING (trace_id) "
        "GROUP BY a.variant ORDER BY a.variant"
    ).fetchall()
    variants = data.provenance["variants"]
    assert list(variants) == [r[0] for r in rows] and len(rows) >= 2
    for variant, runs, commits, locks, start, end in rows:
        got = variants[variant]
        assert got["runs"] == [x for x in runs if x] and got["commits"] == ([x for x in commits if x] or ["unknown"])
        assert got["lock_hashes"] == ([x for x in locks if x] or ["unknown"])
        utc = [t.astimezone(dt.timezone.utc).isoformat(timespec="seconds") for t in (start, end)]
        assert [got["date_from"], got["date_to"]] == utc
    cursor = con.execute(
        "SELECT * EXCLUDE (run_id, task_id, attempt, variant, model_calls, settings) FROM environments "
        "JOIN picked USING (trace_id)"
    )
    names = [d[0] for d in cursor.description][1:]
    expected = {
        r[0]: {n: None if v is None else str(v) for n, v in zip(names, r[1:], strict=True)} for r in cursor.fetchall()
    }
    assert data.environments == expected and len(expected) == 120
    # a trace of no run (production traffic) among them: its attempt read, and no environments row for it
    con.execute("CREATE OR REPLACE TEMP TABLE _report_traces AS SELECT DISTINCT trace_id FROM attempts")
    with FramesOrViews(con, mixed, select_sessions(con, Selection())) as split:
        attempts, environments = _read_attempts(split)
    assert len(attempts) > 120 and environments == expected


def test_attempts_in_derived_hours_are_read_from_their_frames_and_the_report_is_the_same(
    mixed: Lake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the lake's hours are derived (`tracevals compact`, the end of `tracevals run`), a report reads the
    attempts of those hours from their frames and rebuilds only the others (here: none) through the views;
    the attempts, scores, environments and provenance are those of the views."""
    copy = tmp_path / "lake"
    shutil.copytree(mixed.location, copy)
    assert derive_closed(Lake.open(copy), 4e9)
    read: list[int] = []
    rebuilt: list[int] = []
    provenance: list[int] = []  # the attempts whose provenance and environments rows came from the frames
    frames_of, views_of = frames_or_views.derived_batch, trajectories.load_batch
    provenance_of, query_of = frames_or_views.derived_provenance, frames_or_views.query_sql
    queried: list[str] = []  # the provenance queries planned over the views

    def query_views(name: str, **values: Any) -> str:
        queried.append(name)
        return query_of(name, **values)

    def provenance_from_frames(*args: Any, **kwargs: Any) -> Any:
        table = provenance_of(*args, **kwargs)
        provenance.append(table.num_rows)
        return table

    def from_frames(*args: Any, **kwargs: Any) -> Any:
        batch = frames_of(*args, **kwargs)
        read.append(len(batch))
        return batch

    def through_views(*args: Any, **kwargs: Any) -> Any:
        batch = views_of(*args, **kwargs)
        rebuilt.append(len(batch))
        return batch

    monkeypatch.setattr(frames_or_views, "derived_batch", from_frames)
    monkeypatch.setattr(trajectories, "load_batch", through_views)
    monkeypatch.setattr(frames_or_views, "derived_provenance", provenance_from_frames)
    monkeypatch.setattr(frames_or_views, "query_sql", query_views)
    for selection in (Selection(), Selection(variants=("candidate",))):
        framed = load_lake_data(Lake.open(copy), selection)
        # every attempt from the frames (those of the selected sessions, before the where on runs and variants)
        assert sum(read) >= len(framed.trajectories) > 0 and sum(rebuilt) == 0
        assert sum(provenance) >= len(framed.trajectories) and not queried  # its provenance too, no view planned
        monkeypatch.setattr(frames_or_views, "derived_hours", lambda lake: {})  # no frames: through the views
        viewed = load_lake_data(Lake.open(copy), selection)
        monkeypatch.setattr(frames_or_views, "derived_hours", derived_hours)
        assert sum(rebuilt) == len(viewed.trajectories) and queried == ["attempt_provenance"]
        assert framed.trajectories == viewed.trajectories and len(framed.trajectories) == len(viewed.trajectories)
        assert framed.scores == viewed.scores and framed.scores
        assert framed.environments == viewed.environments and framed.provenance == viewed.provenance
        read.clear()
        rebuilt.clear()
        provenance.clear()
        queried.clear()


def test_frames_damaged_inside_leave_the_report_to_the_views_with_one_warning(
    mixed: Lake, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "lake"
    shutil.copytree(mixed.location, copy)
    derive_closed(Lake.open(copy), 4e9)
    for frame in [*(copy / "derived").rglob("calls-*.parquet"), *(copy / "derived").rglob("provenance-*.parquet")]:
        whole = frame.read_bytes()
        frame.write_bytes(whole[:8] + b"A" * (len(whole) // 2 - 8) + whole[len(whole) // 2 :])  # ends whole
    capsys.readouterr()
    damaged = load_lake_data(Lake.open(copy), Selection())
    warned = capsys.readouterr().err.strip().splitlines()
    assert len(warned) == 1 and "cannot be read" in warned[0] and "through the views" in warned[0]
    viewed = load_lake_data(mixed, Selection())
    assert damaged.trajectories == viewed.trajectories and damaged.scores == viewed.scores
    assert damaged.environments == viewed.environments and damaged.provenance == viewed.provenance


@pytest.mark.parametrize("run_id", ["no-such-run\n) OR TRUE --", "x'\r\n-- ", "{only}"])
def test_a_run_id_with_a_line_break_selects_nothing_and_says_so(mixed: Lake, run_id: str) -> None:
    """The selection's SQL template said `{only}` in a comment, and the run ids went there too: a line break
    in one ended the comment, the rest of the line was read as SQL (a parse error, `cannot read the lake`).
    Comment lines are left out before a template is filled."""
    con = open_lake(mixed, views=REPORT_VIEWS, materialize=False)
    assert select_sessions(con, Selection(runs=(run_id,))).count == 0
    with pytest.raises(SelectionError, match=r"^no attempts match run "):
        load_lake_data(mixed, Selection(runs=(run_id,)))


def test_the_unscored_are_scored_from_the_batch_as_from_their_trajectories(mixed: Lake) -> None:
    """A report scores its unscored attempts from the batch it read (`score_loaded`), not from `Trajectory`
    objects turned back into a batch: the same scores, row for row, as `score_trajectories` gives, with the cases
    the run kept and with none (production traffic)."""
    from tracevals.queries.trajectories import load_batch, trajectories_of
    from tracevals.scoring.offline import score_loaded, score_trajectories
    from tracevals.scoring.runs import kept_cases

    cases = {c.case_id: c for c in kept_cases(mixed).cases}
    batch = load_batch(open_lake(mixed))
    trajectories = trajectories_of(batch)
    assert len(trajectories) > 120 and cases  # the run's attempts and the production traces beside them
    for given in (cases, {}):
        loaded = score_loaded(batch.select([t.trace_id for t in trajectories]), given)
        rebuilt = score_trajectories(trajectories, given)
        key = lambda s: (s.trace_id, s.evaluator)  # noqa: E731
        assert len(loaded) > 250
        assert sorted(loaded, key=key) == sorted(rebuilt, key=key)


def test_stored_details_are_parsed_once_per_text() -> None:
    """`details_of`: each distinct text parsed once (scores of one text share the dict), the unreadable as {}."""
    from tracevals.model.score import details_of

    clean = '{"findings": [], "calls": 2}'
    got = details_of([clean, None, clean, "", "not json", "[1, 2]", '{"a": ' * 300 + "1" + "}" * 300, clean])
    assert got[0] == {"findings": [], "calls": 2} and got[0] is got[2] is got[7]
    assert [got[i] for i in (1, 3, 4, 5, 6)] == [{}] * 5  # none, empty, not JSON, not an object, nested too deep
    assert details_of([]) == []
