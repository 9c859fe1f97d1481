"""`tracevals ingest`: write OTLP files (JSON as curl or a JS SDK sends it, or protobuf) into a lake.

OTLP/JSON files take the fast path first (`conversion.json_columnar`: Arrow's JSON reader and the columnar
conversion, many files at a time); a file it does not take is read by the validating decoder
(`otlp_json.parse_json_traces`), which also gives every error message (`_read`). Both make the same rows.
`TRACEVALS_INGEST_FAST=0` reads every file the validating way (for comparison, or to rule the fast path out).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import pyarrow as pa

from tracevals.cli.shared.otlp_files import compression, expanded, file_bytes, is_protobuf, stdin_copy
from tracevals.cli.shared.output import echo, format_option, lake_option, print_rows
from tracevals.collector.conversion import json_columnar
from tracevals.collector.conversion.columnar import spans_table
from tracevals.collector.conversion.rows import logs_table, rows_from_logs_request, rows_from_request
from tracevals.collector.jaeger import JaegerError, is_jaeger, jaeger_to_otlp
from tracevals.collector.otlp_decode import LOGS, TRACES, first_rejected
from tracevals.collector.otlp_json import (
    OTLPDecodeError,
    base64_ids_read,
    load_document,
    parse_json_logs,
    parse_json_traces,
)
from tracevals.lake.redaction import LOG_CONTENT_COLUMNS, SPAN_CONTENT_COLUMNS, Redactor, redact_table
from tracevals.lake.schema import LOG_SCHEMA, LOGS_DIR, SPAN_SCHEMA, SPANS_DIR, empty_table
from tracevals.lake.writer import LakeWriter, Spill
from tracevals.model.signals import temporary_folder
from tracevals.spans.rows import MAX_VALUE_BYTES

if TYPE_CHECKING:
    from tracevals.lake.lake import Lake

# resourceSpans / resourceLogs, their proto names, and Tempo's `batches`
_TOP_KEYS = ("resourceSpans", "resource_spans", "batches", "resourceLogs", "resource_logs")
# the OTLP signals a lake does not keep, by their documents' keys: the Collector's `file` exporter writes every
# pipeline it serves into one file, a document a line, so a file of traces can hold lines of metrics
_OTHER_SIGNALS = {
    "resourceMetrics": "metrics", "resource_metrics": "metrics",
    "resourceProfiles": "profiles", "resource_profiles": "profiles",
}  # fmt: skip
_OTHER_NAMES = set(_OTHER_SIGNALS.values())


FORMATS = ("auto", "otlp-json", "otlp-proto", "jaeger", "tempo")


def _documents(data: bytes) -> list[tuple[int, bytes]]:
    """A JSON file's documents, each with the line it starts on: a JSON Lines file (the OTLP file exporter's
    format, one TracesData or LogsData document a line, `.jsonl`; the Collector's `file` exporter writes it)
    gives each non-blank line; any other file is one document (line 1); a file of nothing but whitespace (a file
    exporter's before its first write) has none."""
    body = data.removeprefix(b"\xef\xbb\xbf")  # a byte order mark, as some editors write
    if not body.strip():
        return []
    first, newline, rest = body.lstrip().partition(b"\n")
    first = first.strip()
    if newline and first.startswith(b"{") and first.endswith(b"}") and rest.strip():
        return [(n, line) for n, line in enumerate(body.split(b"\n"), 1) if line.strip()]
    return [(1, data)]


def _read(
    path: Path, given: str = "auto", name: str | None = None, limit: int | None = MAX_VALUE_BYTES
) -> tuple[pa.Table, pa.Table, str]:
    """A file's span and log tables, and the format it was read as (`given`, or detected: `.pb` / `.bin` /
    `.protobuf` files are OTLP protobuf; a JSON document is Jaeger's export when it has `data[].spans`,
    Tempo's when it has `batches` or `{"trace": {...}}`, else OTLP/JSON). A compressed file is read
    decompressed, a JSON Lines file document by document (an error names the line)."""
    data = file_bytes(path)
    if is_protobuf(path, given):
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        from tracevals.collector.otlp_decode import parse_request

        request = ExportTraceServiceRequest()
        parse_request(request, data, "ExportTraceServiceRequest")  # as the receivers parse one
        _refuse_rejected(request, TRACES)
        return _checked(spans_table(request, limit), request), empty_table(LOG_SCHEMA), "otlp-proto"
    documents = _documents(data)
    del data
    if not documents:
        return empty_table(SPAN_SCHEMA), empty_table(LOG_SCHEMA), "empty"
    if len(documents) == 1:
        read = _read_document(documents[0][1], given, name or str(path), limit)
        _note_skipped(name or str(path), [read[2]])
        return read
    spans, logs, found = [], [], []
    for line, document in documents:
        try:
            s, g, f = _read_document(document, given, name or str(path), limit)
        except OTLPDecodeError as exc:
            raise OTLPDecodeError(f"line {line}: {exc}") from None
        spans.append(s)
        logs.append(g)
        found.append(f)
    _note_skipped(name or str(path), found)
    return pa.concat_tables(spans), pa.concat_tables(logs), "/".join(sorted(set(found))) + " lines"


def _note_skipped(name: str, found: list[str]) -> None:
    """One line for the documents of a file that hold a signal a lake does not keep (metrics, profiles)."""
    skipped = sorted(set(found) & _OTHER_NAMES)
    if skipped:
        counts = ", ".join(f"{found.count(f)} of {f}" for f in skipped)
        echo(f"note: {name}: OTLP documents skipped ({counts}): a lake keeps traces and logs", err=True)


def _read_document(
    data: bytes, given: str, name: str, limit: int | None = MAX_VALUE_BYTES
) -> tuple[pa.Table, pa.Table, str]:
    """One JSON document's span and log tables, and the format it was read as (see `_read`); values longer
    than `limit` bytes cut and flagged, as the collector cuts them."""
    doc = load_document(data)  # a key twice, or nesting past the parser: one clear error
    found = "otlp-json"
    if isinstance(doc, dict) and isinstance(doc.get("trace"), dict) and "resourceSpans" not in doc:
        doc, found = doc["trace"], "tempo"  # Tempo's API v2: {"trace": {"resourceSpans": [...]}}
    elif isinstance(doc, dict) and "batches" in doc:
        found = "tempo"
    if given == "jaeger" or (given == "auto" and isinstance(doc, dict) and is_jaeger(doc)):
        try:
            doc, found = jaeger_to_otlp(doc), "jaeger"
        except JaegerError as exc:
            raise OTLPDecodeError(str(exc)) from None
    if not isinstance(doc, dict) or not any(k in doc for k in _TOP_KEYS):
        other = next((_OTHER_SIGNALS[k] for k in doc if k in _OTHER_SIGNALS), None) if isinstance(doc, dict) else None
        if other is not None:  # another signal's document: nothing of it is kept, and nothing is wrong with it
            return empty_table(SPAN_SCHEMA), empty_table(LOG_SCHEMA), other
        raise OTLPDecodeError(
            "not an OTLP/JSON, Jaeger or Tempo document: no resourceSpans, data[].spans or batches "
            "(is it the right file?)"
        )
    traces = parse_json_traces(doc)
    base64_ids = base64_ids_read()
    logs = parse_json_logs(doc)
    base64_ids += base64_ids_read()
    if base64_ids:
        echo(f"note: {name}: {base64_ids} ids are base64, not hex as OTLP/JSON writes them; read as base64", err=True)
    _refuse_rejected(traces, TRACES)
    _refuse_rejected(logs, LOGS)
    return _checked(spans_table(traces, limit), traces), _checked(logs_table(logs, limit), logs), found


Read = tuple[pa.Table, pa.Table, str]  # a file's spans, log records, and the format it was read as


Counts = tuple[int, int, str]  # a file's span and log rows, and the format it was read as


def _fast(
    files: tuple[Path, ...], given: str, keep: Callable[[Read], None], limit: int | None = MAX_VALUE_BYTES
) -> dict[int, Counts]:
    """The files the fast path takes (by position): their span and log rows counted, the tables handed to
    `keep`, read as OTLP/JSON. Files are read and converted `json_columnar.GROUP_BYTES` at a time, a batch's
    tables kept together, and what is left of its arrays freed before the next: memory stays bounded by a
    batch. A compressed file is a batch of its own (its size on disk says little of what it holds); a JSON
    Lines file's documents are converted together, and the file is taken only if every one of them is."""
    if os.environ.get("TRACEVALS_INGEST_FAST", "1") == "0" or given in ("otlp-proto", "jaeger"):
        return {}
    json_files = [i for i, path in enumerate(files) if not is_protobuf(path, given)]
    out: dict[int, Counts] = {}
    batch: list[int] = []
    size = 0

    def convert() -> None:
        owners: list[int] = []  # the file of each document
        lines: set[int] = set()  # the JSON Lines files
        bodies: list[bytes] = []
        for i in batch:
            try:
                documents = _documents(file_bytes(files[i]))
            except OTLPDecodeError:
                continue  # the slow path says what is wrong with it
            owners += [i] * len(documents)
            bodies += [document for _, document in documents]
            if len(documents) > 1:
                lines.add(i)
        converted = json_columnar.tables(bodies, limit)
        batch.clear()
        del bodies
        refused = {i for i, t in zip(owners, converted, strict=True) if t is None}
        taken = [(i, t) for i, t in zip(owners, converted, strict=True) if t is not None and i not in refused]
        del converted
        if taken:
            keep((pa.concat_tables([s for _, (s, _) in taken]), pa.concat_tables([g for _, (_, g) in taken]), ""))
            for i, (s, g) in taken:
                spans, logs, _ = out.get(i, (0, 0, ""))
                out[i] = (spans + s.num_rows, logs + g.num_rows, "otlp-json lines" if i in lines else "otlp-json")
        del taken
        pa.default_memory_pool().release_unused()

    for i in json_files:
        compressed = compression(files[i]) is not None
        length = files[i].stat().st_size
        if batch and (compressed or size + length > json_columnar.GROUP_BYTES):
            convert()
            size = 0
        batch.append(i)
        size += length
        if compressed:
            convert()
            size = 0
    if batch:
        convert()
    return out


def _refuse_rejected(request: Any, kind: int) -> None:
    """An error naming the first item the collector would reject (`otlp_decode.first_rejected`): a file is
    ingested whole or not at all. A time past year 2262 ended in an Arrow traceback here."""
    problem = first_rejected(request, kind)
    if problem:
        raise OTLPDecodeError(f"{problem} (the collector rejects such an item too); nothing was written to the lake")


def _checked(table: pa.Table, request: Any) -> pa.Table:
    """`table`, unless the request had items the table builders skip (malformed ids): an error here, with
    the reference decoder's message naming the first bad id. A guard: `_refuse_rejected` turns such a file
    away before the builders run, so a difference here would be rows lost by the conversion itself."""
    if hasattr(request, "resource_spans"):
        sent = sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)
        check: Any = rows_from_request
    else:
        sent = sum(len(scope.log_records) for resource in request.resource_logs for scope in resource.scope_logs)
        check = rows_from_logs_request
    if table.num_rows != sent:
        check(request)  # raises OTLPDecodeError
        raise OTLPDecodeError("malformed trace or span ids")
    return table


@click.command()
@lake_option("The lake directory to write into (created if missing).", reads=False)
@format_option()
@click.option(
    "--input-format",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="What the files are; auto detects OTLP/JSON, OTLP protobuf (.pb), Jaeger JSON and Tempo JSON.",
)
@click.option(
    "--max-attribute-value-bytes",
    "limit",
    type=click.IntRange(min=16),
    default=MAX_VALUE_BYTES,
    show_default=True,
    help="Cut longer attribute values (and log bodies) at this many bytes and list their keys in "
    "tracevals.truncated, as the collector's setting of that name does.",
)
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True, path_type=Path))
def ingest(lake: Lake, fmt: str, input_format: str, limit: int, files: tuple[Path, ...]) -> None:
    """Write the spans (and log records) of OTLP FILES into a lake.

    \b
    A folder stands for the files beneath it whose names say OTLP data (.json, .jsonl,
    .ndjson, .pb, .bin, .protobuf, compressed or not), as a file exporter with rotation
    leaves them. JSON files use the OTLP/JSON encoding (hex ids) and may hold resourceSpans and
    resourceLogs, one document a file or one a line (JSON Lines, as the Collector's
    `file` exporter writes them), or are a Jaeger export (data[].spans, as its UI and
    API give them) or a Tempo one (batches, or {"trace": ...}); `.pb` files hold a
    protobuf ExportTraceServiceRequest. Any of them may be gzip, zstd or bz2 compressed.
    Documents of metrics or profiles (the file exporter writes every pipeline it serves
    into one file) are skipped with a note; an empty file gives a warning, no error.
    Every file is checked before anything is written;
    until then what was read waits in a temporary folder (TMPDIR), not in memory.
    Secrets in content (API keys, tokens, passwords, ...) are redacted on the way in,
    as the collector's `redaction` processor does.

    \b
    Examples:
      tracevals ingest --lake lake traces/*.json
      tracevals ingest --lake lake exports/               # every OTLP file beneath the folder
      tracevals ingest --lake lake --format json export.pb
      tracevals ingest --lake lake jaeger-trace.json      # detected as Jaeger
      tracevals ingest --lake lake otelcol-traces.jsonl.gz   # the Collector's file exporter, gzipped
      zcat export.json.gz | tracevals ingest --lake lake -     # "-": standard input (protobuf: --input-format)
    """
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        # the C allocator gives back what a batch of files freed before the next (mimalloc keeps ~15% more)
        pa.set_memory_pool(pa.system_memory_pool())
    # secrets never reach the lake, from a file as from the collector (its shipped `redaction` processor): each
    # file's tables as they are read (value by value, as on all of them at once; no copy of them all at the end)
    redactor = Redactor()

    def redacted(read: Read) -> Read:
        spans, logs, found = read
        return (
            redact_table(spans, SPAN_CONTENT_COLUMNS, redactor),
            redact_table(logs, LOG_CONTENT_COLUMNS, redactor),
            found,
        )

    if sum(str(path) == "-" for path in files) > 1:
        raise click.UsageError("'-' (standard input) is given more than once; give it once")
    files = expanded(files)
    # nothing is written before every file is read: what was read waits on disk (`Spill`), not in memory
    with temporary_folder("tracevals-ingest-") as folder:
        spill = Spill(folder)
        named, files = files, tuple(stdin_copy(folder) if str(p) == "-" else p for p in files)

        def keep(read: Read) -> None:
            spans, logs, _ = redacted(read)
            try:
                spill.add(spans, SPANS_DIR)
                spill.add(logs, LOGS_DIR)
            except OSError as exc:
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                    raise
                raise click.ClickException(
                    f"no room left in {folder.parent} for the rows read ({exc.strerror or exc}): they wait "
                    "there until every file is checked; set TMPDIR to a folder on a disk with room for about the "
                    "input's size. Nothing was written to the lake"
                ) from None

        counts = _fast(files, input_format, keep, limit)
        for i, path in enumerate(files):
            if i in counts:
                continue
            try:
                read = _read(path, input_format, str(named[i]), limit)
            except OTLPDecodeError as exc:
                raise click.ClickException(f"{named[i]}: {exc}") from None
            keep(read)
            counts[i] = (read[0].num_rows, read[1].num_rows, read[2])
            del read
        # one write for all the files: a file per hour partition, not per input file and hour
        writer = LakeWriter(lake)
        writer.write_spilled(spill, SPANS_DIR)
        writer.write_spilled(spill, LOGS_DIR)
    report = [(str(path), counts[i][2], counts[i][0], counts[i][1]) for i, path in enumerate(named)]
    for name, found, span_rows, log_rows in report:  # a file that held nothing must say so, not pass as read
        # a file of other signals alone had its note
        if span_rows == 0 and log_rows == 0 and not set(found.removesuffix(" lines").split("/")) <= _OTHER_NAMES:
            why = (
                "the file is empty" if found == "empty" else "no spans and no log records in it (is it an OTLP export?)"
            )
            echo(f"warning: {name}: {why}", err=True)
    print_rows(["file", "format", "spans", "logs"], report, fmt)
