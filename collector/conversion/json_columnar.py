"""OTLP/JSON documents straight to lake tables: the fast path of `tracevals ingest`.

The validating decoder (`otlp_json.parse_json_traces`) walks a document in Python into protobuf, and the conversion
then reads the protobuf (`columnar.spans_table`, `rows.logs_table`): ~150 µs a span of a Google ADK recording, all
told. Here documents are parsed by Arrow's JSON reader (C++, straight into Arrow arrays, the schema inferred;
newline-free documents many to one call, as lines), checked against the OTLP messages' descriptors
(`json_check.py`), and converted column by column (the values: `json_values.py`): spans by the collector's columnar
path (`columnar.py`, the same stages and rows), log records by `json_logs.py` (the rows of `rows.log_tuples`). No
Python runs per span or per value, except for the spans the columnar path leaves to the Python one (events, links,
a key given twice ...), which `rows.span_row` builds from the document's own values read by the validating
decoder's code (`otlp_json._message`), as on the slow path.

What this path takes it reads as the validating decoder does, and it takes less: every key an OTLP field in
lowerCamelCase, every value of its field's JSON type and range (integers as numbers or as decimal strings, enums as
numbers or names, doubles finite, ids hex of their size, at most one value set in an AnyValue, arrays and maps
nested at most `MAX_NESTING` deep). A document it does not take (`tables` gives None for it) is read by the
validating decoder, which reads it or says what is wrong with it (its messages stay the only ones): not UTF-8, not
one JSON object, a key given twice, keys in snake_case or older spellings (`instrumentationLibrary*`), Tempo's
`batches`, Jaeger's `data`, base64 ids, an unknown key, `NaN` ... Tests hold the two paths equal row for row
(tests/test_ingest_json_fast.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tracevals.collector import otlp_json
from tracevals.collector.conversion import columnar
from tracevals.collector.conversion.json_check import (
    _TOP,
    BLOCK_BYTES,
    GROUP_BYTES,
    MAX_NESTING,
    Refused,
    _Conformed,
    _Group,
    _is_null,
    _parse,
    _plausible,
    _Repeated,
    _repeated,
)
from tracevals.collector.conversion.json_logs import _logs_table
from tracevals.collector.conversion.json_values import _ids, _key_values, _lengths, _list_of, _nonzero, _storable
from tracevals.collector.conversion.rows import _attrs, _dumps
from tracevals.collector.conversion.values import (
    c,
)
from tracevals.lake.arrow import arrow_array
from tracevals.lake.rows import service_name
from tracevals.lake.schema import SPAN_SCHEMA, empty_table

__all__ = ["BLOCK_BYTES", "GROUP_BYTES", "MAX_NESTING", "Refused", "refusal", "tables"]

# ---------------------------------------------------------------- spans


def _span_read_shape(spans: _Conformed) -> pa.StructArray:
    """The spans as the columnar path reads them (`native._READ`'s fields, protobuf's defaults for the absent)."""
    n = len(spans.array)
    status = spans.get("status")
    if status is None:
        status_array = pa.nulls(n, pa.struct([("message", pa.string()), ("code", pa.int32())]))
    else:
        status_array = pa.StructArray.from_arrays(
            [status.scalar("message", c("")), status.scalar("code", c(0, pa.int32()))],
            names=["message", "code"], mask=pc.is_null(status.array),
        )  # fmt: skip
    arrays = {
        "trace_id": _nonzero(_ids(spans.scalar("trace_id"), (16,), "traceId"), 16, "traceId"),
        "span_id": _nonzero(_ids(spans.scalar("span_id"), (8,), "spanId"), 8, "spanId"),
        "parent_span_id": _ids(spans.scalar("parent_span_id"), (0, 8), "parentSpanId"),
        "name": spans.scalar("name", c("")),
        "kind": spans.scalar("kind", c(0, pa.int32())),
        "start_time_unix_nano": _storable(spans.scalar("start_time_unix_nano", c(0, pa.uint64())), "startTimeUnixNano"),
        "end_time_unix_nano": _storable(spans.scalar("end_time_unix_nano", c(0, pa.uint64())), "endTimeUnixNano"),
        "attributes": _key_values(spans.get("attributes"), n),
        "status": status_array,
        # only whether a span has events or links is read here (those spans take the Python path)
        "events": _placeholders(_lengths(spans.get("events"), n)),
        "links": _placeholders(_lengths(spans.get("links"), n)),
    }
    return pa.StructArray.from_arrays(list(arrays.values()), names=list(arrays))


def _placeholders(lengths: pa.Array) -> pa.Array:
    """Lists of these lengths, of nulls: a span's events or links, counted only."""
    return _list_of(lengths, pa.nulls(pc.sum(pc.cast(lengths, pa.int64())).as_py() or 0))


def _resource_read_shape(resource: _Conformed | None, n: int) -> pa.StructArray:
    attributes = _key_values(resource.get("attributes") if resource else None, n)
    return pa.StructArray.from_arrays([attributes], names=["attributes"])


class _JsonSpans(columnar._Spans):
    """`columnar._Spans` from a JSON group: the Python path's scopes and spans from the parsed values."""

    raw_resources: pa.Array  # ResourceSpans as parsed
    resource_of_scope: list[int]
    _raw_spans: pa.Array | None = None

    def scope_list(self) -> list[tuple[str, Any, str | None, str | None, Any]]:
        if not self._listed:
            resources: list[tuple[str, Any]] = []
            for r in range(len(self.raw_resources)):
                raw = self.raw_resources[r].as_py().get("resource")
                attrs = _attrs(_decoded(Resource, raw).attributes) if raw is not None else {}
                resources.append((_dumps(attrs), service_name(attrs)))
            scope = self.per_scope.field("scope")
            names, versions = scope.field("name").to_pylist(), scope.field("version").to_pylist()
            self._listed = [
                (*resources[r], names[i] or None, versions[i] or None, None)
                for i, r in enumerate(self.resource_of_scope)
            ]
        return self._listed

    def span_at(self, i: int, scope: int) -> Any:
        if self._raw_spans is None:
            scope_spans = pc.list_flatten(self.raw_resources.field("scopeSpans"))
            self._raw_spans = pc.list_flatten(scope_spans.field("spans"))
        return _decoded(Span, self._raw_spans[i].as_py())


def _decoded(kind: Any, raw: dict[str, Any]) -> Any:
    """A message from its parsed JSON values, by the validating decoder's own code (an id it reads as base64,
    a link's: Refused, so that the validating path reads the document and says so)."""
    otlp_json._ids.base64 = 0
    try:
        message = kind(**otlp_json._message(kind.DESCRIPTOR, raw))
    except (otlp_json._Where, TypeError, ValueError) as exc:
        raise Refused(f"{kind.DESCRIPTOR.name}: {exc}") from None
    if otlp_json.base64_ids_read():
        raise Refused(f"{kind.DESCRIPTOR.name}: an id in base64")
    return message


def _spans_table(group: _Group, max_value_bytes: int | None = None) -> pa.Table:
    traces = group.traces
    if traces is None or group.raw_resources is None:
        return empty_table(SPAN_SCHEMA)
    n_resources = len(traces.array)
    scope_spans = traces.get("scope_spans")
    if scope_spans is None:
        return empty_table(SPAN_SCHEMA)
    scopes = scope_spans.items
    n_scopes = len(scopes.array)
    spans = scopes.get("spans")
    if spans is None:
        return empty_table(SPAN_SCHEMA)
    scope = scopes.get("scope")
    if scope is None:
        scope_array = pa.nulls(n_scopes, pa.struct([("name", pa.string()), ("version", pa.string())]))
    else:
        scope_array = pa.StructArray.from_arrays(
            [scope.scalar("name", c("")), scope.scalar("version", c(""))], names=["name", "version"]
        )
    span_array = _span_read_shape(spans.items)
    per_scope = pa.StructArray.from_arrays([scope_array, _list_of(spans.lengths, span_array)], names=["scope", "spans"])
    resources = pa.StructArray.from_arrays(
        [_resource_read_shape(traces.get("resource"), n_resources), _list_of(scope_spans.lengths, per_scope)],
        names=["resource", "scope_spans"],
    )
    scope_lists = resources.field("scope_spans")
    span_lists = per_scope.field("spans")
    flat = _JsonSpans(resources, scope_lists, per_scope, span_lists, span_array, pc.list_parent_indices(span_lists), [])
    flat.raw_resources = group.raw_resources
    flat.resource_of_scope = pc.list_parent_indices(scope_lists).to_pylist()
    return columnar.table_of(flat, max_value_bytes)


# ---------------------------------------------------------------- documents


def _top(table: pa.Table, name: str) -> tuple[_Conformed | None, pa.Array | None, pa.Array | None]:
    """The group's ResourceSpans (or ResourceLogs), every document's flattened and conformed, with how many
    each document has, and the flattened structs as parsed."""
    if name not in table.column_names:
        return None, None, None
    column = table.column(name)
    lists = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    if _is_null(lists):
        return None, pa.repeat(c(0, pa.int32()), table.num_rows), None
    descriptor = _TOP[name]
    repeated = _repeated(descriptor.fields[0], lists, name, 0)  # resource_spans / resource_logs
    assert isinstance(repeated, _Repeated)
    return repeated.items, repeated.lengths, pc.list_flatten(lists)


def _conformed(table: pa.Table) -> _Group:
    group = _Group(table)
    group.traces, group.trace_lengths, group.raw_resources = _top(table, "resourceSpans")
    group.logs, group.log_lengths, _ = _top(table, "resourceLogs")
    return group


def _per_document(group: _Group, lengths: pa.Array | None, items: str) -> list[int]:
    """How many spans (or log records) each document of the group holds, in order."""
    rows = group.table.num_rows
    if lengths is None:
        return [0] * rows
    top = group.traces if items == "spans" else group.logs
    if top is None:
        return [0] * rows
    scopes_name, items_name = ("scope_spans", "spans") if items == "spans" else ("scope_logs", "log_records")
    scopes = top.get(scopes_name)
    if scopes is None or scopes.items.get(items_name) is None:
        return [0] * rows
    per_scope = scopes.items.get(items_name).lengths
    per_resource = _sum_by(per_scope, scopes.lengths)
    return _sum_by(per_resource, lengths).to_pylist()


def _sum_by(values: pa.Array, lengths: pa.Array) -> pa.Array:
    """The sum of `values` over each run of `lengths` consecutive ones."""
    running = pa.concat_arrays([arrow_array([0], pa.int64()), pc.cumulative_sum(pc.cast(values, pa.int64()))])
    ends = pc.cumulative_sum(pc.cast(lengths, pa.int64()))
    starts = pc.subtract(ends, pc.cast(lengths, pa.int64()))
    return pc.cast(pc.subtract(pc.take(running, ends), pc.take(running, starts)), pa.int64())


def _convert(table: pa.Table, max_value_bytes: int | None = None) -> list[tuple[pa.Table, pa.Table]]:
    """Each document's (spans, log records) tables: each block the reader made (whole documents) converted in
    one go, then cut per document. Values longer than `max_value_bytes` are cut and flagged, as the collector
    cuts them: a span's by the columnar path, a log record's by the validating decoder's road (Refused)."""
    out = []
    for batch in table.to_batches():
        out += _convert_block(pa.Table.from_batches([batch]), max_value_bytes)
    return out


def _long_log_value(logs: pa.Table, max_value_bytes: int) -> bool:
    """Whether a log record may hold a value longer than `max_value_bytes` (a text column of its row that long:
    the validating road then cuts exactly what the collector would)."""
    for column in logs.itercolumns():
        if pa.types.is_string(column.type) and len(column):
            longest = pc.max(pc.binary_length(column)).as_py()
            if longest is not None and longest > max_value_bytes:
                return True
    return False


def _convert_block(table: pa.Table, max_value_bytes: int | None = None) -> list[tuple[pa.Table, pa.Table]]:
    group = _conformed(table)
    spans, logs = _spans_table(group, max_value_bytes), _logs_table(group)
    if max_value_bytes is not None and _long_log_value(logs, max_value_bytes):
        raise Refused(f"a log record with a value longer than {max_value_bytes} bytes")
    span_counts = _per_document(group, group.trace_lengths, "spans")
    log_counts = _per_document(group, group.log_lengths, "logs")
    if sum(span_counts) != spans.num_rows or sum(log_counts) != logs.num_rows:
        raise Refused("rows lost on the way")  # (malformed ids are refused before)
    out = []
    span_at = log_at = 0
    for n_spans, n_logs in zip(span_counts, log_counts, strict=True):
        out.append((spans.slice(span_at, n_spans), logs.slice(log_at, n_logs)))
        span_at += n_spans
        log_at += n_logs
    return out


Converted = tuple[pa.Table, pa.Table]
# Keys whose values a writer gives one way (int64s as strings or numbers, enums as numbers or names): Arrow's
# reader infers one type a key, so documents parsed together must agree (`_style`).
_STYLED = (b"intValue", b"startTimeUnixNano", b"endTimeUnixNano", b"timeUnixNano", b"observedTimeUnixNano",
           b"kind", b"code", b"severityNumber")  # fmt: skip
_BLANKS = b" \t\r\n"
_STYLE_BYTES = 1 << 16


def _style(body: bytes) -> tuple[bool | None, ...]:
    """Per `_STYLED` key, whether its first value in the document is a string (None: not there); a guess
    from the text, for grouping only (documents that do not agree after all are parsed alone)."""
    out: list[bool | None] = []
    head = body[:_STYLE_BYTES]  # the first span or record tells
    for key in _STYLED:
        at = head.find(b'"' + key + b'"')
        if at < 0:
            out.append(None)
            continue
        rest = head[at + len(key) + 2 : at + len(key) + 34].lstrip(_BLANKS)
        out.append(rest[1:].lstrip(_BLANKS).startswith(b'"') if rest.startswith(b":") else None)
    return tuple(out)


def _agrees(a: tuple[bool | None, ...], b: tuple[bool | None, ...]) -> bool:
    return all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))


def _merged(a: tuple[bool | None, ...], b: tuple[bool | None, ...]) -> tuple[bool | None, ...]:
    return tuple(x if x is not None else y for x, y in zip(a, b, strict=True))


def _one_line(body: bytes) -> bool:
    return b"\n" not in body.rstrip(_BLANKS) and b"\r" not in body


def tables(bodies: Sequence[bytes], max_value_bytes: int | None = None) -> list[Converted | None]:
    """Each OTLP/JSON document's (spans, log records) tables, of `SPAN_SCHEMA` and `LOG_SCHEMA`, equal to what
    the validating decoder and the conversion make of it; None for a document this path does not take (read
    it with `otlp_json.parse_json_traces` / `parse_json_logs`, which say what is wrong with it, if anything).
    Newline-free documents written alike (`_style`) are parsed and converted together, `GROUP_BYTES` at most
    at a time; a pretty-printed one alone."""
    out: list[Converted | None] = [None] * len(bodies)
    groups: list[tuple[tuple[bool | None, ...], list[int], int]] = []  # (style, members, bytes)
    for i, body in enumerate(bodies):
        if not _plausible(body):
            continue
        if not _one_line(body):
            _single(body, i, out, max_value_bytes)  # objects across lines: parsed alone
            continue
        style = _style(body)
        at = next((g for g, (known, _, _) in enumerate(groups) if _agrees(known, style)), None)
        if at is not None and groups[at][2] + len(body) > GROUP_BYTES:
            _group(bodies, groups.pop(at)[1], out, max_value_bytes)
            at = None
        if at is None:
            groups.append((style, [], 0))
            at = len(groups) - 1
        known, members, size = groups[at]
        members.append(i)
        groups[at] = (_merged(known, style), members, size + len(body))
    for _, members, _ in groups:
        _group(bodies, members, out, max_value_bytes)
    return out


def _group(
    bodies: Sequence[bytes], members: list[int], out: list[Converted | None], max_value_bytes: int | None = None
) -> None:
    if len(members) == 1:
        _single(bodies[members[0]], members[0], out, max_value_bytes)
        return
    texts = [bodies[i].rstrip(_BLANKS) for i in members]
    try:
        converted = _convert(_parse(b"\n".join(texts), len(members), max(map(len, texts))), max_value_bytes)
    except Refused:
        for i in members:  # one document the path does not take: the others alone
            _single(bodies[i], i, out, max_value_bytes)
        return
    for i, tables_ in zip(members, converted, strict=True):
        out[i] = tables_


def _single(body: bytes, i: int, out: list[Converted | None], max_value_bytes: int | None = None) -> None:
    try:
        out[i] = _convert(_parse_one(body), max_value_bytes)[0]
    except Refused:
        out[i] = None


def _parse_one(body: bytes) -> pa.Table:
    if _one_line(body):
        text = body.rstrip(_BLANKS)
        return _parse(text, 1, len(text))
    return _parse(body, 1, None)


def refusal(body: bytes) -> str | None:
    """Why this path does not take the document (None: it does): for tests and for a look at a file."""
    if not _plausible(body):
        return "not UTF-8, or not a JSON object"
    try:
        _convert(_parse_one(body))
    except Refused as exc:
        return str(exc)
    return None
