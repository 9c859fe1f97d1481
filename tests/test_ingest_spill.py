"""`tracevals ingest` holds what it read on disk, not in memory, until every file is checked (`writer.Spill`):
the files it writes are those one write of everything would give, and a bad file leaves nothing behind."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tracevals.cli import main
from tracevals.lake.schema import LOG_SCHEMA, LOGS_DIR, SPAN_SCHEMA, SPANS_DIR
from tracevals.lake.writer import ROW_GROUP_ROWS, LakeWriter, Spill

HOUR_NS = 3_600 * 10**9
BASE_NS = 498_888 * HOUR_NS  # 2026-11-29 21:00 UTC, on an hour


def _table(schema: pa.Schema, rows: int, seed: int) -> pa.Table:
    """`rows` rows of `schema` whose times fall in three hours, the hours mixed row by row (every batch of
    them crosses an hour), ids numbered: nothing else set."""
    rng = random.Random(seed)
    times = [BASE_NS + rng.randrange(3) * HOUR_NS + rng.randrange(HOUR_NS) for _ in range(rows)]
    time_column = "start_time" if schema is SPAN_SCHEMA else "time"
    columns = {}
    for field in schema:
        if field.name == time_column:
            columns[field.name] = pa.array(times, pa.int64()).cast(field.type)
        elif field.name in ("trace_id", "span_id"):
            columns[field.name] = pa.array([f"{field.name}-{seed}-{i:06d}" for i in range(rows)], field.type)
        elif field.name == "name":
            columns[field.name] = pa.array(["call"] * rows, field.type)
        else:
            columns[field.name] = pa.nulls(rows, field.type)
    return pa.table(columns, schema=schema)


def _files(lake: Path, table_name: str) -> dict[str, pq.ParquetFile]:
    return {
        p.parent.parent.name + "/" + p.parent.name: pq.ParquetFile(p) for p in (lake / table_name).rglob("*.parquet")
    }


@pytest.mark.parametrize(("schema", "table_name"), [(SPAN_SCHEMA, SPANS_DIR), (LOG_SCHEMA, LOGS_DIR)])
def test_spilled_rows_are_written_as_one_write_of_them_all(tmp_path: Path, schema: pa.Schema, table_name: str) -> None:
    # pieces of uneven sizes, one of several chunks: record batches that cross hours and row groups
    pieces = [_table(schema, n, seed) for seed, n in enumerate([5_000, 1, 13_000, 0, 9_999, 20_000])]
    pieces[2] = pa.concat_tables([pieces[2].slice(0, 6_000), pieces[2].slice(6_000)])
    whole = pa.concat_tables(pieces)
    LakeWriter(tmp_path / "once").write_table(whole, table_name)

    spill = Spill(tmp_path / "spill")
    (tmp_path / "spill").mkdir()
    for piece in pieces:
        spill.add(piece, table_name)
    writer = LakeWriter(tmp_path / "spilled")
    written = writer.write_spilled(spill, table_name)

    once, spilled = _files(tmp_path / "once", table_name), _files(tmp_path / "spilled", table_name)
    assert len(written) == len(spilled) == len(once) == 3 and writer.rows_written == whole.num_rows
    for hour, file in once.items():
        other = spilled[hour]
        assert other.read().equals(file.read()), hour  # the same rows, in the same order
        groups = [file.metadata.row_group(i).num_rows for i in range(file.metadata.num_row_groups)]
        assert [other.metadata.row_group(i).num_rows for i in range(other.metadata.num_row_groups)] == groups
        assert groups[0] == ROW_GROUP_ROWS


def test_each_spilled_record_batch_holds_one_hour(tmp_path: Path) -> None:
    # so that writing an hour reads only its own rows: an export over many hours in random order would
    # otherwise read every batch once per hour it holds
    spill = Spill(tmp_path)
    spill.add(_table(SPAN_SCHEMA, 30_000, seed=3), SPANS_DIR)
    spill.close()
    batches = pa.ipc.open_file(str(spill.path(SPANS_DIR))).read_all().to_batches()
    hours = [{t // HOUR_NS for t in b.column("start_time").cast(pa.int64()).to_pylist()} for b in batches]
    assert [h.pop() for h in hours if len(h) == 1] == spill.hours[SPANS_DIR]
    assert sum(b.num_rows for b in batches) == 30_000 and len(set(spill.hours[SPANS_DIR])) == 3


def _document(trace: str, start_ns: int) -> dict[str, object]:
    span = {
        "traceId": trace * 32,
        "spanId": "1" * 16,
        "name": "chat m",
        "kind": 3,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(start_ns + 10**9),
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}],
    }
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": [span]}]}]}


def test_a_bad_file_leaves_neither_rows_nor_what_was_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spills = tmp_path / "tmp"
    spills.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spills))  # where ingest keeps what it read
    good = [tmp_path / f"good{i}.json" for i in range(3)]
    for i, path in enumerate(good):
        path.write_text(json.dumps(_document("abc"[i], BASE_NS + i * HOUR_NS)))
    bad = tmp_path / "bad.json"
    bad.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 7}]}]}]}')
    lake = tmp_path / "lake"

    failed = CliRunner().invoke(main, ["ingest", "--lake", str(lake), *map(str, good), str(bad)])
    assert failed.exit_code == 1 and str(bad) in failed.output, failed.output
    assert not list(lake.rglob("*.parquet")) and not list(spills.iterdir())

    done = CliRunner().invoke(main, ["ingest", "--lake", str(lake), "--format", "json", *map(str, good)])
    assert done.exit_code == 0, done.output
    assert [(r["file"], r["spans"]) for r in json.loads(done.output)] == [(str(p), 1) for p in good]
    assert len(list((lake / "spans").rglob("*.parquet"))) == 3 and not list(spills.iterdir())


def test_a_full_temporary_disk_is_one_line_naming_tmpdir_and_the_lake_is_untouched(tmp_path: Path) -> None:
    """The rows read wait in TMPDIR; when that disk fills, the error names it and what to do (not the lake's
    advice for a full lake), nothing reaches the lake and nothing is left in TMPDIR. A real full disk: a 1 MiB
    tmpfs in a private mount namespace."""
    import os
    import subprocess

    from fixtures.faults import PYTHON_CLI, DiskNamespace, otlp_json_body

    if DiskNamespace.available():
        pytest.skip(DiskNamespace.available())
    export = tmp_path / "export.json"
    export.write_bytes(otlp_json_body(20_000, seed=3, value_bytes=40))  # ~8 MB of rows to spill
    disk = DiskNamespace(tmp_path / "tmp", 1)
    try:
        result = subprocess.run(
            [*disk.prefix, *PYTHON_CLI, "ingest", "--lake", str(tmp_path / "lake"), str(export)],
            env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
            capture_output=True,
            text=True,
            timeout=300,
        )
        left = sorted(p.name for p in disk.path(tmp_path / "tmp").iterdir())
    finally:
        disk.close()
    assert result.returncode == 1, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: no room left in {tmp_path / 'tmp'} for the rows read"), line
    assert "set TMPDIR" in line and "Nothing was written to the lake" in line and "compact" not in line, line
    assert not list((tmp_path / "lake").rglob("*.parquet")) and left == []


@pytest.mark.parametrize(("stop", "sigint"), [("SIGTERM", "default"), ("SIGTERM", "ignored"), ("SIGHUP", "default")])
def test_sigterm_unwinds_ingest_and_leaves_no_temporary_rows(tmp_path: Path, stop: str, sigint: str) -> None:
    """SIGTERM (a process manager, `timeout`, CI cancelling a job) used to end `ingest` on the spot, leaving
    the rows it had read in TMPDIR (88 MB after 2 s of a 40-file export). It unwinds like Ctrl-C now: the
    temporary folder is removed, nothing reaches the lake, one line, exit 143. The export's last file is a
    FIFO nobody writes to, so the signal lands while `ingest` is inside its temporary folder. "ignored":
    started as a shell's background job (`tracevals ingest ... &`), which ignores SIGINT; SIGTERM was then
    left to Python's default too (seen on CI, whose runner starts the suite that way). SIGHUP (the terminal
    closed) is taken the same way: exit 129."""
    import os
    import signal
    import subprocess

    from fixtures.faults import PYTHON_CLI, otlp_json_body, stop_with, until

    (tmp_path / "tmp").mkdir()
    first = tmp_path / "a.json"
    first.write_bytes(otlp_json_body(2_000, seed=4))
    fifo = tmp_path / "b.json"
    os.mkfifo(fifo)

    def dispositions() -> None:
        """Set here, not inherited from whatever started the test run (`nohup` ignores SIGHUP, a shell's
        background job SIGINT): the stopping signal as a terminal leaves it, SIGINT as the case says."""
        signal.signal(signal.Signals[stop], signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN if sigint == "ignored" else signal.SIG_DFL)

    proc = subprocess.Popen(
        [*PYTHON_CLI, "ingest", "--lake", str(tmp_path / "lake"), str(first), str(fifo)],
        env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=dispositions,
    )
    try:
        # its own folder, not any file: `tempfile` probes TMPDIR with a short-lived file of its own at start
        folder = lambda: any(p.name.startswith("tracevals-ingest-") for p in (tmp_path / "tmp").iterdir())  # noqa: E731
        assert until(folder, timeout=120), "ingest never made its folder"
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    err = stop_with(proc, stop)
    assert err.strip().splitlines() == [f"Aborted! ({stop})"], err
    assert list((tmp_path / "tmp").iterdir()) == []
    assert not list((tmp_path / "lake").rglob("*.parquet"))
