"""OTLP requests to lake tables and row dicts, a span (or log record) at a time: the collector's reference
path. Each record is converted by the one conversion of `tracevals.spans.rows` (what a span becomes in the
lake); the columnar path (`columnar.py`) must equal this value for value (tests/test_otlp_columnar.py), and
builds with it every span it leaves aside. `rows_from_request` gives the same rows as dicts.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracevals.collector.otlp_json import OTLPDecodeError
from tracevals.lake.schema import LOG_SCHEMA, RAW_FIELDS, SPAN_SCHEMA
from tracevals.spans.rows import (
    TRUNCATED,
    Keep,
    _attrs,
    _dumps,
    any_value,
    attributes,
    flagged,
    log_tuples,
    rows_table,
    scopes,
    span_row,
    span_tuples,
    truncate_values,
)

__all__ = [
    "TRUNCATED", "Keep", "_attrs", "_dumps", "any_value", "attributes", "flagged", "log_tuples", "logs_table",
    "rows_from_logs_request", "rows_from_request", "rows_table", "scopes", "span_row", "span_tuples", "spans_table",
    "truncate_values",
]  # fmt: skip


def spans_table(
    request: ExportTraceServiceRequest, max_value_bytes: int | None = None, keep: Keep | None = None
) -> pa.Table:
    """The request's spans as a table of `SPAN_SCHEMA`."""
    return rows_table(span_tuples(request, max_value_bytes, keep), SPAN_SCHEMA)


def logs_table(
    request: ExportLogsServiceRequest, max_value_bytes: int | None = None, keep: Keep | None = None
) -> pa.Table:
    """The request's log records as a table of `LOG_SCHEMA`."""
    return rows_table(log_tuples(request, max_value_bytes, keep), LOG_SCHEMA)


assert len(RAW_FIELDS) == 17, "span_tuples writes the raw columns in RAW_FIELDS order"


_SPAN_COLUMNS = SPAN_SCHEMA.names
_LOG_COLUMNS = LOG_SCHEMA.names


def _check_ids(ids: tuple[tuple[bytes, int, str, bool], ...]) -> None:
    """Each (id, size, name, required): of its size, or absent where it may be."""
    for raw, size, name, required in ids:
        if (raw or required) and len(raw) != size:
            raise OTLPDecodeError(f"{name} must be {size} bytes, got {len(raw)}")


def rows_from_request(request: ExportTraceServiceRequest) -> list[dict[str, Any]]:
    """One lake row (a dict of `SPAN_SCHEMA` columns) per span; raises `OTLPDecodeError` on a malformed id."""
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                _check_ids(
                    ((span.trace_id, 16, "traceId", True), (span.span_id, 8, "spanId", True),
                     (span.parent_span_id, 8, "parentSpanId", False))
                )  # fmt: skip
    return [dict(zip(_SPAN_COLUMNS, row, strict=True)) for row in span_tuples(request)]


def rows_from_logs_request(request: ExportLogsServiceRequest) -> list[dict[str, Any]]:
    """One lake row (a dict of `LOG_SCHEMA` columns) per log record; raises `OTLPDecodeError` on a malformed id."""
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                _check_ids(((record.trace_id, 16, "traceId", False), (record.span_id, 8, "spanId", False)))
    return [dict(zip(_LOG_COLUMNS, row, strict=True)) for row in log_tuples(request)]
