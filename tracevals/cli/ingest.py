"""`tracevals ingest`: write OTLP files (JSON as curl or a JS SDK sends it, or protobuf) into a lake."""

from __future__ import annotations

import json
from pathlib import Path

import click

from tracevals.cli.output import format_option, print_rows
from tracevals.collector.from_otlp import (
    OTLPDecodeError,
    parse_json_logs,
    parse_json_traces,
    rows_from_logs_request,
    rows_from_request,
)
from tracevals.collector.lake_writer import LakeWriter

Rows = list[dict[str, object]]


def _read(path: Path) -> tuple[Rows, Rows]:
    """(span rows, log rows) of one file."""
    data = path.read_bytes()
    if path.suffix in (".pb", ".bin", ".protobuf"):
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(data)
        except Exception as exc:  # protobuf raises DecodeError, a bare Exception subclass
            raise OTLPDecodeError(f"not an OTLP protobuf ExportTraceServiceRequest: {exc}") from None
        return rows_from_request(request), []
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise OTLPDecodeError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or not ("resourceSpans" in doc or "resourceLogs" in doc):
        raise OTLPDecodeError("not an OTLP/JSON document: no resourceSpans (is it the right file?)")
    return rows_from_request(parse_json_traces(doc)), rows_from_logs_request(parse_json_logs(doc))


@click.command()
@click.option(
    "--lake",
    type=click.Path(file_okay=False),
    envvar="TRACEVALS_LAKE",
    required=True,
    help="The lake directory to write into (created if missing).",
)
@format_option()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def ingest(lake: str, fmt: str, files: tuple[Path, ...]) -> None:
    """Write the spans (and log records) of OTLP FILES into a lake.

    \b
    JSON files use the OTLP/JSON encoding (hex ids) and may hold resourceSpans and
    resourceLogs; `.pb` files hold a protobuf ExportTraceServiceRequest. Every file
    is checked before anything is written.
    Examples:
      tracevals ingest --lake lake traces/*.json
      tracevals ingest --lake lake --format json export.pb
    """
    decoded = []
    for path in files:
        try:
            decoded.append((path, _read(path)))
        except OTLPDecodeError as exc:
            raise click.ClickException(f"{path}: {exc}") from None
    # one write for all the files: a file per hour partition, not per input file and hour
    writer = LakeWriter(lake)
    spans = [row for _, (rows, _) in decoded for row in rows]
    logs = [row for _, (_, rows) in decoded for row in rows]
    if spans:
        writer.write_rows(spans)
    if logs:
        writer.write_rows(logs, "logs")
    report = [(str(path), len(span_rows), len(log_rows)) for path, (span_rows, log_rows) in decoded]
    print_rows(["file", "spans", "logs"], report, fmt)
