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


_TRACE, _SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
LAST_NS = 2**63 - 1  # the last time a lake's timestamp[ns] holds (2262-04-11)


def _span_document(**span: Any) -> dict[str, Any]:
    base = {"traceId": _TRACE, "spanId": _SPAN, "name": "odd", "startTimeUnixNano": "1", "endTimeUnixNano": "2"}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [{**base, **span}]}]}]}


def _log_document(**record: Any) -> dict[str, Any]:
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"timeUnixNano": "1", **record}]}]}]}


# What OTLP allows (its times are uint64) and the collector rejects with partial success: each ended in an
# Arrow traceback in `ingest`, on every one of its paths.
REJECTED = {
    "start past 2262": (_span_document(startTimeUnixNano=str(2**64 - 1)), "span 'odd': times past year 2262"),
    "end past 2262": (_span_document(endTimeUnixNano=str(LAST_NS + 1)), "span 'odd': times past year 2262"),
    "zero trace id": (_span_document(traceId="0" * 32), "span 'odd': traceId must be 16 bytes, not all zero"),
    "zero span id": (_span_document(spanId="0" * 16), "span 'odd': spanId must be 8 bytes, not all zero"),
    "log past 2262": (_log_document(timeUnixNano=str(2**64 - 1)), "log record: times past year 2262"),
}


@pytest.mark.parametrize(
    ("path", "case"),
    # a protobuf file of `ingest` holds spans only (an ExportTraceServiceRequest)
    [
        (p, c)
        for p in ("fast", "validating", "protobuf")
        for c in sorted(REJECTED)
        if not (p == "protobuf" and "log" in c)
    ],
)
def test_what_the_collector_rejects_is_one_line_naming_the_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, path: str
) -> None:
    """A file holding an item the collector rejects (ids of zeros, a time a lake cannot store) is refused as
    the collector words it, in one line naming the file; nothing reaches the lake, not even another file's
    rows. The last time that fits is taken."""
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    document, said = REJECTED[case]
    if path == "protobuf":
        import base64
        import copy

        document = copy.deepcopy(document)  # protobuf's JSON mapping writes bytes in base64, OTLP's in hex
        for span in document["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            for key in ("traceId", "spanId"):
                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
        bad = tmp_path / "bad.pb"
        bad.write_bytes(ParseDict(document, ExportTraceServiceRequest()).SerializeToString())
    else:
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(document), encoding="utf-8")
    result = _ingest(
        tmp_path / "lake", FIXTURES / DOCUMENTS[0], bad, fast=path != "validating", monkeypatch=monkeypatch
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and result.exception is not None
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"Error: {bad}: {said}") and "nothing was written to the lake" in line, line
    assert not (tmp_path / "lake").exists() or not list((tmp_path / "lake").rglob("*.parquet"))
    edge = tmp_path / "edge.json"
    edge.write_text(json.dumps(_span_document(startTimeUnixNano=str(LAST_NS - 1), endTimeUnixNano=str(LAST_NS))))
    assert _ingest(tmp_path / "edge", edge, fast=path != "validating", monkeypatch=monkeypatch).exit_code == 0


def _in_own_process(
    tmp_path: Path, argv: list[str], shown: str, env: dict[str, str] | None = None, before: str = ""
) -> str:
    """`tracevals ARGV` run as its process's own command line (`sys.argv`, as the `tracevals` script runs it), in
    `tmp_path`, with OPENBLAS_NUM_THREADS unset unless `env` sets it, after the statements `before`; what the
    expression `shown` (over `gc`, `os`, `sys`) then reads."""
    import os
    import subprocess
    import sys

    probe = (
        "import gc, os, sys\n"
        f"{before}\n"
        f"sys.argv = ['tracevals', *{argv!r}]\n"
        "from tracevals.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (None, 0), exc.code\n"
        f"print({shown})\n"
    )
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"} | (env or {})
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path, env=environment
    )
    return done.stdout.strip().splitlines()[-1]


def test_ingest_imports_no_duckdb(tmp_path: Path) -> None:
    """`tracevals ingest` writes Parquet and queries nothing: it does not pay DuckDB's import (and the view
    catalog's), which the package `tracevals.queries` used to bring with the signal handling every command
    reads (`queries.interrupts`): about a fifth of ingesting one small file."""
    (tmp_path / "one.json").write_text(json.dumps(_span_document()), encoding="utf-8")
    assert _in_own_process(tmp_path, ["ingest", "--lake", "lake", "one.json"], "'duckdb' in sys.modules") == "False"
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{tmp_path}/lake/spans/**/*.parquet')").fetchall() == [(1,)]


def test_a_commands_own_process_spins_no_blas_threads_and_freezes_its_imports(tmp_path: Path) -> None:
    """numpy (pyarrow and Polars import it) starts OpenBLAS with a thread per core spinning for ~0.1 CPU-s, and
    the cyclic collector walks every object the imports made at each full collection: a command's own process
    asks for one BLAS thread and freezes what its imports made. A user's setting is kept; `run` (the user's
    agent runs in its process) and a caller passing arguments (CliRunner: the tests' own process) are left
    as they are."""
    (tmp_path / "one.json").write_text(json.dumps(_span_document()), encoding="utf-8")
    ingest = ["ingest", "--lake", "lake", "one.json"]
    state = "gc.get_freeze_count() > 0, os.environ.get('OPENBLAS_NUM_THREADS', '-')"
    assert _in_own_process(tmp_path, ingest, state) == "True 1"
    assert _in_own_process(tmp_path, ingest, state, {"OPENBLAS_NUM_THREADS": "4"}) == "True 4"
    assert _in_own_process(tmp_path, ["run", "--help"], state) == "False -"
    # the command's imports run with the collector paused (it walked what they made at every few thousand objects),
    # and it is on again once they are done
    spy = (
        "import importlib\n"
        "imported, seen = importlib.import_module, []\n"
        "def spying(name, *rest):\n"
        "    seen.append((name, gc.isenabled())) if name.startswith('tracevals.cli.') else None\n"
        "    return imported(name, *rest)\n"
        "importlib.import_module = spying\n"
    )
    shown = "seen, gc.isenabled()"
    assert _in_own_process(tmp_path, ingest, shown, before=spy) == "[('tracevals.cli.ingest', False)] True"
    import gc

    before = gc.get_freeze_count()
    result = CliRunner().invoke(main, ["ingest", "--lake", str(tmp_path / "lake2"), str(tmp_path / "one.json")])
    assert result.exit_code == 0, result.output
    assert gc.get_freeze_count() == before


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "validating"])
def test_lines_of_metrics_or_profiles_are_skipped_and_said_and_an_empty_file_is_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    """The Collector's `file` exporter writes every pipeline it serves into one file, a document a line: a file
    of traces can hold lines of metrics (or profiles), and a file it has not written to yet is empty. Each was
    refused whole ("not an OTLP/JSON, Jaeger or Tempo document", "body is not JSON"), so nothing of the export
    was ingested; the other signals' documents are skipped with one line that says so, the traces kept."""
    metrics = '{"resourceMetrics":[{"resource":{},"scopeMetrics":[{"metrics":[{"name":"m","gauge":{}}]}]}]}'
    profiles = '{"resourceProfiles":[],"dictionary":{}}'
    traces = _lines(DOCUMENTS[:2]).decode().splitlines()
    mixed = tmp_path / "otelcol.jsonl"
    mixed.write_text("\n".join([traces[0], metrics, traces[1], profiles, metrics]) + "\n")
    only = tmp_path / "metrics.jsonl"
    only.write_text(f"{metrics}\n{profiles}\n")
    empty, blank = tmp_path / "empty.json", tmp_path / "blank.json"
    empty.write_bytes(b"")
    blank.write_bytes(b"\xef\xbb\xbf \n\n")
    alone = _ingest(tmp_path / "alone", *(FIXTURES / d for d in DOCUMENTS[:2]), fast=fast, monkeypatch=monkeypatch)
    assert alone.exit_code == 0, alone.output

    result = _ingest(tmp_path / "lake", mixed, only, empty, blank, fast=fast, monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"note: {mixed}: OTLP documents skipped (2 of metrics, 1 of profiles): a lake keeps traces and logs",
        f"note: {only}: OTLP documents skipped (1 of metrics, 1 of profiles): a lake keeps traces and logs",
        f"warning: {empty}: the file is empty",
        f"warning: {blank}: the file is empty",
    ]
    read = json.loads(alone.stdout)
    assert [(r["format"], r["spans"], r["logs"]) for r in json.loads(result.stdout)] == [
        ("metrics/otlp-json/profiles lines", sum(r["spans"] for r in read), sum(r["logs"] for r in read)),
        ("metrics/profiles lines", 0, 0),
        ("empty", 0, 0),
        ("empty", 0, 0),
    ]
    assert _rows(tmp_path / "lake") == _rows(tmp_path / "alone")


def test_a_folder_is_the_otlp_files_beneath_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tracevals ingest exports/` (a Collector's `file` exporter with rotation leaves a folder of files) was
    refused (`File 'exports' is a directory`). A folder stands for the files beneath it whose names say OTLP
    data, compressed or not, in name order; hidden ones are left out, other files said in one note, and a
    folder with none is one error line."""
    folder = tmp_path / "exports"
    (folder / "rotated").mkdir(parents=True)
    (folder / ".cache").mkdir()
    (folder / "a.json").write_bytes((FIXTURES / DOCUMENTS[0]).read_bytes())
    (folder / "rotated" / "b.jsonl.gz").write_bytes(gzip.compress(_lines(DOCUMENTS[1:3])))
    (folder / ".cache" / "c.json").write_bytes((FIXTURES / DOCUMENTS[3]).read_bytes())  # hidden: not read
    (folder / "README.md").write_text("exports of the staging agent\n")
    alone = _ingest(tmp_path / "alone", *(FIXTURES / d for d in DOCUMENTS[:3]), monkeypatch=monkeypatch)
    assert alone.exit_code == 0, alone.output

    result = _ingest(tmp_path / "lake", folder, monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [f"note: {folder}: 1 file not read, not named as OTLP data: README.md"]
    assert [r["file"] for r in json.loads(result.stdout)] == [
        str(folder / "a.json"),
        str(folder / "rotated" / "b.jsonl.gz"),
    ]
    assert _rows(tmp_path / "lake") == _rows(tmp_path / "alone")

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("x")
    refused = _ingest(tmp_path / "lake", tmp_path / "notes", monkeypatch=monkeypatch)
    assert refused.exit_code == 1
    assert refused.output.strip().splitlines()[-1] == (
        f"Error: {tmp_path / 'notes'}: a folder with no OTLP file in it (names ending .json, .jsonl, .ndjson, .pb, "
        ".bin, .protobuf, or those gzip, zstd or bz2 compressed); name the files to read"
    )
