"""`tracevals compact`: the closed hours of a lake rewritten as one file each, sorted by session, with
every row kept and every view unchanged; a crash between commit and delete finished by the next run."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixtures.otlp_lakes import DIALECTS, fixture_doc, ingest_doc, ingest_scrambled, moved

from tracevals.lake.compact import MARKER, ROW_GROUP_ROWS, CompactError, compact, compacted_from
from tracevals.lake.paths import LakeError
from tracevals.lake.schema import DERIVED_DIR, SPAN_SCHEMA
from tracevals.lake.writer import write_table_atomically
from tracevals.queries import VIEW_NAMES, open_lake, session_lookup


def _build(lake: Path) -> None:
    """Every dialect's conversation in four hours, many files an hour (one per document, and one
    conversation dealt into four files in random order), one document written twice (a retry)."""
    n = 0
    for dialect in DIALECTS:
        doc = fixture_doc(dialect)
        for hours in range(4):
            n += 1
            ingest_doc(lake, moved(doc, n, hours, {1: "span", 2: "log"}.get(hours)))
        ingest_doc(lake, moved(doc, n, 3))  # the last copy again
        n += 1
        ingest_scrambled(lake, [moved(doc, n, 2)], seed=n)


@pytest.fixture(autouse=True)
def no_retention(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests check what a compaction writes and deletes, with the merged inputs deleted at once; how
    long they stay for readers that listed them (the retention) is tests/test_lake_retention.py's."""
    monkeypatch.setenv("TRACEVALS_COMPACT_RETENTION", "0")


@pytest.fixture()
def built(tmp_path: Path) -> Path:
    lake = tmp_path / "lake"
    _build(lake)
    return lake


def _files(lake: Path, table: str = "spans") -> list[Path]:
    return sorted(p for p in (lake / table).rglob("*.parquet"))


def _raw(lake: Path, table: str = "spans") -> list[tuple[Any, ...]]:
    """Every row of the table's files, source file aside, in a canonical order."""
    files = [str(p) for p in _files(lake, table)]
    con = duckdb.connect()
    return con.execute(f"SELECT * FROM read_parquet({files}, union_by_name = true) ORDER BY ALL").fetchall()


def _views(lake: Path, views: tuple[str, ...] = VIEW_NAMES) -> dict[str, list[tuple[Any, ...]]]:
    con = open_lake(lake, materialize=True)  # the base views computed once: each view then plans quickly
    out = {}
    for view in views:
        columns = [row[0] for row in con.execute(f"DESCRIBE {view}").fetchall()]
        exclude = " EXCLUDE (source_file)" if "source_file" in columns else ""
        out[view] = con.execute(f"SELECT *{exclude} FROM {view} ORDER BY ALL").fetchall()
    return out


def test_every_row_and_every_view_is_the_same_after_compaction(built: Path) -> None:
    before_files = _files(built) + _files(built, "logs")
    before = {table: _raw(built, table) for table in ("spans", "logs")}
    views = _views(built)
    assert len(before_files) > 2 * len(list(built.glob("*/date=*/hour=*")))  # several files an hour

    result = compact(built, min_age_s=0)

    assert result.files_in == len(before_files) and not any(p.error for p in result.partitions)
    partitions = list(built.glob("*/date=*/hour=*"))
    assert result.files_out == len(partitions) == len(_files(built) + _files(built, "logs"))
    assert {table: _raw(built, table) for table in ("spans", "logs")} == before
    assert _views(built) == views and views["trajectories"]
    for path in _files(built):
        names = compacted_from(path)
        assert names and all(not (path.parent / name).exists() for name in names)
        table = pq.read_table(path, partitioning=None)
        keys = list(zip(*(table[c].to_pylist() for c in ("session_id", "trace_id", "start_time")), strict=True))
        present = [k for k in keys if k[0] is not None]
        assert present == sorted(present) and keys[: len(present)] == present  # sorted, nulls last
        meta = pq.read_metadata(path)
        assert all(meta.row_group(i).num_rows <= ROW_GROUP_ROWS for i in range(meta.num_row_groups))


def test_a_session_lookup_is_the_same_after_compaction(built: Path) -> None:
    con = open_lake(built)
    sessions = [r[0] for r in con.execute("SELECT DISTINCT session_id FROM sessions ORDER BY 1 LIMIT 5").fetchall()]
    assert sessions
    before = {s: session_lookup(con, s, "turns").sort_by("trace_id").to_pylist() for s in sessions}
    compact(built, min_age_s=0)
    con = open_lake(built)
    assert {s: session_lookup(con, s, "turns").sort_by("trace_id").to_pylist() for s in sessions} == before


def test_a_second_run_does_nothing_and_a_late_file_is_merged_on_the_next(built: Path) -> None:
    compact(built, min_age_s=0)
    compacted = _files(built)
    again = compact(built, min_age_s=0)
    assert again.partitions == [] and _files(built) == compacted

    # a span that arrives late for an hour already compacted
    before = _raw(built)
    late = pq.read_table(compacted[0], partitioning=None).slice(0, 1)
    late = late.set_column(late.schema.get_field_index("span_id"), "span_id", pa.array(["00000000000000aa"]))
    write_table_atomically(late.replace_schema_metadata(None).cast(SPAN_SCHEMA), compacted[0].parent)
    assert len(list(compacted[0].parent.glob("*.parquet"))) == 2
    third = compact(built, min_age_s=0)
    assert [(p.files_in, p.files_out) for p in third.partitions] == [(2, 1)]
    assert len(list(compacted[0].parent.glob("*.parquet"))) == 1
    assert len(_raw(built)) == len(before) + 1


def test_open_hours_are_left_alone(built: Path) -> None:
    hours = sorted(built.glob("spans/date=*/hour=*"))
    # the clock just after the second-to-last hour ended: only the hours before it are closed enough
    result = compact(built, min_age_s=600, now=dt_end(hours[-2]) + 600)
    done = {p.partition for p in result.partitions if p.table == "spans"}
    assert done == {str(h.relative_to(built / "spans")) for h in hours[:-1]}
    assert all(compacted_from(p) is None for p in hours[-1].glob("*.parquet"))
    assert f"spans/{hours[-1].relative_to(built / 'spans')}" in result.too_young  # said, not silent
    assert not any(t.startswith("spans/") and t != f"spans/{hours[-1].relative_to(built / 'spans')}"
                   for t in result.too_young)  # fmt: skip


def test_min_age_0_says_it_left_the_current_hour(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tracevals.cli import main
    from tracevals.lake.writer import LakeWriter

    lake = tmp_path / "lake"
    now = time.time_ns()
    LakeWriter(lake).write_rows([{"trace_id": "0" * 31 + "1", "span_id": "0" * 15 + "1", "name": "s",
                                  "start_time": now, "end_time": now}])  # fmt: skip
    result = CliRunner().invoke(main, ["compact", "--lake", str(lake), "--min-age", "0"])
    assert result.exit_code == 0, result.output
    (hour,) = [str(p.relative_to(lake)) for p in lake.glob("spans/date=*/hour=*")]
    assert (
        f"left 1 partitions that ended less than --min-age 0 ago (an hour is compacted once it has ended): {hour}"
        in (" ".join(result.stderr.split()))
    )


def dt_end(partition: Path) -> float:
    import datetime as dt

    start = dt.datetime.fromisoformat(f"{partition.parent.name[5:]}T{partition.name[5:]}:00:00+00:00")
    return start.timestamp() + 3600


def test_a_crash_between_commit_and_delete_is_finished_by_the_next_run(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _raw(built)
    views = _views(built, ("spans", "logs", "trajectories", "sessions"))
    real_unlink = Path.unlink
    calls = {"n": 0}

    def crash_after_two(self: Path, missing_ok: bool = False) -> None:
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt("power cut")
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", crash_after_two)
    with pytest.raises(KeyboardInterrupt):
        compact(built, min_age_s=0)
    monkeypatch.setattr(Path, "unlink", real_unlink)
    # the committed file and the rest of the files it holds are both there: rows twice on disk ...
    assert len(_raw(built)) > len(before)
    assert _views(built, tuple(views)) == views  # ... which the views count once
    result = compact(built, min_age_s=0)
    assert sum(p.leftovers_removed for p in result.partitions) >= 1
    assert _raw(built) == before and _views(built, tuple(views)) == views
    assert not list(built.rglob(".compact-*"))


def test_files_too_big_for_one_group_become_several_sorted_files(built: Path) -> None:
    before = _raw(built)
    partition = max(built.glob("spans/date=*/hour=*"), key=lambda d: len(list(d.glob("*.parquet"))))
    sources = len(list(partition.glob("*.parquet")))
    compact(built, min_age_s=0, group_bytes=1)  # every file a group of its own
    assert len(list(partition.glob("*.parquet"))) == sources
    assert all(compacted_from(p) for p in partition.glob("*.parquet"))
    assert _raw(built) == before
    assert compact(built, min_age_s=0, group_bytes=1).partitions == []  # and stays so


def test_columns_an_older_file_lacks_are_null_and_unknown_columns_are_kept(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    ingest_doc(lake, fixture_doc("genai_current"))
    [path] = _files(lake)
    table = pq.read_table(path, partitioning=None)
    old = table.drop_columns(["tool_effect"]).append_column("from_the_future", pa.array(["x"] * table.num_rows))
    write_table_atomically(old.replace_schema_metadata(None), path.parent)  # an older writer's file
    write_table_atomically(old.replace_schema_metadata(None), path.parent)
    path.unlink()  # no file of the hour has tool_effect
    compact(lake, min_age_s=0)
    [merged] = _files(lake)
    out = pq.read_table(merged, partitioning=None)
    assert out.num_rows == 2 * table.num_rows
    assert out.schema.names[: len(SPAN_SCHEMA)] == SPAN_SCHEMA.names
    assert out["from_the_future"].to_pylist() == ["x"] * out.num_rows
    assert out["tool_effect"].null_count == out.num_rows
    kept = out.drop_columns(["tool_effect", "from_the_future"]).to_pylist()
    assert sorted(kept, key=repr) == sorted(table.drop_columns(["tool_effect"]).to_pylist() * 2, key=repr)


def test_the_compacted_file_keeps_its_newest_sources_time_for_live_scoring(built: Path) -> None:
    partition = max(built.glob("spans/date=*/hour=*"), key=lambda d: len(list(d.glob("*.parquet"))))
    newest = max(p.stat().st_mtime for p in partition.glob("*.parquet"))
    time.sleep(0.05)
    compact(built, min_age_s=0)
    [merged] = partition.glob("*.parquet")
    assert merged.stat().st_mtime == newest
    assert MARKER in (pq.read_metadata(merged).metadata or {})


def test_a_second_compaction_waits_and_a_killed_runs_temporary_files_go_whatever_their_age(built: Path) -> None:
    fd = os.open(built / ".compact.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(CompactError, match="another compaction"):
            compact(built, min_age_s=0)
    finally:
        os.close(fd)
    partition = next(built.glob("spans/date=*/hour=*"))
    # Two leftovers of killed compactions: one a day old, one from a second ago. The lock is held while they
    # are removed, so neither can be a running compaction's; both go (they used to stay for an hour).
    old, fresh = partition / ".compact-part-1.parquet.tmp", partition / ".compact-part-2.parquet.tmp"
    old.write_bytes(b"half a file")
    fresh.write_bytes(b"a killed run's half file")
    os.utime(old, (time.time() - 86400,) * 2)
    # and a derived table a killed `tracevals compact` was writing (it derives under the same lock)
    derived = built / DERIVED_DIR / "date=2026-01-01" / "hour=00" / ".calls-x.parquet.0123456789ab.tmp"
    derived.parent.mkdir(parents=True)
    derived.write_bytes(b"half a derived table")
    seen: list[bool] = []
    result = compact(built, min_age_s=0, then=lambda: seen.append(derived.exists()))
    assert result.stale_removed == 3 and not old.exists() and not fresh.exists() and not derived.exists()
    assert seen == [False]  # what else a compaction writes runs once, under the lock, after the sweep


def test_an_unreadable_file_leaves_its_hour_alone_and_says_which(built: Path) -> None:
    partition = max(built.glob("spans/date=*/hour=*"), key=lambda d: len(list(d.glob("*.parquet"))))
    files = sorted(partition.glob("*.parquet"))
    (partition / "part-9-broken.parquet").write_bytes(b"PAR1 half a file")
    result = compact(built, min_age_s=0)
    [failed] = [p for p in result.partitions if p.error]
    assert "part-9-broken.parquet is not a readable Parquet file" in failed.error and failed.files_out == 0
    assert sorted(partition.glob("*.parquet")) == sorted([*files, partition / "part-9-broken.parquet"])
    assert all(p.files_out for p in result.partitions if not p.error)  # the other hours are done


def test_the_compact_command(built: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tracevals.cli import main

    before = _raw(built)
    dry = CliRunner().invoke(main, ["compact", "--lake", str(built), "--min-age", "0", "--dry-run", "--format", "json"])
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.stdout)
    assert planned and all(row["files_out"] == 0 for row in planned) and _raw(built) == before
    run = CliRunner().invoke(main, ["compact", "--lake", str(built), "--min-age", "0s", "--format", "json"])
    assert run.exit_code == 0, run.output
    rows = json.loads(run.stdout)
    assert [(r["table"], r["partition"], r["files_in"]) for r in rows] == [
        (r["table"], r["partition"], r["files_in"]) for r in planned
    ]
    assert _raw(built) == before
    missing = CliRunner().invoke(main, ["compact", "--lake", str(tmp_path / "nope")])
    assert missing.exit_code == 1 and "is not a directory" in missing.output
    # an object-store lake is compacted too (tests/test_lake_object_storage.py); one it cannot reach is one line
    remote = CliRunner().invoke(main, ["compact", "--lake", "nosuch://bucket/lake"])
    assert remote.exit_code == 1 and "cannot open a nosuch:// URL" in remote.output
    assert len(remote.output.strip().splitlines()) == 1
    bad = CliRunner().invoke(main, ["compact", "--lake", str(built), "--min-age", "soon"])
    assert bad.exit_code == 2 and "not a duration" in bad.output


def test_a_foreign_merge_marker_leaves_its_hour_alone_and_says_which(built: Path) -> None:
    """A file whose footer has tracevals' merge key but no list of names under it (a foreign writer, a
    hostile file): the hour is left alone with one line naming it, as for an unreadable file; the other hours
    are compacted. Readers of the lake read every file of that hour (`superseded`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tracevals.lake.retention import MARKER

    partition = max(built.glob("spans/date=*/hour=*"), key=lambda d: len(list(d.glob("*.parquet"))))
    odd = partition / "part-9-odd.parquet"
    pq.write_table(pa.table({"trace_id": ["0" * 32]}).replace_schema_metadata({MARKER: b"5"}), odd)
    result = compact(built, min_age_s=0)
    [failed] = [p for p in result.partitions if p.error]
    assert "part-9-odd.parquet has a footer that is not tracevals'" in failed.error and failed.files_out == 0
    assert odd.exists() and all(p.files_out for p in result.partitions if not p.error)


def test_a_fifo_named_like_a_part_file_is_never_opened(built: Path) -> None:
    """A FIFO opened for reading blocks until something writes to it: compaction and readers must not open
    one (compaction did: it hung on its footer). Each runs in a thread, so that a hang fails the test."""
    import threading

    from click.testing import CliRunner

    from tracevals.cli import main

    partition = max(built.glob("spans/date=*/hour=*"), key=lambda d: len(list(d.glob("*.parquet"))))
    os.mkfifo(partition / "part-9-pipe.parquet")
    outcome: dict[str, Any] = {}

    def run() -> None:
        outcome["compacted"] = compact(built, min_age_s=0)
        query = ["sql", "--lake", str(built), "--format", "json", "select count(*) as n from spans"]
        outcome["sql"] = CliRunner().invoke(main, query)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "a FIFO in the lake blocked compaction or a reader"
    assert all(not p.error for p in outcome["compacted"].partitions) and outcome["compacted"].files_out
    sql = outcome["sql"]
    assert sql.exit_code == 0, sql.output
    assert json.loads(sql.stdout)[0]["n"] > 0
    # not a lake file (DuckDB's glob and the lake's listings read regular files only): no warning, left as is
    assert "unreadable" not in sql.stderr and (partition / "part-9-pipe.parquet").exists()


def test_a_reader_whose_files_a_compaction_deleted_ends_in_one_line(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tracevals score` lists the lake's files, then reads them; a compaction that merges their hours in
    between and deletes its inputs (its retention over: here 0) leaves it files that are gone. Found running
    `tracevals compact --retention 0` beside `tracevals score`: DuckDB's "No files found" traceback. Now one
    line that says what happened and what to do; run again, the command reads the merged files."""
    from click.testing import CliRunner

    import tracevals.scoring.offline as offline
    from tracevals.cli import main

    planned = offline.plan_groups

    def then_compacted(*args: Any, **kwargs: Any) -> Any:
        plan = planned(*args, **kwargs)
        assert compact(built, min_age_s=0, retention_s=0).files_in > 0  # what the plan lists is gone
        return plan

    monkeypatch.setattr(offline, "plan_groups", then_compacted)
    command = ["score", "--lake", str(built), "--summary", "--no-write", "--workers", "1"]
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 1, result.output
    assert "a file of the lake this command listed was removed while it ran" in result.output
    assert "a longer `tracevals compact --retention`" in result.output and "Traceback" not in result.output
    monkeypatch.setattr(offline, "plan_groups", planned)
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 0, result.output


def test_a_query_whose_files_a_compaction_deleted_says_so_in_its_line(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tracevals sql` (and the UI's SQL page, and a command's `lake_errors`) catch DuckDB's errors themselves, so
    the error handler's line for a file removed while the command ran (`vanished_file`) never reached them: `sql`
    said "query failed: IO Error: No files found that match the pattern ...". A lake a compaction left inputs in
    for its readers is read from the files its listing names (the others skipped); another compaction between the
    open and the query (`--retention 0`) removes some; the line now says what happened and what to do."""
    from click.testing import CliRunner

    import tracevals.cli.sql as sql_command
    from tracevals.cli import main
    from tracevals.cli.shared.output import lake_errors
    from tracevals.lake.unreadable import error_line, vanished_file

    assert compact(built, min_age_s=0, retention_s=600).files_in > 0  # inputs kept for readers: files named
    ingest_doc(built, moved(fixture_doc(DIALECTS[0]), 999, 1))  # a late file in a merged hour
    opened = sql_command.open_for_query

    def then_compacted(*args: Any, **kwargs: Any) -> Any:
        con = opened(*args, **kwargs)
        assert compact(built, min_age_s=0, retention_s=0).files_in > 0  # the hour merged again, its files gone
        return con

    monkeypatch.setenv("TRACEVALS_SNAPSHOT_MB", "0")  # the spans read from their files by the query itself
    monkeypatch.setattr(sql_command, "open_for_query", then_compacted)
    query = ["sql", "--lake", str(built), "select count(distinct name) from spans"]
    result = CliRunner().invoke(main, query)
    assert result.exit_code == 1, result.output
    assert "query failed: " in result.output and "Traceback" not in result.output
    assert "a file of the lake this command listed was removed while it ran" in result.output
    monkeypatch.setattr(sql_command, "open_for_query", opened)
    assert CliRunner().invoke(main, query).exit_code == 0  # run again: the merged files
    # the same line wherever a DuckDB error is caught and shown
    gone = built / "spans" / "date=2026-12-01" / "hour=07" / "part-1-c0ffee00.parquet"
    with pytest.raises(duckdb.IOException) as caught:
        duckdb.sql(f"SELECT * FROM '{gone}'")
    assert error_line(caught.value) == vanished_file(caught.value)
    with pytest.raises(Exception, match="a file of the lake this command listed was removed"), lake_errors(built, ()):
        raise caught.value
    assert error_line(duckdb.ParserException("syntax error at x\nLINE 1")) == "syntax error at x"
    # the same between the listing and the views an open computes: it blamed a view file ("view file
    # 24_message_parts.sql: IO Error: Cannot open file ...", `sql` beside `compact --retention 0`)
    import tracevals.queries.connection as connection

    ingest_doc(built, moved(fixture_doc(DIALECTS[1]), 998, 1))
    assert compact(built, min_age_s=0, retention_s=600).files_in > 0  # inputs kept again: files named
    ingest_doc(built, moved(fixture_doc(DIALECTS[2]), 997, 1))
    listed = connection.register_prices  # called after the files are listed, before the views are computed

    def compacted_after_listing(*args: Any, **kwargs: Any) -> Any:
        assert compact(built, min_age_s=0, retention_s=0).files_in > 0
        return listed(*args, **kwargs)

    monkeypatch.setattr(connection, "register_prices", compacted_after_listing)
    with pytest.raises(LakeError, match="a file of the lake this command listed was removed while it ran"):
        open_lake(built, views=("turns",))


def test_only_a_file_of_the_lakes_partitions_is_named_as_removed(tmp_path: Path) -> None:
    """A query that names a Parquet file that is not there gets DuckDB's own error, not the compaction's."""
    from tracevals.lake.unreadable import vanished_file

    def error(path: Path) -> Exception:
        with pytest.raises(duckdb.IOException) as caught:
            duckdb.sql(f"SELECT * FROM '{path}'")
        return caught.value

    assert vanished_file(error(tmp_path / "mine.parquet")) is None
    gone = tmp_path / "lake" / "spans" / "date=2026-12-01" / "hour=07" / "part-1-c0ffee00.parquet"
    assert (vanished_file(error(gone)) or "").startswith(f"{gone}: not found; a file of the lake this command")
