"""What `tracevals ingest` reads besides one OTLP/JSON document a file: JSON Lines (the OTLP file exporter's
format, one TracesData or LogsData document a line, which the Collector's `file` exporter writes) and
compressed files (gzip, zstd, bz2: by their first bytes, whatever their names). Each gives the lake the rows
its documents give read one by one, on the fast path and on the validating one; a bad line is one error
naming the line, and nothing is written."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from click.testing import CliRunner

from tracevals.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "otlp"
DOCUMENTS = ["genai_current.json", "genai_legacy.json", "openinference.json", "openllmetry.json"]


def _rows(lake: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every span and log row of the lake, in a stable order, without the columns that name the file."""
    out = {}
    for table in ("spans", "logs"):
        files = list((lake / table).rglob("*.parquet"))
        if not files:
            out[table] = []
            continue
        relation = duckdb.read_parquet([str(p) for p in files])
        columns = [c for c in relation.columns if c not in ("source_file", "date", "hour")]
        out[table] = sorted(map(repr, relation.select(", ".join(f'"{c}"' for c in columns)).fetchall()))
    return out


def _ingest(lake: Path, *files: Path, fast: bool = True, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TRACEVALS_INGEST_FAST", "1" if fast else "0")
    return CliRunner().invoke(main, ["ingest", "--lake", str(lake), "--format", "json", *map(str, files)])


def _lines(documents: list[str]) -> bytes:
    """The documents as JSON Lines: each on one line, as the file exporter writes them."""
    return b"".join(json.dumps(json.loads((FIXTURES / d).read_text())).encode() + b"\n" for d in documents)


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "validating"])
def test_json_lines_and_compressed_files_give_the_rows_of_their_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    alone = _ingest(tmp_path / "alone", *(FIXTURES / d for d in DOCUMENTS), fast=fast, monkeypatch=monkeypatch)
    assert alone.exit_code == 0, alone.output
    lines = tmp_path / "traces.jsonl"
    lines.write_bytes(_lines(DOCUMENTS))
    assert _ingest(tmp_path / "lines", lines, fast=fast, monkeypatch=monkeypatch).exit_code == 0
    assert _rows(tmp_path / "lines") == _rows(tmp_path / "alone")

    # compressed, under names that do not say so, and a gzip of protobuf under a .pb.gz name
    (tmp_path / "a.json").write_bytes(gzip.compress(_lines(DOCUMENTS[:2])))
    (tmp_path / "b.json").write_bytes(bz2.compress((FIXTURES / DOCUMENTS[2]).read_bytes()))
    zstd = tmp_path / "c.json.zst"
    with pa.CompressedOutputStream(str(zstd), "zstd") as out:
        out.write((FIXTURES / DOCUMENTS[3]).read_bytes())
    result = _ingest(tmp_path / "packed", tmp_path / "a.json", tmp_path / "b.json", zstd, fast=fast,
                     monkeypatch=monkeypatch)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [r["format"] for r in json.loads(result.output)] == ["otlp-json lines", "otlp-json", "otlp-json"]
    assert _rows(tmp_path / "packed") == _rows(tmp_path / "alone")


def test_a_pretty_printed_document_is_one_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(json.loads((FIXTURES / DOCUMENTS[1]).read_text()), indent=2))
    result = _ingest(tmp_path / "lake", pretty, monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    assert [(r["format"], r["spans"], r["logs"]) for r in json.loads(result.output)] == [("otlp-json", 11, 2)]


def test_a_line_the_fast_path_leaves_sends_the_whole_file_the_other_way_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file is taken by the fast path only if every one of its lines is: one line it leaves (int64s as
    numbers and as strings in one document) sends the file to the validating path, and no row is kept twice."""
    doc = json.loads((FIXTURES / DOCUMENTS[0]).read_text())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["startTimeUnixNano"] = int(spans[0]["startTimeUnixNano"])  # the others stay strings
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(_lines(DOCUMENTS[1:3]) + json.dumps(doc).encode() + b"\n")
    result = _ingest(tmp_path / "lake", mixed, monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    ((n,),) = duckdb.sql(f"select count(*) from read_parquet('{tmp_path / 'lake'}/spans/**/*.parquet')").fetchall()
    expected = sum(
        len(s["spans"])
        for d in DOCUMENTS[:3]
        for r in json.loads((FIXTURES / d).read_text())["resourceSpans"]
        for s in r["scopeSpans"]
    )
    assert n == expected and json.loads(result.output)[0]["spans"] == expected


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "validating"])
def test_a_bad_line_or_a_cut_archive_is_one_error_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(
        _lines(DOCUMENTS[:1]) + b"\n" + b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}\n'
    )
    result = _ingest(tmp_path / "lake", FIXTURES / DOCUMENTS[1], bad, fast=fast, monkeypatch=monkeypatch)
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: {bad}: line 3: resourceSpans[0].scopeSpans[0].spans[0].traceId: 'zz' is not hex (OTLP/JSON ids "
        "are hex), nor a 16-byte id in base64"
    ]
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(_lines(DOCUMENTS))[:400])
    result = _ingest(tmp_path / "lake", cut, fast=fast, monkeypatch=monkeypatch)
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"Error: {cut}: not a whole gzip file"), line
    assert not (tmp_path / "lake").exists() or not list((tmp_path / "lake").rglob("*.parquet"))
