"""Scoring a lake a group of whole sessions at a time gives the rows of scoring it in one go.

The lake is varied on purpose: a session whose turns lie in two hours and several files, a trace that
runs over the hour, OTLP-retry duplicates in two files of two groups, a log record filed an hour after
its span, a trace without a session id, a trace with two session ids, and harness attempts of two runs.
Each is scored whole (one group) and in groups of a few rows (one hour cut between its files), under
the selections a nightly job uses: everything, a sample, a time range, some runs.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from fixtures.engine_lakes import CASES, T0, build_two_writer_lake

from tracevals.lake.lake import Lake
from tracevals.queries import open_lake
from tracevals.queries.groups import find_crossing, plan_groups
from tracevals.queries.selection import Selection
from tracevals.scoring.job import SESSION_MARGIN
from tracevals.scoring.offline import score_connection, score_lake
from tracevals.scoring.results import ScoringRun


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # one writer whose files hold 16 spans (and an hour) each: a session's spans lie in one file or in several
    return build_two_writer_lake(tmp_path_factory.mktemp("groups") / "lake", services=("groups-test",), retries=False)


SELECTIONS = {
    "all": None,
    "everything": Selection(),
    "sample": Selection(fraction=0.5, seed=3),
    "range": Selection(since=T0, until=T0 + dt.timedelta(hours=2)),
    "runs": Selection(runs=("r1",)),
}
COLUMNS = ["trace_id", "session_id", "task_id", "evaluator", "passed", "score", "reason", "details"]


def _rows(scores: pl.DataFrame) -> pl.DataFrame:
    return scores.select(COLUMNS).sort(COLUMNS, nulls_last=True)


def _whole(lake: Path, selection: Selection | None) -> ScoringRun:
    """One pass over the whole lake: the connection `score_lake` opens for a lake of one group."""
    lower = selection.since - SESSION_MARGIN if selection is not None and selection.since is not None else None
    con = open_lake(lake, since=lower, materialize=False)
    try:
        return score_connection(con, tasks=CASES, selection=selection)
    finally:
        con.close()


@pytest.mark.parametrize("name", list(SELECTIONS))
def test_groups_of_a_few_rows_score_as_the_whole_lake(varied: Path, name: str) -> None:
    selection = SELECTIONS[name]
    whole = _whole(varied, selection)
    grouped = score_lake(varied, tasks=CASES, selection=selection, write=False, max_rows=40)
    assert grouped.groups > 6
    assert whole.scores.height > 0
    assert _rows(grouped.scores).equals(_rows(whole.scores))
    assert (grouped.traces, grouped.sessions, grouped.root_spans) == (whole.traces, whole.sessions, whole.root_spans)


def test_the_plan_sets_apart_exactly_the_sessions_that_cross_blocks(varied: Path, tmp_path: Path) -> None:
    plan = plan_groups(Lake.open(varied), max_rows=90)  # blocks of whole hours: 08-09, 10, 11-12
    assert plan is not None
    find_crossing(plan, tmp_path)
    assert plan.crossing is not None and len(plan.groups) > plan.blocks  # crossing groups follow the blocks
    block = {path: g.index for g in plan.groups[: plan.blocks] for path in (*g.spans, *g.logs)}
    rows = pl.concat(
        [
            pl.read_parquet(
                path, columns=[c for c in ("trace_id", "session_id") if c in pq.read_schema(path).names]
            ).with_columns(pl.col("^session_id$").cast(pl.Utf8), block=pl.lit(number))
            for path, number in block.items()
        ],
        how="diagonal_relaxed",
    ).filter(pl.col("trace_id").is_not_null())
    traces = rows.group_by("trace_id").agg(
        key=pl.coalesce(pl.col("session_id").max(), pl.col("trace_id").first()), blocks=pl.col("block").unique()
    )
    traces = traces.with_columns(key=pl.col("key").replace({"two-ids-b": "two-ids"}))  # joined by one trace
    sessions = traces.explode("blocks").group_by("key").agg(pl.col("blocks").n_unique())
    crossing = set(sessions.filter(pl.col("blocks") > 1).get_column("key"))
    expected = set(traces.filter(pl.col("key").is_in(list(crossing))).get_column("trace_id"))
    assert set(pl.read_parquet(plan.crossing).get_column("trace_id")) == expected
    # a session whose turns lie in two hours, a trace over the hour, a log record an hour later, a copy of a
    # span filed two hours later, two sessions joined by a trace that carries both ids
    assert {"s-6", "over-the-hour", "s-1", "s-2", "two-ids"} <= crossing


def test_workers_and_counts_only_give_the_same_rows_and_summary(varied: Path) -> None:
    selection = Selection(fraction=0.7, seed=1)
    whole = _whole(varied, selection)
    parallel = score_lake(varied, tasks=CASES, selection=selection, write=False, max_rows=40, workers=2)
    assert parallel.groups > 2
    assert _rows(parallel.scores).equals(_rows(whole.scores))
    counted = score_lake(varied, tasks=CASES, selection=selection, write=False, max_rows=40, keep_scores=False)
    assert counted.scores.height == 0 and counted.score_count == whole.scores.height
    assert counted.summary().equals(ScoringRun(whole.scores, 0, 0).summary())


@pytest.mark.parametrize("workers", [1, 2])
def test_the_job_is_told_each_group_it_has_scored(varied: Path, workers: int) -> None:
    # `ScoringJob.progress` (what `tracevals score` draws its bar with): (1, n) .. (n, n) in order, n the groups
    # the run scored, on this process whether the groups ran here or on workers
    told: list[tuple[int, int]] = []
    run = score_lake(varied, tasks=CASES, write=False, max_rows=40, workers=workers,
                     progress=lambda done, total: told.append((done, total)))  # fmt: skip
    assert run.groups > 2
    assert told == [(i, run.groups) for i in range(1, run.groups + 1)]


def test_each_group_writes_its_own_scores_file(varied: Path, tmp_path: Path) -> None:
    import shutil

    lake = tmp_path / "lake"
    shutil.copytree(varied, lake)
    seen: list[int] = []
    run = score_lake(lake, tasks=CASES, max_rows=40, keep_scores=False, sinks=[lambda s, _r: seen.append(s.height)])
    assert len(run.files) > 1 and all(f.parent == lake / "scores" for f in run.files)
    assert sum(seen) == run.score_count == pl.read_parquet(str(lake / "scores" / "**" / "*.parquet")).height


def test_a_worker_keeps_no_footers_from_one_group_of_files_to_the_next(
    varied: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker scores group after group on one connection, each group of files reading files no other one
    reads. DuckDB kept each file's footer in its object cache, which nothing empties: at 10^7 spans a worker's
    native heap grew ~1.5 MB a group, 30 MiB over the night's groups. A group of files now keeps none (a
    crossing group, which reads every block's files several times, still does)."""
    from fixtures.footers import cached_footers, footers_of

    from tracevals.scoring import groups

    footers = footers_of(varied)
    held: list[tuple[bool, int]] = []
    scored_group = groups._score_group

    def spied(con, plan, group, job):  # type: ignore[no-untyped-def]
        done = scored_group(con, plan, group, job)
        held.append((group.crossing, cached_footers(con)))
        return done

    monkeypatch.setattr(groups, "_score_group", spied)
    run = score_lake(varied, tasks=CASES, write=False, max_rows=40)
    of_files = [bytes_ for crossing, bytes_ in held if not crossing]
    assert run.groups == len(held) and len(of_files) > 6 and footers > 0
    assert max(of_files) < footers / 10, (of_files, footers)


def test_a_kept_batch_holds_every_scored_trajectory(varied: Path) -> None:
    selection = Selection(runs=("r1",))
    whole = _whole(varied, selection)
    kept = score_lake(varied, tasks=CASES, selection=selection, write=False, max_rows=40, keep_batch=True)
    assert kept.groups > 6 and len(kept.trajectories()) == whole.traces == kept.traces > 0
    assert sorted(t.trace_id for t in kept.trajectories()) == sorted(whole.scores.get_column("trace_id").unique())


def test_a_crossing_pass_out_of_the_default_memory_runs_again_without_it(
    varied: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The crossing pass holds every trace id of the lake: beyond the default group limit (at 10^7 spans) it
    ran out, and `tracevals score` ended in a traceback. Out of the default limit it runs again without it, as
    a group does; out of a limit the caller gave, it still fails."""
    import duckdb

    from tracevals.scoring import groups

    tiny = "1MB"
    plan = plan_groups(Lake.open(varied), max_rows=40)
    assert plan is not None
    with pytest.raises(duckdb.OutOfMemoryException):
        find_crossing(plan, tmp_path, tiny)  # the pass really runs out at this limit
    # the pass gets the tiny limit where it would get the default (the groups keep theirs)
    monkeypatch.setattr(groups, "find_crossing", lambda p, w, limit, threads=None: find_crossing(
        p, w, tiny if limit == groups.GROUP_MEMORY else limit, threads=threads
    ))  # fmt: skip
    whole = _whole(varied, None)
    scored = score_lake(varied, tasks=CASES, write=False, max_rows=40)
    assert scored.groups > 6 and _rows(scored.scores).equals(_rows(whole.scores))
    with pytest.raises(duckdb.OutOfMemoryException):
        score_lake(varied, tasks=CASES, write=False, max_rows=40, memory_limit=tiny)


def _long_conversations(lake: Path, traces: int, history: int) -> Path:
    """`traces` copies of the GenAI fixture's conversation, each model call's input led by `history` earlier
    user messages of 2 KB (about 400 KB of input messages a call at 200): a long-running agent's calls."""
    import copy
    import json

    from fixtures.otlp_lakes import fixture_doc, ingest_doc

    past = [{"role": "user", "parts": [{"type": "text", "content": f"turn {i} " + "x" * 2000}]} for i in range(history)]
    for n in range(traces):
        doc = copy.deepcopy(fixture_doc("genai_current"))
        for scope in (s for r in doc["resourceSpans"] for s in r["scopeSpans"]):
            for span in scope["spans"]:
                span["traceId"] = f"{n + 1:04x}" + span["traceId"][4:]
                for attribute in span.get("attributes", []):
                    if attribute["key"] == "gen_ai.input.messages":
                        messages = json.loads(attribute["value"]["stringValue"])
                        attribute["value"]["stringValue"] = json.dumps(past + messages)
        ingest_doc(lake, doc)
    return lake


def test_a_group_whose_tables_outgrow_the_default_memory_is_scored_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view's table that needs more than the default group limit (160MB) is computed again without it
    (`binding.computed`), not the whole group scored over: four sessions of long conversations made
    `message_parts` outgrow it (DuckDB holds a vector of parsed documents per JSON function), and every view
    was rebuilt twice; so was a small lake of `tracevals run`'s 1,250 attempts."""
    from tracevals.scoring import groups

    lake = _long_conversations(tmp_path / "lake", traces=4, history=200)
    scored_once = groups._score_group_once
    calls: list[int] = []

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return scored_once(*args, **kwargs)

    monkeypatch.setattr(groups, "_score_group_once", counted)
    scored = score_lake(lake, write=False)
    assert scored.groups == 1 and calls == [1]
    assert scored.traces == 8 and scored.scores.height > 0  # the fixture holds two traces
    with open_lake(lake) as con:  # every message of the long inputs is read
        [(parts,)] = con.execute("SELECT count(*) FROM message_parts WHERE content LIKE 'turn %'").fetchall()
    assert parts >= 4 * 200


def test_keeping_footers_is_set_each_time_and_holds_no_connection() -> None:
    """`keep_footers` does what it is told on every call (a group of files after a crossing group keeps none
    again), and keeps no reference to the connection (one kept alive by a cache would keep its whole
    database)."""
    import gc
    import weakref

    import duckdb

    from tracevals.queries.connection import keep_footers

    def setting(con: duckdb.DuckDBPyConnection) -> str:
        [(value,)] = con.execute("SELECT current_setting('parquet_metadata_cache')").fetchall()
        return str(value).lower()

    con = duckdb.connect()
    for keep in (False, True, False, True, False):
        keep_footers(con, keep)
        assert setting(con) == str(keep).lower()
    gone = weakref.ref(con)
    con.close()
    del con
    gc.collect()
    assert gone() is None
