"""What readers and compaction promise each other (`tracevals.lake.retention`): a reader never fails because
a file it listed was merged (the merged inputs stay for a retention period), and two compactions never lose
or duplicate a row (a file some footer names is never merged again; compactions exclude each other, on
local disk with a lock file and on S3 with a lease)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import duckdb
import pytest
from fixtures.s3 import S3, s3  # noqa: F401  (the fixture)

from tracevals.lake.compact import COMPACTED_NAME, CompactError, compact, compacted_from
from tracevals.lake.lake import Lake
from tracevals.lake.retention import deletable
from tracevals.lake.writer import LakeWriter
from tracevals.queries import open_lake

HOUR_NS = 3600 * 10**9


def _write(lake: str | Path, hours: int = 2, files: int = 3, spans: int = 5, first: int = 0) -> int:
    """`files` files in each of `hours` hours (ended hours ago), `spans` spans each; the spans written."""
    writer = LakeWriter(lake)
    start = (time.time_ns() // HOUR_NS - hours - 2) * HOUR_NS
    n = first
    for h in range(hours):
        for _ in range(files):
            rows = []
            for _ in range(spans):
                n += 1
                at = start + h * HOUR_NS + n * 1000
                rows.append({"trace_id": f"{n:032x}", "span_id": f"{n:016x}", "name": "s", "start_time": at,
                             "end_time": at + 10, "kind": "llm", "session_id": f"s{n % 4}"})  # fmt: skip
            writer.write_rows(rows)
    return n - first


def _parquet(lake: Path) -> list[Path]:
    return sorted((lake / "spans").rglob("*.parquet"))


def _live(lake: Path) -> list[Path]:
    """The files no merged file names: what holds every row exactly once."""
    files = _parquet(lake)
    named = {n for f in files for n in compacted_from(f) or ()}
    return [f for f in files if f.name not in named]


def _rows(paths: list[Path]) -> list[tuple[str, str]]:
    con = duckdb.connect()
    return sorted(con.execute(f"SELECT trace_id, span_id FROM read_parquet({[str(p) for p in paths]})").fetchall())


def test_merged_inputs_stay_for_readers_then_go(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    written = _write(lake)
    before = _parquet(lake)
    con = duckdb.connect()  # a reader that listed the files before the merge
    con.execute(f"CREATE VIEW listed AS SELECT * FROM read_parquet({[str(p) for p in before]})")

    first = compact(lake, min_age_s=0, retention_s=30)
    assert first.files_in == len(before) == 6 and first.files_out == 2
    assert first.kept_for_readers == len(before) and all(p.exists() for p in before)
    assert con.execute("SELECT count(*) FROM listed").fetchone() == (written,)  # it reads them all still
    assert open_lake(lake).execute("SELECT count(*) FROM spans").fetchone() == (written,)  # views count once
    assert len(_rows(_live(lake))) == written == len(set(_rows(_live(lake))))

    again = compact(lake, min_age_s=0, retention_s=30)  # not merged twice, not deleted before their time
    assert again.files_in == 0 and again.kept_for_readers == len(before) and all(p.exists() for p in before)
    assert len(_rows(_live(lake))) == written

    time.sleep(0.6)
    later = compact(lake, min_age_s=0, retention_s=0.5)  # their retention has passed
    assert sum(p.leftovers_removed for p in later.partitions) == len(before) and later.kept_for_readers == 0
    assert not any(p.exists() for p in before) and len(_parquet(lake)) == 2
    assert _rows(_parquet(lake)) == _rows(_live(lake)) and len(_rows(_parquet(lake))) == written


def test_without_retention_a_reader_that_listed_the_files_fails(tmp_path: Path) -> None:
    """The failure the retention prevents (what two `tracevals run` on one lake hit)."""
    lake = tmp_path / "lake"
    _write(lake, hours=1)
    con = duckdb.connect()
    con.execute(f"CREATE VIEW listed AS SELECT * FROM read_parquet({[str(p) for p in _parquet(lake)]})")
    compact(lake, min_age_s=0, retention_s=0)
    with pytest.raises(duckdb.Error):
        con.execute("SELECT count(*) FROM listed").fetchall()


def test_a_chain_of_merges_keeps_every_row_once_and_unwinds_from_the_oldest_end(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    written = _write(lake, hours=1, files=2)
    compact(lake, min_age_s=0, retention_s=30)
    late = _write(lake, hours=1, files=1, first=10_000)  # a late file for the hour already merged
    compact(lake, min_age_s=0, retention_s=30)  # the merged file and the late one, merged again
    assert len(_rows(_live(lake))) == written + late == len(set(_rows(_live(lake))))
    # the middle link of the chain is due before its own inputs are gone: it waits for them
    marks = {f.name: compacted_from(f) for f in _parquet(lake)}
    merged_once = next(n for n, m in marks.items() if m and not any(x in marks and marks[x] for x in m))
    stamps = {n: (0.0 if n == merged_once else 1e12) for n in marks}  # the first merge: very old
    gone, _ = deletable(marks, stamps, time.time(), 30)
    assert gone == set(marks[merged_once] or ())  # only the first inputs, not the merged file naming them
    time.sleep(0.3)
    compact(lake, min_age_s=0, retention_s=0.2)
    assert len(_parquet(lake)) == 1 and len(_rows(_parquet(lake))) == written + late


def test_the_end_of_run_merge_also_finishes_due_deletions_in_other_hours(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    _write(lake, hours=2)
    compact(lake, min_age_s=0, retention_s=0.2)  # both hours merged; their inputs kept a moment
    assert len(_parquet(lake)) == 8
    time.sleep(0.3)
    # a run's merge of its own (recent) hours only: the older hours' due inputs go as well (the notes)
    compact(lake, min_age_s=-3600, since=time.time() - 600, retention_s=0.2)
    assert len(_parquet(lake)) == 2


def test_two_compactions_at_once_never_lose_or_duplicate_a_row_on_s3(s3: S3) -> None:  # noqa: F811
    lake = s3.lake("two")
    written = _write(lake, hours=2, files=4)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            compact(lake, min_age_s=0, retention_s=30, wait_s=60)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    keys = [k for k in s3.keys("two/spans/") if k.endswith(".parquet")]
    merged = [k for k in keys if COMPACTED_NAME.search(k)]
    assert len(merged) == 2  # one per hour: the second compaction found the work done
    con = open_lake(lake)
    assert con.execute("SELECT count(*), count(DISTINCT span_id) FROM spans").fetchone() == (written, written)
    assert not [k for k in s3.keys("two/leases/") if k.endswith(".json")]  # the compaction lease given back


def test_a_second_compaction_on_s3_is_refused_in_one_line_when_it_will_not_wait(s3: S3) -> None:  # noqa: F811
    from tracevals.lake.leases import Lease

    lake = s3.lake("busy")
    _write(lake, hours=1)
    busy = r"another compaction of s3://.* is running \(host .*\); wait"
    with (
        Lease(Lake.open(lake), "compaction", "lake", "tracevals compact").acquire(),
        pytest.raises(CompactError, match=busy),
    ):
        compact(lake, min_age_s=0)


def test_a_reader_of_an_s3_lake_that_listed_before_a_merge_reads_every_row(s3: S3) -> None:  # noqa: F811
    lake = s3.lake("reader")
    written = _write(lake, hours=1)
    con = open_lake(lake, materialize=False)  # its datasets hold the listing made now
    compact(lake, min_age_s=0)  # the default retention
    assert con.execute("SELECT count(*) FROM spans").fetchone() == (written,)


def _read_files(lake: str | Path, **kw: object) -> tuple[set[str], int]:
    """The files a reader opened after the listing (`raw_spans`' source files) and the rows it read."""
    con = open_lake(lake, materialize=False, **kw)  # type: ignore[arg-type]
    [(rows,)] = con.execute("SELECT count(*) FROM raw_spans").fetchall()
    files = con.execute("SELECT DISTINCT source_file FROM raw_spans").fetchall()
    return {str(f).rpartition("/")[2] for (f,) in files}, rows


def test_a_reader_that_lists_after_a_merge_reads_the_merged_files_alone(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    written = _write(lake, hours=2)
    before = _parquet(lake)
    assert _read_files(lake) == ({p.name for p in before}, written)
    compact(lake, min_age_s=0, retention_s=30)  # the inputs stay for readers that listed them
    merged = {p.name for p in _parquet(lake) if compacted_from(p)}
    assert len(merged) == 2 and all(p.exists() for p in before)
    assert _read_files(lake) == (merged, written)  # every row once, from 2 files, not 8 files and 2x the rows
    hour = sorted((lake / "spans").glob("date=*/hour=*"))[-1]
    day, h = hour.parent.name[5:], int(hour.name[5:])
    in_hour = {p.name for p in hour.glob("*.parquet") if compacted_from(p)}
    assert _read_files(lake, since=f"{day}T{h:02d}", until=f"{day}T{h:02d}") == (in_hour, written // 2)
    listed = [i.base_name for i in Lake.open(lake).list_parquet("spans")]  # every listing of the lake
    assert sorted(listed) == sorted(merged)
    assert len(Lake.open(lake).list_parquet("spans", replaced=True)) == 8  # compaction's: every file
    # a late file for a merged hour is read beside the merged file, and a merge of both (a chain) alone
    late = _write(lake, hours=1, files=1, first=10_000)
    names, rows = _read_files(lake)
    assert rows == written + late and len(names) == 3
    compact(lake, min_age_s=0, retention_s=30)
    names, rows = _read_files(lake)
    assert rows == written + late and len(names) == 2 and all(COMPACTED_NAME.search(n) for n in names)


def test_a_merged_file_that_cannot_be_read_leaves_its_inputs_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = tmp_path / "lake"
    written = _write(lake, hours=1)
    inputs = {p.name for p in _parquet(lake)}
    compact(lake, min_age_s=0, retention_s=30)
    [merged] = [p for p in _parquet(lake) if compacted_from(p)]
    merged.write_bytes(merged.read_bytes()[:-100])  # a copy cut short
    assert _read_files(lake) == (inputs, written)
    assert f"skipped 1 unreadable lake files: {merged}" in capsys.readouterr().err


def test_a_merged_input_that_cannot_be_read_is_not_looked_at(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reader reads the merged file alone: an input kept beside it for earlier readers is not opened, so a
    damaged one neither warns nor costs (a lake of 50 runs' merges kept 1,353 inputs, each opened to check
    its Parquet magic on every listing); a damaged file the reader does read is still said."""
    lake = tmp_path / "lake"
    written = _write(lake, hours=1)
    inputs = _parquet(lake)
    compact(lake, min_age_s=0, retention_s=30)
    [merged] = [p for p in _parquet(lake) if compacted_from(p)]
    inputs[0].write_bytes(inputs[0].read_bytes()[:-100])  # a kept input cut short
    assert _read_files(lake) == ({merged.name}, written)
    assert "unreadable" not in capsys.readouterr().err
    late = _write(lake, hours=1, files=1, first=10_000)  # a file the reader reads, beside the merged one
    [new] = [p for p in _parquet(lake) if p not in inputs and p != merged]
    new.write_bytes(new.read_bytes()[:-100])
    assert _read_files(lake) == ({merged.name}, written) and late > 0
    assert f"skipped 1 unreadable lake files: {new}" in capsys.readouterr().err


def test_a_reader_of_an_s3_lake_that_lists_after_a_merge_reads_the_merged_files_alone(s3: S3) -> None:  # noqa: F811
    lake = s3.lake("after")
    written = _write(lake, hours=2)
    compact(lake, min_age_s=0, retention_s=30)
    keys = [k for k in s3.keys("after/spans/") if k.endswith(".parquet")]
    merged = {k.rpartition("/")[2] for k in keys if COMPACTED_NAME.search(k)}
    assert len(keys) == 8 and len(merged) == 2
    assert _read_files(lake) == (merged, written)


def test_a_file_named_like_a_merge_that_is_none_replaces_nothing(tmp_path: Path) -> None:
    """A writer's file that happens to end like a merged file (`-c<8 hex>`), its footer naming nothing: every
    file is read."""
    lake = tmp_path / "lake"
    written = _write(lake, hours=1)
    first, *_ = _parquet(lake)
    first.rename(first.with_name(first.name.replace(".parquet", "-cdeadbeef.parquet")))
    names, rows = _read_files(lake)
    assert rows == written and len(names) == 3 and any(n.endswith("-cdeadbeef.parquet") for n in names)


@pytest.mark.parametrize("where", ["local", "s3"])
def test_files_named_before_a_merge_are_read_after_it(
    where: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A reader that chose files from an earlier listing (a scoring group's files, read by name) reads them
    even once a merge has replaced them: what a run scoring its attempts beside another run's merge needs."""
    from tracevals.queries.sources import files_sql

    lake: str | Path = tmp_path / "lake" if where == "local" else request.getfixturevalue("s3").lake("named")
    written = _write(lake, hours=1)
    opened = Lake.open(lake)
    names = [opened.name_of(i.path) for i in opened.list_parquet("spans")]  # the group's files, listed now
    compact(lake, min_age_s=0, retention_s=30)  # a merge replaces them (kept for readers that listed them)
    assert not {opened.name_of(i.path) for i in opened.list_parquet("spans")} & set(names)
    con = duckdb.connect()
    [(rows,)] = con.execute(f"SELECT count(*) FROM ({files_sql(con, opened, 'spans', names)})").fetchall()
    assert rows == written


@pytest.mark.parametrize("value", [b"5", b'{"a": 1}', b"not json", b"null", b'"x.parquet"'])
def test_a_footer_marker_that_is_not_a_list_of_names_replaces_nothing(value: bytes) -> None:
    """A file named like a merge whose footer marker is not a JSON list (a foreign writer, a hostile file):
    nothing is left out, as for an unreadable footer; before, a number or an object raised a TypeError out
    of every reader of the lake."""
    from tracevals.lake.retention import MARKER, superseded

    paths = ["spans/date=2026-12-04/hour=10/a.parquet", "spans/date=2026-12-04/hour=10/b-c0123abcd.parquet"]
    assert superseded(paths, lambda _path: {MARKER: value}) == set()
    good = {MARKER: b'["a.parquet"]'}
    assert superseded(paths, lambda _path: good) == {paths[0]}


def test_a_chain_of_merges_is_read_from_its_newest_footer_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each `tracevals run` merges its hour at its end, the previous merge again with its own files: fifty runs
    in ten minutes left a chain of fifty merged files, and every reader read fifty footers to learn which files
    they replaced. A merged file's footer now lists everything of its partition it holds (`COMPLETE`): the
    reader reads the newest footer and none it names; the rows are read once, as before."""
    from tracevals.lake.retention import COMPLETE, MARKER

    lake = tmp_path / "lake"
    written = _write(lake, hours=1, files=2)
    for run in range(1, 5):  # four more runs' files in the hour, each merged with the hour's merge at its end
        compact(lake, min_age_s=0, retention_s=600)
        written += _write(lake, hours=1, files=1, first=1000 * run)
    compact(lake, min_age_s=0, retention_s=600)
    merged = [p for p in _parquet(lake) if compacted_from(p)]
    assert len(merged) == 5 and len(_parquet(lake)) == 5 + 2 + 4
    newest = max(merged, key=lambda p: len(compacted_from(p) or ()))
    assert set(compacted_from(newest) or ()) == {p.name for p in _parquet(lake)} - {newest.name}
    read: list[str] = []
    footer = Lake.footer_metadata

    def counted(self: Lake, path: str) -> dict[bytes, bytes] | None:
        read.append(path)
        return footer(self, path)

    monkeypatch.setattr(type(Lake.open(lake)), "footer_metadata", counted)
    assert [i.base_name for i in Lake.open(lake).list_parquet("spans")] == [newest.name]
    assert read == [str(newest)]
    assert _read_files(lake) == ({newest.name}, written)
    meta = Lake.open(lake).footer_metadata(str(newest)) or {}
    assert meta.get(COMPLETE) == b"1" and MARKER in meta


def test_a_list_that_is_not_complete_has_every_merged_footer_read() -> None:
    """A lake merged before the lists were complete (or by another writer): every merged footer is read, and
    the inputs of a merged file a newer one replaced are left out as before; a complete list skips only the
    merged files it names (two merges of one hour side by side are both read)."""
    from tracevals.lake.retention import COMPLETE, MARKER, holds, superseded

    folder = "spans/date=2026-12-04/hour=10"
    names = ["a", "b", "b-c00000001", "c", "c-c00000002", "d", "d-c00000003"]
    paths = [f"{folder}/{n}.parquet" for n in names]
    old = {"b-c00000001": ["a.parquet", "b.parquet"], "c-c00000002": ["b-c00000001.parquet", "c.parquet"]}
    read: list[str] = []

    def footers(complete: bool) -> dict[str, dict[bytes, bytes]]:
        marks = {f"{n}.parquet": [*m] for n, m in old.items()}
        if complete:  # as a merge writes them now: what each holds, through the merges it replaced
            marks = {n: holds(m, {**marks, **{f"{x}.parquet": None for x in "abcd"}}) for n, m in marks.items()}
        found = {n: {MARKER: repr(m).replace("'", '"').encode(), **({COMPLETE: b"1"} if complete else {})}
                 for n, m in marks.items()}  # fmt: skip
        found["d-c00000003.parquet"] = {MARKER: b'["d.parquet"]', COMPLETE: b"1"}  # a merge beside the chain
        return found

    for complete in (False, True):
        meta = footers(complete)
        read.clear()
        gone = superseded(paths, lambda path, meta=meta: read.append(path) or meta[path.rpartition("/")[2]])
        assert gone == {f"{folder}/{n}.parquet" for n in ("a", "b", "b-c00000001", "c", "d")}
        assert len(read) == (2 if complete else 3)
    assert holds(["x.parquet", "m.parquet"], {"m.parquet": ["y.parquet", "gone.parquet"], "y.parquet": None}) == [
        "x.parquet",
        "m.parquet",
        "y.parquet",
    ]  # what the partition still has: a name deleted since is not carried on
