"""OTLP/JSON documents parsed by Arrow's JSON reader and checked field by field against the OTLP messages'
descriptors: what `json_columnar` takes, and `Refused` for what it leaves to the validating decoder."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracevals.collector.conversion.values import (
    c,
)
from tracevals.lake.arrow import arrow_array

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
                    numbers = arrow_array([names[name] for name in distinct], pa.int32())
                    return pc.take(numbers, pc.index_in(array, arrow_array(distinct, pa.string())))
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


@dataclass
class _Group:
    """Documents parsed in one call, conformed: spans and log records of them all."""

    table: pa.Table
    traces: _Conformed | None = None  # ResourceSpans, every document's, flattened
    trace_lengths: pa.Array | None = None  # ResourceSpans per document
    logs: _Conformed | None = None
    log_lengths: pa.Array | None = None
    raw_resources: pa.Array | None = None  # ResourceSpans as parsed (for the Python path)
