"""Derived tables (queries/derived.py): a closed hour's loader frames written once at compaction are the
rows the views give, and the nightly job that reads them scores exactly as the one that rebuilds them.

The lake is the engines' two-writer lake (sessions over three hours, a second turn 40 minutes later, a
session split over two hours and two writers, a trace over the hour, a trace with two session ids, OTLP
retries filed later, a log record filed an hour after its span) plus ADK recordings of the shared corpus
(content in log records) and the hand-made dialect fixtures.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from fixtures.engine_lakes import build_two_writer_lake, rows
from fixtures.otlp_lakes import DIALECTS, corpus_recordings, fixture_doc, ingest_doc, moved

from tracevals.lake.lake import Lake
from tracevals.queries import open_lake
from tracevals.queries.binding import bind
from tracevals.queries.derived import (
    HourFiles,
    derived_batch,
    derived_hours,
    hours_of,
    take_derived,
)
from tracevals.queries.derived_write import derive_closed
from tracevals.queries.groups import Group, plan_groups
from tracevals.queries.selection import Selection
from tracevals.queries.sources import files_sql
from tracevals.queries.trajectories import LOADER_VIEWS, load_batch
from tracevals.scoring.offline import score_lake

FAR = 4e9  # a UNIX time after every hour of these lakes: all of them closed


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = build_two_writer_lake(tmp_path_factory.mktemp("derived") / "lake", sessions=24)
    for i, dialect in enumerate(DIALECTS):
        ingest_doc(path, moved(fixture_doc(dialect), 10 + i, hours=0))
    for i, recording in enumerate(corpus_recordings()[:4]):
        ingest_doc(path, moved(json.loads(recording.read_text()), 20 + i, hours=i % 2))
    return path


@pytest.fixture(scope="module")
def derived_lake(lake: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("derived-hours") / "lake"
    shutil.copytree(lake, copy)
    derive_closed(Lake.open(copy), FAR)
    return copy


def _sorted(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    return frame.sort(keys, nulls_last=True)


def test_an_hours_frames_are_the_views_rows_for_the_sessions_wholly_in_it(derived_lake: Path) -> None:
    copy = derived_lake
    written = derived_hours(Lake.open(copy))
    assert written and set(written) == set(hours_of(Lake.open(copy)))
    con = open_lake(copy, read_spans=False, views=LOADER_VIEWS, materialize=False)
    for raw, sub in (("raw_spans", "spans"), ("raw_logs", "logs")):  # the whole lake, as one group reads it
        bind(con, raw, files_sql(con, Lake.open(copy), sub))
    taken = take_derived(con, list(written.values()))
    derived = derived_batch(Lake.open(copy), list(written.values()), taken)
    con.close()
    whole = open_lake(copy, materialize=False)  # the views over the whole lake, for the same traces' sessions
    ids = ", ".join(f"'{t}'" for t in taken.get_column("trace_id").to_list())
    views = load_batch(whole, f"trace_id IN ({ids})")
    whole.close()
    assert _sorted(derived.traces, ["trace_id"]).equals(_sorted(views.traces, ["trace_id"]))
    assert _sorted(derived.calls, ["trace_id", "pos"]).equals(_sorted(views.calls, ["trace_id", "pos"]))
    key = ["trace_id", "at_ms", "reason"]
    assert _sorted(derived.handoffs, key).equals(_sorted(views.handoffs, key))
    taken_total = taken.height
    assert taken_total > 20  # most sessions lie in one hour; the others are left to the views


def test_the_nightly_job_scores_derived_hours_as_it_scores_the_views(lake: Path, tmp_path: Path) -> None:
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    before = score_lake(copy, write=False, max_rows=60)
    assert before.groups > 2  # several groups, crossing sessions among them
    result = CliRunner().invoke(_main(), ["compact", "--lake", str(copy), "--min-age", "0", "--retention", "0"])
    assert result.exit_code == 0, result.output
    [said] = [line for line in result.stderr.splitlines() if line.startswith("derived the frames of ")]
    assert f"of {len(derived_hours(Lake.open(copy)))} closed hours in " in said and said.endswith(" s"), said
    after = score_lake(copy, write=False, max_rows=60)
    assert rows(after.scores).equals(rows(before.scores))
    assert (after.traces, after.sessions) == (before.traces, before.sessions)
    # a nightly selection (a range that `score` always caps at now, a sample): the same sessions, the same rows
    nightly = Selection(since=dt.datetime(2026, 11, 29, 9, 30, tzinfo=dt.timezone.utc), until=dt.datetime(2099, 1, 1,
                        tzinfo=dt.timezone.utc), fraction=0.6, seed=3)  # fmt: skip
    assert after.scores.height and rows(score_lake(copy, write=False, max_rows=60, selection=nightly).scores).equals(
        rows(score_lake(lake, write=False, max_rows=60, selection=nightly).scores)
    )
    # a range alone: a group all of whose spans start within it selects nothing (`selects_all`), one with spans
    # before `since` selects its sessions; either way the views' rows
    since = dt.datetime(2026, 11, 29, 9, 30, tzinfo=dt.timezone.utc)
    for ranged in (Selection(until=nightly.until), Selection(since=since, until=nightly.until)):
        derived = score_lake(copy, write=False, max_rows=60, selection=ranged)
        assert derived.scores.height and rows(derived.scores).equals(
            rows(score_lake(lake, write=False, max_rows=60, selection=ranged).scores)
        )
    assert score_lake(copy, write=False, max_rows=60, selection=Selection(since=since)).traces < after.traces


def test_an_hour_cut_between_blocks_is_read_from_its_frames_by_each(
    lake: Path, derived_lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An hour of several files, or of big ones, is cut between blocks of files: each block's sessions still lie
    wholly in its files once the crossing pass has run, so each block reads them from the hour's frames."""
    from tracevals.scoring import groups as scoring_groups

    source = Lake.open(derived_lake)
    plan = plan_groups(source, max_rows=20)
    plan.derived = derived_hours(source)
    blocks = plan.groups[: plan.blocks]

    def holds(group: Group, files: HourFiles) -> bool:  # the group reads one of the hour's files
        return bool((set(group.spans) | set(group.logs)) & (set(files.spans) | set(files.logs)))

    cut = {
        hour: [g for g in blocks if holds(g, files)]
        for hour, files in plan.derived.items()
        if sum(holds(g, files) for g in blocks) > 1
    }
    assert cut  # the lake has hours cut between blocks at this size
    for hour, cut_blocks in cut.items():
        for group in cut_blocks:
            assert plan.derived[hour] in scoring_groups._usable(plan, group)
    offered: list[list[HourFiles]] = []  # the derived hours each group reads its sessions from
    take = scoring_groups.take_derived

    def counted(con, hours, within=None):  # type: ignore[no-untyped-def]
        offered.append(list(hours))
        return take(con, hours, within)

    monkeypatch.setattr(scoring_groups, "take_derived", counted)
    scored = score_lake(derived_lake, write=False, max_rows=20)
    for hour, cut_blocks in cut.items():  # each block of a cut hour reads the hour's frames
        assert sum(plan.derived[hour].key in {h.key for h in hours} for hours in offered) == len(cut_blocks)
    assert rows(scored.scores).equals(rows(score_lake(lake, write=False, max_rows=20).scores))


def test_a_group_writes_its_scores_a_chunk_of_sessions_at_a_time(
    derived_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group scored from frames writes each chunk's rows as they are scored (its memory holds one chunk's), as
    row groups of its one file: the same files and rows as one chunk a group."""
    import functools

    import pyarrow.parquet as pq

    from tracevals.scoring import groups as scoring_groups

    copies = {chunk: tmp_path / f"lake-{chunk}" for chunk in ("whole", "small")}
    for copy in copies.values():
        shutil.copytree(derived_lake, copy)
    whole = score_lake(copies["whole"], max_rows=60)
    monkeypatch.setattr(scoring_groups, "_Job", functools.partial(scoring_groups._Job, chunk_sessions=3))
    chunked = score_lake(copies["small"], max_rows=60)
    assert len(chunked.files) == len(whole.files) == whole.groups  # a file a group
    row_groups = {name: [pq.ParquetFile(f).num_row_groups for f in run.files] for name, run in (("whole", whole),
                  ("small", chunked))}  # fmt: skip
    assert max(row_groups["small"]) > 1 and sum(row_groups["small"]) > sum(row_groups["whole"])
    assert rows(chunked.scores).equals(rows(whole.scores))
    written = {
        name: rows(pl.read_parquet(f"{copy}/scores/**/*.parquet").drop("scored_at")) for name, copy in copies.items()
    }
    assert written["small"].height == chunked.scores.height and written["small"].equals(written["whole"])


def test_a_group_that_runs_out_of_memory_after_writing_a_chunk_leaves_no_rows_twice(
    derived_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group that runs out of the default memory limit runs again without it (`_beyond_default_memory`):
    the file it was writing never appears, so each score row is in the lake once."""
    import functools

    import duckdb

    from tracevals.scoring import groups as scoring_groups

    expected = score_lake(derived_lake, write=False, max_rows=60)
    copy = tmp_path / "lake"
    shutil.copytree(derived_lake, copy)
    monkeypatch.setattr(scoring_groups, "_Job", functools.partial(scoring_groups._Job, chunk_sessions=3))
    tallied = scoring_groups.tally
    calls = []

    def failing_once(scores: pl.DataFrame) -> pl.DataFrame:
        calls.append(scores.height)
        if len(calls) == 2:  # after a group's first chunk was written
            raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate (a test)")
        return tallied(scores)

    monkeypatch.setattr(scoring_groups, "tally", failing_once)
    scored = score_lake(copy, max_rows=60)
    on_disk = rows(pl.read_parquet(f"{copy}/scores/**/*.parquet").drop("scored_at"))
    assert len(calls) > 2 and len(list((copy / "scores").rglob("*.parquet"))) == len(scored.files)
    assert on_disk.equals(rows(expected.scores)) and rows(scored.scores).equals(rows(expected.scores))


def test_ctrl_c_between_chunks_stops_the_group_and_leaves_no_file_of_it(
    derived_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C that no query saw (it fell in Polars or in an evaluator, or reached a worker process, whose handler
    raises nothing): the group stops at its next chunk and its file never appears; the groups done stay."""
    import functools

    from tracevals.queries import interrupts
    from tracevals.scoring import groups as scoring_groups

    copy = tmp_path / "lake"
    shutil.copytree(derived_lake, copy)
    monkeypatch.setattr(scoring_groups, "_Job", functools.partial(scoring_groups._Job, chunk_sessions=3))
    score_group, chunks = scoring_groups._score_group, scoring_groups.loaded_chunks
    done: list[Path | None] = []  # each group's file, as the groups end
    interrupted: list[int] = []  # how many groups were done when Ctrl-C came

    def recorded(*args, **kwargs):  # type: ignore[no-untyped-def]
        scored = score_group(*args, **kwargs)
        done.append(scored.written)
        return scored

    def ctrl_c_after_the_first(*args, **kwargs):  # type: ignore[no-untyped-def]
        for i, run in enumerate(chunks(*args, **kwargs)):
            if i == 1:  # the group's first chunk is written: Ctrl-C comes, as a worker's handler takes it
                interrupted.append(len(done))
                interrupts._on_sigint_quietly(2, None)
            yield run

    monkeypatch.setattr(scoring_groups, "_score_group", recorded)
    monkeypatch.setattr(scoring_groups, "loaded_chunks", ctrl_c_after_the_first)
    try:
        with pytest.raises(KeyboardInterrupt):
            score_lake(copy, max_rows=60)
    finally:
        interrupts._STOPPING[0] = False
    [at] = interrupted
    assert len(done) == at  # the interrupted group did not end
    files = sorted((copy / "scores").glob("*"))  # its partial file (a temporary one) is gone too
    assert files == sorted(f for f in done if f is not None)


def test_deriving_says_how_far_it_is_an_hour_at_a_time(lake: Path, tmp_path: Path) -> None:
    """`tracevals compact` derives every closed hour after the merge (seconds an hour on a big lake): its bar
    reads (hours written, hours to write) after each hour, from 0, and nothing when every hour is derived."""
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    seen: list[tuple[int, int]] = []
    written = derive_closed(Lake.open(copy), FAR, progress=lambda done, total: seen.append((done, total)))
    n = len(written)
    assert n > 1 and seen == [(i, n) for i in range(n + 1)]
    seen.clear()
    assert derive_closed(Lake.open(copy), FAR, progress=lambda done, total: seen.append((done, total))) == []
    assert seen == []


def test_a_file_that_arrives_in_a_derived_hour_sends_it_back_to_the_views(
    derived_lake: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """And says so, once: the nightly job reads that hour's views, in more time, until the next compaction."""
    copy = tmp_path / "lake"
    shutil.copytree(derived_lake, copy)
    hours = derived_hours(Lake.open(copy))
    assert capsys.readouterr().err == ""  # every frame current: nothing to say
    (hour, files), *_ = hours.items()
    late = Path(files.spans[0]).with_name("part-late.parquet")
    shutil.copyfile(files.spans[0], late)  # the same rows again: an OTLP retry, say
    assert hour not in derived_hours(Lake.open(copy)) and len(derived_hours(Lake.open(copy))) == len(hours) - 1
    warned = capsys.readouterr().err.strip().splitlines()  # once, though the hours were listed twice
    assert len(warned) == 1 and "the derived frames of 1 closed hour are out of date" in warned[0], warned
    assert "`tracevals compact` writes them again" in warned[0]
    late.unlink()
    assert hour in derived_hours(Lake.open(copy))  # the files it was derived from, as they were


def test_frames_another_version_wrote_are_said_out_of_date_and_read_through_the_views(
    derived_lake: Path, tmp_path: Path
) -> None:
    """Frames are named by a key of their hour's files and of the views' SQL: after an upgrade that changed a view,
    every hour's frames are another version's. The nightly job reads those hours through the views (the same
    scores) and says why it took longer, in one line; `tracevals compact` writes them again, and it is quiet."""
    copy = tmp_path / "lake"
    shutil.copytree(derived_lake, copy)
    for frame in (copy / "derived").rglob("*.parquet"):  # as the previous version named them
        stem, _, key = frame.stem.rpartition("-")
        frame.rename(frame.with_name(f"{stem}-{'0' * len(key)}.parquet"))
    result = CliRunner().invoke(_main(), ["score", "--lake", str(copy), "--no-write"])
    assert result.exit_code == 0, result.output
    warned = [line for line in result.output.splitlines() if "out of date" in line]
    assert len(warned) == 1 and warned[0].startswith("tracevals: warning: the derived frames of "), result.output
    assert "`tracevals compact` writes them again" in warned[0]
    assert derived_hours(Lake.open(copy)) == {}
    assert derive_closed(Lake.open(copy), FAR) and len(derived_hours(Lake.open(copy))) == len(hours_of(Lake.open(copy)))
    again = CliRunner().invoke(_main(), ["score", "--lake", str(copy), "--no-write"])
    assert again.exit_code == 0 and "out of date" not in again.output, again.output


def test_a_damaged_frame_file_sends_its_hour_to_the_views_and_is_written_again(
    derived_lake: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Frames are an optimisation: a frame file cut short (a disk that filled, a copy cut off) leaves its hour
    to the views, with one warning line, and the next derivation writes it again; one damaged inside (its
    ends whole) stops the nightly job with one line that names the folder and the fix (a report reads the
    views instead: tests/test_lake_data_narrowed.py)."""
    copy = tmp_path / "lake"
    shutil.copytree(derived_lake, copy)
    hours = derived_hours(Lake.open(copy))
    hour, files = next(iter(hours.items()))
    frame = copy / files.folder / f"calls-{files.key}.parquet"
    whole = frame.read_bytes()
    frame.write_bytes(whole[: len(whole) // 2])
    assert hour not in derived_hours(Lake.open(copy)) and len(derived_hours(Lake.open(copy))) == len(hours) - 1
    warned = capsys.readouterr().err.strip().splitlines()
    assert len(warned) == 1 and "derived frame files are damaged" in warned[0] and str(frame) in warned[0]
    assert [h.hour for h in derive_closed(Lake.open(copy), FAR)] == [hour]  # written again
    assert frame.read_bytes() == whole and derived_hours(Lake.open(copy)) == hours
    inside = bytearray(whole)
    inside[8 : len(whole) // 2] = b"A" * (len(whole) // 2 - 8)  # the pages damaged, the magic and footer whole
    frame.write_bytes(bytes(inside))
    result = CliRunner().invoke(_main(), ["score", "--lake", str(copy)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: the derived frames in ") and "delete that folder" in line, result.output


def _main():  # type: ignore[no-untyped-def]
    from tracevals.cli import main

    return main


def _assert_a_row_group_per_bucket(lake: Path) -> None:
    """Every frame file of `lake` holds a bucket of sessions to a row group, each bucket once."""
    import pyarrow.parquet as pq

    for path in (lake / "derived").rglob("*.parquet"):
        if path.name.startswith("provenance-"):  # a report's rows per attempt, read whole: no buckets
            continue
        meta = pq.ParquetFile(path).metadata
        column = meta.schema.names.index("bucket")
        stats = [meta.row_group(i).column(column).statistics for i in range(meta.num_row_groups)]
        assert all(st.min == st.max for st in stats) and len({st.min for st in stats}) == meta.num_row_groups


def test_a_chunk_of_derived_sessions_is_read_from_its_own_row_groups(derived_lake: Path) -> None:
    """Frames are written a bucket of sessions to a row group; `derived_chunks` reads a range of buckets at a
    time: every taken trace once, whole sessions per chunk, the rows of the whole read."""

    from tracevals.queries.derived import BUCKETS, derived_chunks

    lake = Lake.open(derived_lake)
    hours = list(derived_hours(lake).values())
    _assert_a_row_group_per_bucket(derived_lake)
    con = open_lake(derived_lake, read_spans=False, views=LOADER_VIEWS, materialize=False)
    for raw, sub in (("raw_spans", "spans"), ("raw_logs", "logs")):
        bind(con, raw, files_sql(con, lake, sub))
    taken = take_derived(con, hours)
    con.close()
    whole = derived_batch(lake, hours, taken)
    parts = list(derived_chunks(lake, hours, taken, chunk_sessions=3))
    assert 1 < len(parts) <= BUCKETS
    sid = pl.coalesce("session_id", "trace_id")
    sessions = [set(p.traces.select(sid).to_series().to_list()) for p in parts]
    assert sum(len(x) for x in sessions) == len(set().union(*sessions))  # a session in one chunk
    joined = pl.concat([p.traces for p in parts])
    assert joined.height == taken.height == whole.traces.height
    assert _sorted(joined, ["trace_id"]).equals(_sorted(whole.traces, ["trace_id"]))
    calls = pl.concat([p.calls for p in parts])
    assert _sorted(calls, ["trace_id", "pos"]).equals(_sorted(whole.calls, ["trace_id", "pos"]))


def test_an_hour_is_derived_at_its_merge_and_stays_derived_when_the_inputs_go(lake: Path, tmp_path: Path) -> None:
    """The merged inputs kept for readers are not the hour's files (readers leave them out), so compaction
    derives the hour at once, and deleting the inputs later leaves its frames current."""
    import time

    from tracevals.lake.compact import compact

    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    compact(copy, min_age_s=0, retention_s=30)  # the inputs stay: deletions pending
    every = Lake.open(copy).list_parquet("spans", replaced=True)
    merged = hours_of(Lake.open(copy))
    assert len(every) > sum(len(h.spans) for h in merged.values())  # the inputs are listed, not the hour's
    assert {h.hour for h in derive_closed(Lake.open(copy), FAR)} == set(merged)
    time.sleep(0.3)
    compact(copy, min_age_s=0, retention_s=0.2)  # the inputs deleted
    assert len(Lake.open(copy).list_parquet("spans", replaced=True)) < len(every)
    assert derived_hours(Lake.open(copy)) == merged and not derive_closed(Lake.open(copy), FAR)


def test_an_hour_is_derived_a_range_of_sessions_at_a_time_into_the_same_frames(
    derived_lake: Path, lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`derive` loads an hour a range of buckets of sessions at a time (its memory follows the range, not the
    hour): in ranges of about three sessions, each load holds three sessions or one bucket's (sessions by the
    key every chunking reads, `trace_facts`'s), and the frames written are the rows of the hours loaded at once
    (`derived_lake`), a bucket to a row group."""
    from tracevals.queries import trajectories
    from tracevals.queries.derived import PROVENANCE
    from tracevals.queries.derived_write import derive

    loaded: list[tuple[int, int]] = []  # each load's sessions (the key every chunking reads) and buckets
    load = trajectories.load_batch_and

    def counted(con: Any, query: str) -> Any:
        batch, rows = load(con, query)
        [(sessions, buckets)] = con.execute(
            "SELECT count(DISTINCT sid), count(DISTINCT bucket) FROM tv_buckets "  # `_loaded`'s, for the hour
            "WHERE trace_id IN (SELECT trace_id FROM raw_spans)"  # the traces the views read now
        ).fetchall()
        loaded.append((sessions, buckets))
        return batch, rows

    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    monkeypatch.setattr(trajectories, "load_batch_and", counted)
    hours = list(hours_of(Lake.open(copy)).values())
    assert derive(Lake.open(copy), hours, chunk_sessions=3) == hours
    monkeypatch.undo()
    _assert_a_row_group_per_bucket(copy)
    keys = {h.hour: h.key for h in derived_hours(Lake.open(copy)).values()}
    assert keys == {h.hour: h.key for h in derived_hours(Lake.open(derived_lake)).values()}
    for hour in hours:
        for name in (PROVENANCE, "traces", "calls", "handoffs"):
            ranged = pl.read_parquet(copy / hour.folder / f"{name}-{hour.key}.parquet")
            whole = pl.read_parquet(derived_lake / hour.folder / f"{name}-{hour.key}.parquet")
            key = [c for c, t in whole.schema.items() if not t.is_nested()]  # every row in one order
            assert ranged.sort(key, nulls_last=True).equals(whole.sort(key, nulls_last=True)), (hour.hour, name)
    assert len(loaded) > 2 * len(hours) and sum(n for n, _ in loaded) > 20  # several ranges an hour
    assert all(sessions <= 3 or buckets == 1 for sessions, buckets in loaded), loaded


def test_a_derive_stopped_between_ranges_leaves_no_file_and_drops_its_tables_first(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure (or Ctrl-C) while an hour's ranges are written: nothing of the hour is written, and the ranges'
    restriction is undone on the open connection before it closes (not later, by the garbage collector, on a
    closed one: an "Exception ignored" line on the user's terminal)."""
    import gc
    import sys

    from tracevals.queries import derived_write

    def stopped(lake_: Lake, hour: HourFiles, loaded: Any) -> None:
        next(loaded)  # the first range loaded, the views restricted to it
        raise KeyboardInterrupt

    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    monkeypatch.setattr(derived_write, "_write", stopped)
    with pytest.raises(KeyboardInterrupt):
        derived_write.derive(Lake.open(copy), list(hours_of(Lake.open(copy)).values()), chunk_sessions=3)
    gc.collect()
    assert not unraisable, [u.exc_value for u in unraisable]
    assert not (copy / "derived").exists() or not list((copy / "derived").rglob("*.parquet"))


def test_a_runs_attempts_are_scored_from_the_derived_frames_as_through_the_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tracevals run` scores its run (a selection of runs) right after deriving its hour's frames, and the
    selection went through the views all the same (~0.6 s of a 25-attempt run, the frames unread). A
    selection of runs or traces now takes whole sessions from `spans` alone and reads the derived ones from
    their frames, keeping of them the attempts of its runs, as the views' loader does: the same rows, a
    session that also holds another run's trace included."""
    from opentelemetry import trace

    import tracevals
    import tracevals.scoring.groups as groups
    from tracevals.model import attributes as tv

    lake = tmp_path / "lake"
    telemetry = tracevals.instrument(lake=lake, capture_content=True, instrumentors=False)
    get_order = tracevals.tool(effect="read")(lambda order_id: {"id": order_id})
    ids: dict[str, str] = {}
    for name, run, session in (
        ("a1", "A", "shared"),
        ("b1", "B", "shared"),
        ("a2", "A", "a-only"),
        ("b2", "B", "b-only"),
    ):
        with tracevals.session(session), trace.get_tracer("t").start_as_current_span(f"attempt {name}") as root:
            root.set_attributes({tv.RUN_ID: run, tv.TASK_ID: name, tv.ATTEMPT: 1, tv.VARIANT: "v"})
            get_order(name)
            get_order(name)  # a duplicate read, for the evaluators to say something of
            ids[name] = f"{root.get_span_context().trace_id:032x}"
    telemetry.shutdown()
    copy = tmp_path / "derived"
    shutil.copytree(lake, copy)
    derive_closed(Lake.open(copy), FAR)
    assert derived_hours(Lake.open(copy))

    through_views = []
    original = groups._through_views
    monkeypatch.setattr(groups, "_through_views", lambda *a, **k: through_views.append(1) or original(*a, **k))
    for selection, traces in (
        (Selection(runs=("A",)), {ids["a1"], ids["a2"]}),
        (Selection(runs=("B",)), {ids["b1"], ids["b2"]}),
        (Selection(trace_ids=(ids["a2"],)), {ids["a2"]}),
        (Selection(trace_ids=(ids["b1"],)), {ids["a1"], ids["b1"]}),  # a trace's whole session
    ):
        derived = score_lake(copy, write=False, selection=selection)
        assert not through_views, selection  # every session of these lies in the derived hour
        views = score_lake(lake, write=False, selection=selection)
        assert set(derived.scores.get_column("trace_id")) == traces, selection
        assert rows(derived.scores).equals(rows(views.scores)), selection
        through_views.clear()
