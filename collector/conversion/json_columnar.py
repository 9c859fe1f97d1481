"""OTLP/JSON documents straight to lake tables: the fast path of `tracevals ingest`.

The validating decoder (`otlp_json.parse_json_traces`) walks a document in Python into protobuf, and the
conversion then reads the protobuf (`columnar.spans_table`, `rows.logs_table`): ~150 µs a span of a Google ADK
recording, all told. Here documents are parsed by Arrow's JSON reader (C++, straight into Arrow arrays, the
schema inferred; newline-free documents many to one call, as lines), checked against the OTLP messages'
descriptors (`_conform`), and converted column by column: spans by the collector's columnar path (`columnar.py`,
the same stages and rows), log records here (`_logs_table`, the rows of `rows.log_tuples`). No Python runs per
span or per value, except for the spans the columnar path leaves to the Python one (events, links, a key given
twice ...), which `rows.span_row` builds from the document's own values read by the validating decoder's code
(`otlp_json._message`), as on the slow path.

What this path takes it reads as the validating decoder does, and it takes less: every key an OTLP field in
lowerCamelCase, every value of its field's JSON type and range (integers as numbers or as decimal strings,
enums as numbers or names, doubles finite, ids hex of their size, at most one value set in an AnyValue, arrays
and maps nested at most `MAX_NESTING` deep). A document it does not take (`tables` gives None for it) is read
by the validating decoder, which reads it or says what is wrong with it (its messages stay the only ones): not
UTF-8, not one JSON object, a key given twice, keys in snake_case or older spellings (`instrumentationLibrary*`),
Tempo's `batches`, Jaeger's `data`, base64 ids, an unknown key, `NaN` ... Tests hold the two paths equal row for
row (tests/test_ingest_json_fast.py).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tracevals.collector import otlp_json
from tracevals.collector.conversion import columnar
from tracevals.collector.conversion.rows import _attrs, _dumps
from tracevals.collector.conversion.values import (
    EMPTY,
    NONE,
    NULL_TEXT,
    OTHER,
    STRING,
    TAGS,
    Values,
    c,
    doubles_json,
    map_distinct,
    string_json,
)
from tracevals.lake.rows import service_name
from tracevals.lake.schema import LOG_SCHEMA, SPAN_SCHEMA

__all__ = ["MAX_NESTING", "Refused", "tables"]

MAX_NESTING = 16  # arrays and maps inside each other, at most (the validating decoder allows more: it reads those)
GROUP_BYTES = 32 << 20  # newline-free documents parsed in one call up to this many bytes (memory stays bounded)
BLOCK_BYTES = 8 << 20  # the reader's blocks (of whole lines): parsed in parallel, then converted one by one


class Refused(Exception):
    """This path does not take the document: the validating decoder reads it (or says what is wrong)."""


_F = FieldDescriptor
_INT_TYPES = {
    _F.TYPE_INT32: pa.int32(), _F.TYPE_SINT32: pa.int32(), _F.TYPE_SFIXED32: pa.int32(),
    _F.TYPE_UINT32: pa.uint32(), _F.TYPE_FIXED32: pa.uint32(),
    _F.TYPE_INT64: pa.int64(), _F.TYPE_SINT64: pa.int64(), _F.TYPE_SFIXED64: pa.int64(),
    _F.TYPE_UINT64: pa.uint64(), _F.TYPE_FIXED64: pa.uint64(),
}  # fmt: skip
_NESTED = ("opentelemetry.proto.common.v1.ArrayValue", "opentelemetry.proto.common.v1.KeyValueList")
_ANY_VALUE = "opentelemetry.proto.common.v1.AnyValue"


# ---------------------------------------------------------------- parsing


def _string_leaves() -> pa.Schema:
    """The strings of the usual shape, declared (the reader infers the rest): a string value that looks like a
    date stays a string (inferred, a column of dates would become timestamps, which `_conform` refuses)."""
    kv = pa.list_(pa.struct([("key", pa.string()), ("value", pa.struct([("stringValue", pa.string())]))]))
    scope = pa.struct([("name", pa.string()), ("version", pa.string()), ("attributes", kv)])
    resource = pa.struct([("attributes", kv)])
    ids = [("traceId", pa.string()), ("spanId", pa.string())]
    span = pa.struct(
        [*ids, ("parentSpanId", pa.string()), ("traceState", pa.string()), ("name", pa.string()),
         ("attributes", kv), ("status", pa.struct([("message", pa.string())]))]
    )  # fmt: skip
    record = pa.struct(
        [*ids, ("severityText", pa.string()), ("eventName", pa.string()), ("attributes", kv),
         ("body", pa.struct([("stringValue", pa.string())]))]
    )  # fmt: skip

    def resource_list(scopes: str, items: str, item: pa.DataType) -> pa.DataType:
        inner = pa.struct([("scope", scope), (items, pa.list_(item)), ("schemaUrl", pa.string())])
        return pa.list_(pa.struct([("resource", resource), (scopes, pa.list_(inner)), ("schemaUrl", pa.string())]))

    return pa.schema(
        [
            ("resourceSpans", resource_list("scopeSpans", "spans", span)),
            ("resourceLogs", resource_list("scopeLogs", "logRecords", record)),
        ]
    )


_SCHEMA = _string_leaves()
_TOP = {"resourceSpans": ExportTraceServiceRequest.DESCRIPTOR, "resourceLogs": ExportLogsServiceRequest.DESCRIPTOR}


def _plausible(body: bytes) -> bool:
    """Cheap checks before parsing: UTF-8 (as json.loads reads bytes, strictly), an object first, no BOM."""
    if not isinstance(body, bytes) or len(body) >= (1 << 31) - 2:
        return False
    head = body[:256].lstrip()
    if not head.startswith(b"{"):
        return False
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _parse(text: bytes, rows: int, longest: int | None) -> pa.Table:
    """`text` read by Arrow's JSON reader: `rows` objects, one a line of at most `longest` bytes (None: one
    object across lines), else Refused. Lines go in blocks of `BLOCK_BYTES` or more, parsed on every core."""
    lines = longest is not None
    block = max(longest + 1, min(len(text) + 1, BLOCK_BYTES)) if longest is not None else len(text) + 1
    try:
        table = pj.read_json(
            io.BytesIO(text),
            read_options=pj.ReadOptions(block_size=max(block, 1 << 16), use_threads=lines),
            parse_options=pj.ParseOptions(
                explicit_schema=_SCHEMA, newlines_in_values=not lines, unexpected_field_behavior="infer"
            ),
        )
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise Refused(f"not read by Arrow's JSON reader: {exc}") from None
    if table.num_rows != rows or set(table.column_names) - set(_TOP):
        raise Refused("not one OTLP/JSON object per document")
    return table


# ---------------------------------------------------------------- checking against the descriptors


def _all(flags: pa.Array) -> bool:
    """Every flag true (nulls and an empty array count as true)."""
    return bool(pc.all(flags, skip_nulls=True, min_count=0).as_py())


def _is_null(array: pa.Array) -> bool:
    return pa.types.is_null(array.type) or array.null_count == len(array)


def _field_of(struct: pa.StructArray, name: str) -> pa.Array:
    """A child of a struct array with the struct's own nulls applied."""
    if struct.null_count == 0:
        return struct.field(name)
    return struct.flatten()[struct.type.get_field_index(name)]


def _scalar(fd: FieldDescriptor, array: pa.Array, where: str) -> pa.Array:
    """A scalar field's values, of the type the decoder reads them as (strings, ints of the field's width,
    doubles, booleans), or Refused where the decoder could read them otherwise or refuse them."""
    kind, t = fd.type, array.type
    try:
        if kind in (_F.TYPE_STRING, _F.TYPE_BYTES):
            if pa.types.is_string(t):
                return array
        elif kind == _F.TYPE_BOOL:
            if pa.types.is_boolean(t):
                return array
        elif kind in (_F.TYPE_DOUBLE, _F.TYPE_FLOAT):
            if pa.types.is_int64(t):
                return pc.cast(array, pa.float64())  # safe: refuses an integer a double cannot hold exactly
            if pa.types.is_float64(t) and _all(pc.is_finite(array)):
                return array  # NaN and infinities: the readers differ on their spellings ("Inf", "-NaN")
        elif kind == _F.TYPE_ENUM:
            if pa.types.is_int64(t):
                return pc.cast(array, pa.int32())
            if pa.types.is_string(t):
                names = {v.name: v.number for v in fd.enum_type.values}
                distinct = pc.unique(array.drop_null()).to_pylist()
                if all(name in names for name in distinct):
                    numbers = pa.array([names[name] for name in distinct], pa.int32())
                    return pc.take(numbers, pc.index_in(array, pa.array(distinct, pa.string())))
        elif kind in _INT_TYPES:
            if pa.types.is_int64(t):
                return pc.cast(array, _INT_TYPES[kind])  # safe: out of the field's range is refused
            # Arrow's cast reads decimal digits after an optional "-", as int() does, and hexadecimal after "0x",
            # which int() refuses (int() also reads " 1", "+1", "1_0", which the cast refuses: Refused)
            if pa.types.is_string(t) and not pc.any(pc.match_substring(array, "x", ignore_case=True)).as_py():
                return pc.cast(array, _INT_TYPES[kind])
    except pa.ArrowInvalid:
        pass
    raise Refused(f"{where}: {t} values")


@dataclass
class _Conformed:
    """A message's present fields (proto names), checked, of the types the decoder reads them as."""

    array: pa.Array  # the struct as parsed (its validity)
    fields: dict[str, Any]  # field name -> pa.Array (scalars), _Conformed (messages) or _Repeated
    descriptor: Descriptor

    def get(self, name: str) -> Any:
        return self.fields.get(name)

    def scalar(self, name: str, default: pa.Scalar | None = None) -> pa.Array:
        """A scalar field's values, absent ones as `default` (protobuf's default: "" or 0), else null."""
        fd = self.descriptor.fields_by_name[name]
        values = self.fields.get(name)
        t = pa.string() if fd.type in (_F.TYPE_STRING, _F.TYPE_BYTES) else _scalar_type(fd)
        if values is None:
            values = pa.nulls(len(self.array), t)
        return values if default is None else pc.fill_null(values, default)


@dataclass
class _Repeated:
    """A repeated message field: each parent's list (offsets from 0) and the conformed elements."""

    lengths: pa.Array  # int32, 0 for an absent list
    items: _Conformed


def _scalar_type(fd: FieldDescriptor) -> pa.DataType:
    if fd.type == _F.TYPE_BOOL:
        return pa.bool_()
    if fd.type in (_F.TYPE_DOUBLE, _F.TYPE_FLOAT):
        return pa.float64()
    if fd.type == _F.TYPE_ENUM:
        return pa.int32()
    return _INT_TYPES[fd.type]


def _conform(descriptor: Descriptor, array: pa.Array, where: str, nesting: int = 0) -> _Conformed:
    """`array` (a struct of an OTLP message, as inferred) checked field by field against `descriptor`: Refused
    for a key the message has not in lowerCamelCase, a value of the wrong type or range, an element of a
    repeated field that is null, an AnyValue with two values, or arrays and maps nested too deep."""
    if pa.types.is_null(array.type):
        return _Conformed(array, {}, descriptor)
    if not pa.types.is_struct(array.type):
        raise Refused(f"{where}: {array.type}, not an object")
    by_json = {fd.json_name: fd for fd in descriptor.fields}
    fields: dict[str, Any] = {}
    for child in array.type:
        fd = by_json.get(child.name)
        if fd is None:
            raise Refused(f"{where}.{child.name}: not a field of {descriptor.name} in lowerCamelCase")
        values = _field_of(array, child.name)
        if _is_null(values):
            continue  # JSON null: unset, as absent
        path = f"{where}.{child.name}"
        if fd.is_repeated:
            fields[fd.name] = _repeated(fd, values, path, nesting)
        elif fd.type == _F.TYPE_MESSAGE:
            deeper = nesting + (fd.message_type.full_name in _NESTED)
            if deeper > MAX_NESTING:
                raise Refused(f"{path}: nested deeper than {MAX_NESTING}")
            fields[fd.name] = _conform(fd.message_type, values, path, deeper)
        else:
            fields[fd.name] = _scalar(fd, values, path)
    if descriptor.full_name == _ANY_VALUE and len(fields) > 1:
        given = [pc.cast(_valid(fields[name]), pa.int8()) for name in fields]
        total = given[0]
        for more in given[1:]:
            total = pc.add(total, more)
        # which one protobuf would keep depends on the keys' order, which the reader does not keep
        if not _all(pc.less_equal(total, c(1, pa.int8()))):
            raise Refused(f"{where}: an AnyValue with two values")
    return _Conformed(array, fields, descriptor)


def _valid(value: Any) -> pa.Array:
    if isinstance(value, _Conformed):
        return pc.is_valid(value.array)
    if isinstance(value, _Repeated):
        raise TypeError("no repeated field in an AnyValue")
    return pc.is_valid(value)


def _repeated(fd: FieldDescriptor, values: pa.Array, where: str, nesting: int) -> Any:
    if not pa.types.is_list(values.type):
        raise Refused(f"{where}: {values.type}, not an array")
    lengths = pc.coalesce(pc.list_value_length(values), c(0, pa.int32()))
    items = pc.list_flatten(values)
    if items.null_count:  # [null]: the decoder refuses a null element
        raise Refused(f"{where}: a null element")
    if fd.type != _F.TYPE_MESSAGE:
        if len(items) and not pa.types.is_null(items.type):
            _scalar(fd, items, where)
        elif len(items):
            raise Refused(f"{where}: null elements")
        return None  # no repeated scalar field is read here (only checked)
    if pa.types.is_null(items.type) and len(items):
        raise Refused(f"{where}: null elements")
    return _Repeated(lengths, _conform(fd.message_type, items, f"{where}[]", nesting))


# ---------------------------------------------------------------- values


def _any_json(value: _Conformed | None, n: int, scalars: bool = True) -> pa.Array:
    """Each AnyValue's JSON text, as `_dumps(rows.any_value(v))` writes it ("null" for an unset one); with
    `scalars` False, only arrays', maps' and bytes' (null for the others: `Values` writes those)."""
    if value is None:
        return pa.repeat(c("null"), n) if scalars else pa.nulls(n, pa.string())
    texts: list[pa.Array] = []
    if scalars and (strings := value.get("string_value")) is not None:
        texts.append(string_json(strings))
    if scalars and (booleans := value.get("bool_value")) is not None:
        texts.append(pc.if_else(booleans, c("true"), c("false")))
    if scalars and (ints := value.get("int_value")) is not None:
        texts.append(pc.cast(ints, pa.string()))
    if scalars and (doubles := value.get("double_value")) is not None:
        texts.append(doubles_json(doubles))
    for name, opening, closing in (("array_value", "[", "]"), ("kvlist_value", "{", "}")):
        nested = value.get(name)
        if nested is None:
            continue
        items = nested.get("values")
        valid = pc.is_valid(nested.array)
        if items is None:
            texts.append(pc.if_else(valid, c(opening + closing), NULL_TEXT))
            continue
        parts = _any_json(items.items, len(items.items.array)) if name == "array_value" else _pairs(items)
        offsets = pc.cumulative_sum(pc.cast(items.lengths, pa.int32()))
        offsets = pa.concat_arrays([pa.array([0], pa.int32()), offsets])
        joined = pc.binary_join(pa.ListArray.from_arrays(offsets, parts), c(","))
        texts.append(pc.if_else(valid, pc.binary_join_element_wise(c(opening), joined, c(closing), EMPTY), NULL_TEXT))
    if (raw := value.get("bytes_value")) is not None:
        texts.append(map_distinct(raw, _bytes_json, pa.string()))
    if not scalars:
        return pc.coalesce(*texts) if texts else pa.nulls(n, pa.string())
    return pc.coalesce(*texts, c("null")) if texts else pa.repeat(c("null"), n)


def _bytes_json(text: str) -> str:
    try:
        return _dumps(otlp_json._bytes(text).hex())
    except otlp_json._Where:
        raise Refused("a bytes value that is not base64") from None


def _keys(kv: _Conformed) -> pa.Array:
    return kv.scalar("key", c(""))


def _pairs(kvlist: _Repeated) -> pa.Array:
    """`"key":value` of each key-value of a map (a key twice in one map: Refused, a dict keeps one)."""
    keys = _keys(kvlist.items)
    owner = pa.array(range(len(kvlist.lengths)), pa.int64())
    owner = pc.take(owner, _parents(kvlist.lengths))
    if len(pc.unique(pc.binary_join_element_wise(pc.cast(owner, pa.string()), keys, c("\x00")))) != len(keys):
        raise Refused("a key twice in one map")
    key_json = map_distinct(keys, _dumps, pa.string())
    return pc.binary_join_element_wise(key_json, c(":"), _any_json(kvlist.items.get("value"), len(keys)), EMPTY)


def _parents(lengths: pa.Array) -> pa.Array:
    """The parent index of each element of lists of these lengths."""
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum(pc.cast(lengths, pa.int32()))])
    return pc.list_parent_indices(pa.ListArray.from_arrays(offsets, pa.nulls(offsets[-1].as_py())))


_VALUE = pa.struct(
    [("string_value", pa.string()), ("bool_value", pa.bool_()), ("int_value", pa.int64()),
     ("double_value", pa.float64()), ("other_json", pa.string())]
)  # fmt: skip
_KV = pa.struct([("key", pa.string()), ("value", _VALUE)])


def _key_values(kvs: _Repeated | None, parents: int) -> pa.Array:
    """Repeated KeyValues as the columnar path reads them (`Values`): list<key, value(scalars, other_json)>."""
    if kvs is None:
        return pa.nulls(parents, pa.list_(_KV))
    items = kvs.items
    n = len(items.array)
    value = items.get("value")
    if value is None:
        values = pa.nulls(n, _VALUE)
    else:
        other_json = _any_json(value, n, scalars=False)
        values = pa.StructArray.from_arrays(
            [value.scalar("string_value"), value.scalar("bool_value"), value.scalar("int_value"),
             value.scalar("double_value"), other_json],
            fields=list(_VALUE), mask=pc.is_null(value.array),
        )  # fmt: skip
    kv = pa.StructArray.from_arrays([_keys(items), values], fields=list(_KV))
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum(pc.cast(kvs.lengths, pa.int32()))])
    return pa.ListArray.from_arrays(offsets, kv)


def _lengths(repeated: _Repeated | None, parents: int) -> pa.Array:
    return pa.repeat(c(0, pa.int32()), parents) if repeated is None else repeated.lengths


def _list_of(lengths: pa.Array, items: pa.Array) -> pa.Array:
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum(pc.cast(lengths, pa.int32()))])
    return pa.ListArray.from_arrays(offsets, items)


def _ids(strings: pa.Array, sizes: tuple[int, ...], where: str) -> pa.Array:
    """Hex ids as bytes; Refused unless every one is hex of one of `sizes` bytes (0: absent), which the
    decoder reads alike (anything else it reads as base64, or refuses, and says so)."""
    frame = pl.from_arrow(pa.table({"s": pc.fill_null(strings, "")}))
    assert isinstance(frame, pl.DataFrame)
    # not hex (an odd length, another character, spaces, which bytes.fromhex reads): null
    raw = frame.select(pl.col("s").str.decode("hex", strict=False)).to_series().to_arrow().cast(pa.binary())
    if not _all(pc.fill_null(pc.is_in(pc.binary_length(raw), pa.array(sizes, pa.int32())), False)):
        raise Refused(f"{where}: an id that is not hex of its size")
    return raw


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
        "trace_id": _ids(spans.scalar("trace_id"), (16,), "traceId"),
        "span_id": _ids(spans.scalar("span_id"), (8,), "spanId"),
        "parent_span_id": _ids(spans.scalar("parent_span_id"), (0, 8), "parentSpanId"),
        "name": spans.scalar("name", c("")),
        "kind": spans.scalar("kind", c(0, pa.int32())),
        "start_time_unix_nano": spans.scalar("start_time_unix_nano", c(0, pa.uint64())),
        "end_time_unix_nano": spans.scalar("end_time_unix_nano", c(0, pa.uint64())),
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


@dataclass
class _Group:
    """Documents parsed in one call, conformed: spans and log records of them all."""

    table: pa.Table
    traces: _Conformed | None = None  # ResourceSpans, every document's, flattened
    trace_lengths: pa.Array | None = None  # ResourceSpans per document
    logs: _Conformed | None = None
    log_lengths: pa.Array | None = None
    raw_resources: pa.Array | None = None  # ResourceSpans as parsed (for the Python path)


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


def _spans_table(group: _Group) -> pa.Table:
    traces = group.traces
    if traces is None or group.raw_resources is None:
        return SPAN_SCHEMA.empty_table()
    n_resources = len(traces.array)
    scope_spans = traces.get("scope_spans")
    if scope_spans is None:
        return SPAN_SCHEMA.empty_table()
    scopes = scope_spans.items
    n_scopes = len(scopes.array)
    spans = scopes.get("spans")
    if spans is None:
        return SPAN_SCHEMA.empty_table()
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
    return columnar.table_of(flat)


# ---------------------------------------------------------------- log records


def _resource_columns(resources: _Conformed, n: int) -> tuple[pa.Array, pa.Array]:
    """Per resource: its attributes JSON and service.name, as `rows.log_tuples` writes them."""
    resource = resources.get("resource")
    kvs = _key_values(resource.get("attributes") if resource is not None else None, n)
    return _attributes_json(kvs, "resource"), _service(kvs)


def _attributes_json(kvs: pa.Array, where: str) -> pa.Array:
    """Each list of key-values as a JSON object (`_dumps(rows._attrs(...))`); a key twice: Refused."""
    values = Values(pc.list_flatten(kvs))
    lengths = pc.coalesce(pc.list_value_length(kvs), c(0, pa.int32()))
    owner = pc.cast(_parents(lengths), pa.string())
    if len(pc.unique(pc.binary_join_element_wise(owner, values.key, c("\x00")))) != len(values.key):
        raise Refused(f"{where}: a key given twice")  # a dict keeps the first place and the last value
    joined = pc.binary_join(_list_of(lengths, values.fragment), c(","))
    return pc.binary_join_element_wise(c("{"), joined, c("}"), EMPTY)


def _service(kvs: pa.Array) -> pa.Array:
    """service.name: a string as it is, another value as its JSON text (`lake.rows.service_name`)."""
    values = Values(pc.list_flatten(kvs))
    lengths = pc.coalesce(pc.list_value_length(kvs), c(0, pa.int32()))
    owner = _parents(lengths)
    here = pc.equal(values.key, c("service.name"))
    text = pc.if_else(
        pc.equal(values.tag, TAGS[STRING]),
        values.string,
        pc.if_else(
            pc.equal(values.tag, TAGS[NONE]),
            NULL_TEXT,
            pc.if_else(pc.equal(values.tag, TAGS[OTHER]), values.other_json, values.json),
        ),
    )
    position: list[int | None] = [None] * len(kvs)  # per resource, its service.name (a key twice was refused)
    hits = pc.indices_nonzero(pc.fill_null(here, False))
    for resource, hit in zip(pc.take(owner, hits).to_pylist(), hits.to_pylist(), strict=True):
        position[resource] = hit
    return pc.take(text, pa.array(position, pa.int64()))


def _ts(values: pa.Array) -> pa.Array:
    return pc.cast(pc.cast(values, pa.int64()), LOG_SCHEMA.field("time").type)


def _logs_table(group: _Group) -> pa.Table:
    resources = group.logs
    if resources is None:
        return LOG_SCHEMA.empty_table()
    n_resources = len(resources.array)
    scope_logs = resources.get("scope_logs")
    if scope_logs is None:
        return LOG_SCHEMA.empty_table()
    scopes = scope_logs.items
    records = scopes.get("log_records")
    if records is None:
        return LOG_SCHEMA.empty_table()
    items = records.items
    n = len(items.array)
    if n == 0:
        return LOG_SCHEMA.empty_table()
    resource_json, service = _resource_columns(resources, n_resources)
    scope_of = _parents(records.lengths)
    resource_of = pc.take(_parents(scope_logs.lengths), scope_of)
    scope = scopes.get("scope")
    scope_name = scope.scalar("name") if scope is not None else pa.nulls(len(scopes.array), pa.string())
    trace_id = _log_id(items.scalar("trace_id"), 16, "traceId")
    span_id = _log_id(items.scalar("span_id"), 8, "spanId")
    time = items.scalar("time_unix_nano", c(0, pa.uint64()))
    observed = items.scalar("observed_time_unix_nano", c(0, pa.uint64()))
    zero = c(0, pa.uint64())
    observed_or_none = pc.if_else(pc.equal(observed, zero), c(None, pa.uint64()), observed)
    body = items.get("body")
    body_json = (
        pa.nulls(n, pa.string()) if body is None else pc.if_else(pc.is_valid(body.array), _any_json(body, n), NULL_TEXT)
    )
    severity = items.scalar("severity_number", c(0, pa.int32()))
    columns = {
        "trace_id": trace_id,
        "span_id": span_id,
        "time": _ts(pc.if_else(pc.equal(time, zero), observed, time)),
        "observed_time": _ts(observed_or_none),
        "event_name": _none_if_empty(items.scalar("event_name")),
        "severity_number": pc.if_else(pc.equal(severity, c(0, pa.int32())), c(None, pa.int32()), severity),
        "severity_text": _none_if_empty(items.scalar("severity_text")),
        "body": body_json,
        "attributes": _attributes_json(_key_values(items.get("attributes"), n), "logRecords.attributes"),
        "resource_attributes": pc.take(resource_json, resource_of),
        "scope_name": pc.take(_none_if_empty(scope_name), scope_of),
        "service_name": pc.take(service, resource_of),
    }
    return pa.table(columns).cast(LOG_SCHEMA)


def _none_if_empty(strings: pa.Array) -> pa.Array:
    return pc.if_else(pc.equal(strings, EMPTY), NULL_TEXT, strings)


def _log_id(strings: pa.Array, size: int, where: str) -> pa.Array:
    """A log record's id as lower-case hex, null where absent (`rows.log_tuples`)."""
    _ids(strings, (0, size), where)
    lowered = pc.utf8_lower(strings)
    return pc.if_else(pc.fill_null(pc.equal(lowered, EMPTY), True), NULL_TEXT, lowered)


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
    running = pa.concat_arrays([pa.array([0], pa.int64()), pc.cumulative_sum(pc.cast(values, pa.int64()))])
    ends = pc.cumulative_sum(pc.cast(lengths, pa.int64()))
    starts = pc.subtract(ends, pc.cast(lengths, pa.int64()))
    return pc.cast(pc.subtract(pc.take(running, ends), pc.take(running, starts)), pa.int64())


def _convert(table: pa.Table) -> list[tuple[pa.Table, pa.Table]]:
    """Each document's (spans, log records) tables: each block the reader made (whole documents) converted in
    one go, then cut per document."""
    out = []
    for batch in table.to_batches():
        out += _convert_block(pa.Table.from_batches([batch]))
    return out


def _convert_block(table: pa.Table) -> list[tuple[pa.Table, pa.Table]]:
    group = _conformed(table)
    spans, logs = _spans_table(group), _logs_table(group)
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


def tables(bodies: Sequence[bytes]) -> list[Converted | None]:
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
            _single(body, i, out)  # objects across lines: parsed alone
            continue
        style = _style(body)
        at = next((g for g, (known, _, _) in enumerate(groups) if _agrees(known, style)), None)
        if at is not None and groups[at][2] + len(body) > GROUP_BYTES:
            _group(bodies, groups.pop(at)[1], out)
            at = None
        if at is None:
            groups.append((style, [], 0))
            at = len(groups) - 1
        known, members, size = groups[at]
        members.append(i)
        groups[at] = (_merged(known, style), members, size + len(body))
    for _, members, _ in groups:
        _group(bodies, members, out)
    return out


def _group(bodies: Sequence[bytes], members: list[int], out: list[Converted | None]) -> None:
    if len(members) == 1:
        _single(bodies[members[0]], members[0], out)
        return
    texts = [bodies[i].rstrip(_BLANKS) for i in members]
    try:
        converted = _convert(_parse(b"\n".join(texts), len(members), max(map(len, texts))))
    except Refused:
        for i in members:  # one document the path does not take: the others alone
            _single(bodies[i], i, out)
        return
    for i, tables_ in zip(members, converted, strict=True):
        out[i] = tables_


def _single(body: bytes, i: int, out: list[Converted | None]) -> None:
    try:
        out[i] = _convert(_parse_one(body))[0]
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
