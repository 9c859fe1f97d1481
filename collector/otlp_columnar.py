"""OTLP trace requests to the lake's span table column by column: the collector's fast path.

`otlp_arrow.span_tuples` builds each span's row in Python, ~20 µs a span, most of it walking the decoded
protobuf attribute by attribute. Here a batch of requests is decoded in one call, natively, straight into
Arrow arrays (`decode`: ptars, protobuf to Arrow in Rust), and every column is computed over all spans at
once with Arrow and Polars kernels. What needs Python runs once per distinct thing, not once per span: the
normalizer's plan once per set of attribute keys (`normalize._sources`, the same plans), a span's kind
once per distinct (key set, values that decide the kind) (`normalize._kind`), a converter once per
distinct value it converts, a key's JSON text once per distinct key.

The result equals `otlp_arrow.spans_table` value for value; tests/test_otlp_columnar.py holds the two
equal on generated requests. Spans this path does not handle are built by `otlp_arrow.span_row` (their
requests decoded again by protobuf) and put back in their place: spans with events or links, with an
array, map or bytes attribute value, a key given twice, a key a framework rule reads
(`gcp.vertex.agent.*`), a string value over the truncation limit, or a tool span whose tool name would
come from elsewhere than a tool-name attribute. Resource and scope columns come from the Arrow form too,
except for a resource with such values (then from protobuf, as on the Python path).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import polars as pl
import ptars
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import descriptor_pb2, descriptor_pool
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from tracevals.collector import otlp_arrow
from tracevals.collector.otlp_arrow import Keep, _dumps, rows_table, scopes, span_row
from tracevals.lake import normalize as norm
from tracevals.lake.schema import SPAN_SCHEMA
from tracevals.model import attributes as tv

_handler: Any = None

_KIND_LABELS = pa.array(["unspecified", "internal", "server", "client", "producer", "consumer"])
_STATUS_LABELS = pa.array(["unset", "ok", "error"])
# the attribute keys whose values decide a span's kind (normalize._kind); the others only by presence
_KIND_VALUE_KEYS = (tv.SESSION_END, "openinference.span.kind", "traceloop.span.kind", "gen_ai.operation.name")
_FRAMEWORK_PREFIXES = ("gcp.vertex.agent.",)  # framework rules (frameworks.py): the Python path
_ESCAPED = [chr(c) for c in range(32)] + ['"', "\\"]  # what JSON escapes in a string (ensure_ascii=False)
# value type tags
_NONE, _STRING, _INT, _DOUBLE, _BOOL, _OTHER = range(6)
# Arguments of compute functions are Arrow scalars, never Python values: without numpy installed, pyarrow
# tries (and fails) to import it for every Python value it converts, which cost more than the kernels.
_TAGS = [pa.scalar(code, pa.int8()) for code in range(6)]
_EMPTY, _QUOTE, _NULL_TEXT = pa.scalar(""), pa.scalar('"'), pa.scalar(None, pa.string())
_FALSE, _ZERO = pa.scalar(False), pa.scalar(0, pa.int64())
_SCALARS: dict[tuple[Any, Any, Any], pa.Scalar] = {}


def _c(value: Any, type_: pa.DataType | None = None) -> pa.Scalar:
    """An Arrow scalar, made once: pa.scalar() itself tries the optional imports for every value."""
    key = (type(value), value, type_)
    if key not in _SCALARS:
        _SCALARS[key] = pa.scalar(value, type_)
    return _SCALARS[key]


# What the native decoder reads of a request: the OTLP messages with only the fields this module uses, under
# their OTLP field numbers (the decoder skips the others), and the values it only needs to see present (an
# AnyValue's array, map and bytes values, a span's events and links: those spans and resources take the
# Python path) as opaque bytes, not decoded. Building the nested arrays of every field cost ~20% of the
# decode. Requests reach the exporter checked by the receiver's full protobuf decode.
_READ: dict[str, tuple[Any, tuple[str, ...], tuple[str, ...]]] = {
    # message: (OTLP descriptor, fields read, fields seen as bytes)
    "AnyValue": (AnyValue.DESCRIPTOR, ("string_value", "bool_value", "int_value", "double_value"),
                 ("array_value", "kvlist_value", "bytes_value")),
    "KeyValue": (KeyValue.DESCRIPTOR, ("key", "value"), ()),
    "Status": (Status.DESCRIPTOR, ("message", "code"), ()),
    "Span": (Span.DESCRIPTOR, ("trace_id", "span_id", "parent_span_id", "name", "kind", "start_time_unix_nano",
                               "end_time_unix_nano", "attributes", "status"), ("events", "links")),
    "InstrumentationScope": (InstrumentationScope.DESCRIPTOR, ("name", "version"), ()),
    "ScopeSpans": (ScopeSpans.DESCRIPTOR, ("scope", "spans"), ()),
    "Resource": (Resource.DESCRIPTOR, ("attributes",), ()),
    "ResourceSpans": (ResourceSpans.DESCRIPTOR, ("resource", "scope_spans"), ()),
    "ExportTraceServiceRequest": (ExportTraceServiceRequest.DESCRIPTOR, ("resource_spans",), ()),
}  # fmt: skip


_FIELD = descriptor_pb2.FieldDescriptorProto


def _read_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The messages of `_READ` as one proto file (package tracevals_read), field numbers and types from OTLP's."""
    file = descriptor_pb2.FileDescriptorProto(name="tracevals_read.proto", package="tracevals_read", syntax="proto3")
    for name, (otlp, read, opaque) in _READ.items():
        message = file.message_type.add(name=name)
        oneofs: dict[str, int] = {}
        for field_name in read + opaque:
            field = otlp.fields_by_name[field_name]
            label = _FIELD.LABEL_REPEATED if field.is_repeated else _FIELD.LABEL_OPTIONAL
            out = message.field.add(name=field_name, number=field.number, label=label)
            if field.containing_oneof is not None:  # presence: which value of an AnyValue is set
                out.oneof_index = oneofs.setdefault(field.containing_oneof.name, len(oneofs))
            if field_name in opaque:
                out.type = _FIELD.TYPE_BYTES
            elif field.message_type is not None:
                out.type, out.type_name = field.type, f".tracevals_read.{field.message_type.name}"
            elif field.enum_type is not None:
                out.type = _FIELD.TYPE_INT32
            else:
                out.type = field.type
        for oneof in sorted(oneofs, key=oneofs.__getitem__):
            message.oneof_decl.add(name=oneof)
    return file


def _decoder() -> Any:
    global _handler
    if _handler is None:
        pool = descriptor_pool.DescriptorPool()
        file = pool.Add(_read_descriptor())
        _handler = ptars.HandlerPool([file]).get_for_message(file.message_types_by_name["ExportTraceServiceRequest"])
    return _handler


def _map_distinct(values: pa.Array, func: Callable[[Any], Any], out_type: pa.DataType) -> pa.Array:
    """`func` applied to each distinct non-null value of `values` (in Python), spread back row by row."""
    if values.null_count == len(values):
        return pa.nulls(len(values), out_type)
    distinct = pc.unique(values.drop_null())
    mapped = pa.array([func(v) for v in distinct.to_pylist()], out_type)
    return pc.take(mapped, pc.index_in(values, distinct))


def _doubles_json(doubles: pa.Array) -> pa.Array:
    """Each double's JSON text as `_dumps` writes it (repr; NaN, Infinity), once per distinct bit pattern
    (a hash of floats would make -0.0 and 0.0 one value)."""
    valid = pc.is_valid(doubles)
    if not pc.any(valid).as_py():
        return pa.nulls(len(doubles), pa.string())
    bits = pc.dictionary_encode(pc.coalesce(doubles, _c(0.0)).view(pa.int64()))
    texts = pa.array([_dumps(v) for v in bits.dictionary.view(pa.float64()).to_pylist()], pa.string())
    return pc.if_else(valid, pc.take(texts, bits.indices), _NULL_TEXT)


def _loads_then(func: Callable[[Any], Any]) -> Callable[[str], Any]:
    """A converter of the Python value that a value's JSON text (as `_dumps` wrote it) stands for."""
    return lambda text: func(json.loads(text))


class _Values:
    """Every attribute value of the batch (one row per key-value), typed, with its JSON text."""

    def __init__(self, kv: pa.StructArray) -> None:
        value = kv.field("value")
        fields = dict(zip([f.name for f in value.type], value.flatten(), strict=True))  # parent nulls applied
        self.string: pa.Array = fields["string_value"]
        ints, doubles, bools = fields["int_value"], fields["double_value"], fields["bool_value"]
        other = pc.or_kleene(
            pc.or_kleene(pc.is_valid(fields["array_value"]), pc.is_valid(fields["kvlist_value"])),
            pc.is_valid(fields["bytes_value"]),
        )
        tag = _full(len(kv), _NONE)
        for code, array in ((_STRING, self.string), (_INT, ints), (_DOUBLE, doubles), (_BOOL, bools)):
            tag = pc.if_else(pc.is_valid(array), _TAGS[code], tag)
        self.tag: pa.Array = pc.if_else(other, _TAGS[_OTHER], tag)
        self.key: pa.Array = kv.field("key")
        frame = pl.from_arrow(pa.table({"s": self.string}))
        assert isinstance(frame, pl.DataFrame)
        special = frame.select(pl.col("s").str.contains_any(_ESCAPED).fill_null(False)).to_series().to_arrow()
        # A plain string (nothing JSON escapes in it) has no JSON text here: it is its quoted self, and
        # quoting every string of the batch cost more than the few readers that need it (`_json_of`).
        plain = pc.and_kleene(pc.is_valid(self.string), pc.invert(special))
        escaped = _map_distinct(pc.if_else(special, self.string, _NULL_TEXT), _dumps, pa.string())
        text = pc.coalesce(
            escaped,
            pc.cast(ints, pa.string()),
            _doubles_json(doubles),
            pc.if_else(bools, _c("true"), _c("false")),
        )
        text = pc.coalesce(pc.if_else(pc.equal(self.tag, _TAGS[_OTHER]), _NULL_TEXT, text), _c("null"))
        self.json: pa.Array = pc.if_else(plain, _NULL_TEXT, text)
        # each key-value's JSON fragment, '"key":' + JSON text: a plain string's as '"key":"' + string + '"'
        self.key_codes = pc.dictionary_encode(self.key)  # keys repeat: each distinct one's JSON text once
        prefixes = [f"{_dumps(k)}:{q}" for k in self.key_codes.dictionary.to_pylist() for q in ("", '"')]
        prefix_at = pc.add(
            pc.multiply(pc.cast(self.key_codes.indices, pa.int64()), _c(2, pa.int64())), pc.cast(plain, pa.int64())
        )
        self.fragment: pa.Array = pc.binary_join_element_wise(
            pc.take(pa.array(prefixes, pa.string()), prefix_at),
            pc.if_else(plain, self.string, self.json),
            pc.if_else(plain, _QUOTE, _EMPTY),
            _EMPTY,
        )

    def take(self, index: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
        """(tag, JSON text, string value) at `index` (null index: tag none; a plain string: no JSON text, see
        `_json_of`)."""
        tag = pc.coalesce(pc.take(self.tag, index), _TAGS[_NONE])
        return tag, pc.take(self.json, index), pc.take(self.string, index)


def _first(
    values: _Values, starts: pa.Array, positions: list[pa.Array], facts: bool = False, convert: Any = None
) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(tag, JSON text, string) of the first candidate that counts: for canonical columns the first present,
    not null and not "" (the normalizer's rule); for facts (facts=True) the first that `convert` turns into
    a value."""
    n = len(starts)
    tag = _full(n, _NONE)
    text = pa.nulls(n, pa.string())
    string = pa.nulls(n, pa.string())
    chosen = pa.repeat(_c(False), n)
    for position in positions:
        index = pc.add(starts, position)
        t, j, s = values.take(index)
        if facts:
            counts = pc.is_valid(convert(t, j, s))
        else:
            empty = pc.and_kleene(pc.equal(t, _TAGS[_STRING]), pc.equal(s, _EMPTY))
            counts = pc.and_kleene(pc.not_equal(t, _TAGS[_NONE]), pc.invert(empty))
        counts = pc.and_kleene(pc.coalesce(counts, _FALSE), pc.invert(chosen))
        tag = pc.if_else(counts, t, tag)
        text = pc.if_else(counts, j, text)
        string = pc.if_else(counts, s, string)
        chosen = pc.or_kleene(chosen, counts)
    return tag, text, string


def _json_of(tag: pa.Array, text: pa.Array, string: pa.Array, wanted: pa.Array | None = None) -> pa.Array:
    """Every value's JSON text (where `wanted`): `text`, with the plain strings `_Values` keeps none for quoted."""
    missing = pc.and_kleene(pc.equal(tag, _TAGS[_STRING]), pc.is_null(text))
    if wanted is not None:
        missing = pc.and_kleene(missing, wanted)
    if not pc.any(missing).as_py():
        return text
    return pc.if_else(missing, pc.binary_join_element_wise(_QUOTE, string, _QUOTE, _EMPTY), text)


def _as_text(tag: pa.Array, text: pa.Array, string: pa.Array) -> pa.Array:
    """normalize._text: a string as it is, a number or boolean as its JSON text."""
    return pc.if_else(pc.equal(tag, _TAGS[_STRING]), string, pc.if_else(pc.equal(tag, _TAGS[_NONE]), _NULL_TEXT, text))


@cache
def _converter(func: Callable[[Any], Any], out_type: pa.DataType) -> Callable[[Any, Any, Any], pa.Array]:
    """A column converter applied through the value's JSON text, once per distinct value; the common
    exact cases (a string for a text column, an int for an int column ...) without Python."""

    fast_tag = _STRING if func in (norm._text, norm._json_text) else _INT if func in (norm._int, norm._fact_int) else -1

    def convert(tag: pa.Array, text: pa.Array, string: pa.Array) -> pa.Array:
        is_fast = pc.equal(tag, _c(fast_tag, pa.int8()))
        unset = pc.or_kleene(is_fast, pc.equal(tag, _TAGS[_NONE]))
        text = _json_of(tag, text, string, pc.invert(unset))
        slow = _map_distinct(pc.if_else(unset, _NULL_TEXT, text), _loads_then(func), out_type)
        if fast_tag == _STRING:
            return pc.if_else(is_fast, string, slow)
        if fast_tag == _INT:
            return pc.if_else(is_fast, pc.cast(pc.if_else(is_fast, text, _NULL_TEXT), out_type), slow)
        return slow

    return convert


def decode(payloads: Sequence[bytes]) -> pa.RecordBatch:
    """ExportTraceServiceRequests' protobuf encodings as Arrow, a row each (ValueError if one is malformed)."""
    return _decoder().list_to_record_batch(list(payloads))


def spans_table_columnar(
    batches: Sequence[pa.RecordBatch],
    payloads: Sequence[bytes],
    max_value_bytes: int | None = None,
    keep: Keep | None = None,
) -> pa.Table:
    """The spans of some requests as a table of `SPAN_SCHEMA`, equal to concatenating `otlp_arrow.spans_table`
    of each: `batches` are the requests decoded by `decode` (a row each), `payloads` their protobuf encodings
    (decoded with protobuf only where the Python path is needed: spans it builds, or resources it writes)."""
    batch = pa.concat_batches(list(batches)) if len(batches) != 1 else batches[0]
    resources = pc.list_flatten(batch.column(0))
    scope_lists = resources.field("scope_spans")
    per_scope = pc.list_flatten(scope_lists)
    span_lists = per_scope.field("spans")
    spans = pc.list_flatten(span_lists)
    n = len(spans)
    if n == 0:
        return SPAN_SCHEMA.empty_table()
    requests: list[ExportTraceServiceRequest] = []

    def scope_list() -> list[tuple[str, Any, str | None, str | None, Any]]:
        """Each scope's (resource JSON, service.name, name, version, ScopeSpans) from protobuf, as the
        Python path has them: decoded on first use only."""
        if not requests:
            requests.extend(ExportTraceServiceRequest.FromString(p) for p in payloads)
        listed = [scope for request in requests for scope in scopes(request)]
        if len(listed) != len(per_scope):
            raise ValueError("the native decoder and protobuf disagree on the requests' scopes")
        return listed

    scope_of = pc.list_parent_indices(span_lists)

    # ids, times, status
    ids = pl.from_arrow(
        pa.table({"t": spans.field("trace_id"), "s": spans.field("span_id"), "p": spans.field("parent_span_id")})
    )
    assert isinstance(ids, pl.DataFrame)
    hexed = ids.select(
        pl.col("t").bin.encode("hex"),
        pl.col("s").bin.encode("hex"),
        pl.when(pl.col("p").bin.size() > 0).then(pl.col("p").bin.encode("hex")).alias("p"),
        ((pl.col("t").bin.size() == 16) & (pl.col("s").bin.size() == 8) & pl.col("p").bin.size().is_in([0, 8])).alias(
            "ok"
        ),
    )
    trace_hex = hexed.get_column("t").to_arrow().cast(pa.string())
    valid = hexed.get_column("ok").to_arrow()
    start = pc.cast(spans.field("start_time_unix_nano"), pa.int64())
    end_raw = pc.cast(spans.field("end_time_unix_nano"), pa.int64())
    end = pc.if_else(pc.equal(end_raw, _ZERO), _c(None, pa.int64()), end_raw)
    status = spans.field("status")
    status_fields = dict(zip([f.name for f in status.type], status.flatten(), strict=True))
    code = pc.cast(pc.coalesce(status_fields["code"], _c(0, pa.int32())), pa.int64())
    status_label = pc.take(_STATUS_LABELS, _in_range(code, 3))
    message = status_fields["message"]
    kind = spans.field("kind")
    kind_label = pc.take(_KIND_LABELS, _in_range(pc.cast(kind, pa.int64()), 6))

    # attributes: one row per key-value, and each span's first row among them
    attr_lists = spans.field("attributes")
    lengths = pc.cast(pc.coalesce(pc.list_value_length(attr_lists), _c(0, pa.int32())), pa.int64())
    ends = pc.cumulative_sum(lengths)
    starts = pc.subtract(ends, lengths)
    kv = pc.list_flatten(attr_lists)
    values = _Values(kv)
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cast(ends, pa.int32())])
    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, values.fragment), _c(","))
    attributes_json = pc.binary_join_element_wise(_c("{"), joined, _c("}"), _EMPTY)
    # a span's key set, as one binary value: the numbers of its keys in the batch's dictionary of keys, as
    # fixed-width integers, laid end to end (the key rows' numbers seen through the spans' offsets, no copy)
    key_codes = values.key_codes
    key_names = key_codes.dictionary.to_pylist()
    codes = key_codes.indices  # int32
    if codes.offset:  # the buffers below are read from their start
        codes = pa.concat_arrays([codes])
    byte_offsets = pc.multiply(offsets, _c(4, pa.int32()))
    key_sets = pa.Array.from_buffers(pa.binary(), n, [None, byte_offsets.buffers()[1], codes.buffers()[1]])
    signature = pc.dictionary_encode(key_sets)
    signature_id = signature.indices
    signatures = [tuple(key_names[c] for c in memoryview(s).cast("i")) for s in signature.dictionary.to_pylist()]

    # what this path does not do: those spans are rebuilt by otlp_arrow.span_row
    per_span_other = _any_per_span(offsets, pc.equal(values.tag, _TAGS[_OTHER]))
    fallback = pc.or_kleene(
        pc.or_kleene(_nonempty(spans.field("events")), _nonempty(spans.field("links"))),
        per_span_other,
    )
    if max_value_bytes is not None:
        sizes = pc.coalesce(pc.cast(pc.binary_length(values.string), pa.int64()), _ZERO)
        long = pc.greater(sizes, _c(max_value_bytes, pa.int64()))
        fallback = pc.or_kleene(fallback, _any_per_span(offsets, long))
    python_signature = [
        len(set(keys)) != len(keys) or any(k.startswith(_FRAMEWORK_PREFIXES) for k in keys) for keys in signatures
    ]
    fallback = pc.or_kleene(fallback, pc.take(pa.array(python_signature), signature_id))

    # the kind: once per (key set, values of the keys that decide it)
    def value_of(keys_position: list[int | None]) -> tuple[pa.Array, pa.Array]:
        position = pc.take(pa.array(keys_position, pa.int64()), signature_id)
        tag, text, string = values.take(pc.add(starts, position))
        return tag, _json_of(tag, text, string)

    plans = [norm._PLANS.get((False, keys)) or norm._sources(keys, dict.fromkeys(keys), False) for keys in signatures]
    decide = [value_of([keys.index(k) if k in keys else None for keys in signatures]) for k in _KIND_VALUE_KEYS]
    kind_key = pc.binary_join_element_wise(
        pc.cast(signature_id, pa.string()),
        *(pc.if_else(pc.equal(tag, _TAGS[_OTHER]), _c("\x03"), text) for tag, text in decide),
        _c("\x01"),
        null_handling="replace",
        null_replacement="\x02",
    )
    kind_codes = pc.dictionary_encode(kind_key)
    kinds = []
    for key in kind_codes.dictionary.to_pylist():
        sig, *texts = key.split("\x01")
        keys = signatures[int(sig)]
        attrs: dict[str, Any] = dict.fromkeys(keys)
        for name, text in zip(_KIND_VALUE_KEYS, texts, strict=True):
            if text not in ("\x02", "\x03"):
                attrs[name] = json.loads(text)
            elif text == "\x03":
                attrs[name] = []  # an array or map: those spans take the Python path anyway
        kinds.append(norm._kind(attrs, plans[int(sig)][0], ""))
    span_kind = pc.take(pa.array(kinds, pa.string()), kind_codes.indices)
    is_tool = pc.equal(span_kind, _c("tool"))

    # the canonical columns: each plan's candidate keys, by position in the span's key list
    plan_of = pc.add(pc.multiply(pc.cast(signature_id, pa.int64()), _c(2, pa.int64())), pc.cast(is_tool, pa.int64()))
    tool_plans = [norm._PLANS.get((True, k)) or norm._sources(k, dict.fromkeys(k), True) for k in signatures]
    both = [p for pair in zip(plans, tool_plans, strict=True) for p in pair]
    columns: dict[str, pa.Array] = {
        "dialect": pc.take(pa.array([p[0] for p in plans], pa.string()), signature_id),
        "normalizer_version": pa.repeat(_c(norm.NORMALIZER_VERSION, pa.int32()), n),
        "kind": span_kind,
    }
    types = {f.name: f.type for f in SPAN_SCHEMA}
    sig_keys = [keys for keys in signatures for _ in (0, 1)]
    for i, (column, _, convert) in enumerate(plans[0][1] if plans else ()):
        positions = _candidate_positions([p[1][i][1] for p in both], sig_keys, plan_of)
        tag, text, string = _first(values, starts, positions)
        if convert is norm._text:
            columns[column] = _as_text(tag, text, string)
        else:
            columns[column] = _converter(convert, types[column])(tag, text, string)
    columns["error_type"] = pc.if_else(
        pc.and_kleene(pc.is_null(columns["error_type"]), pc.equal(status_label, _c("error"))),
        _c("error"),
        columns["error_type"],
    )
    fallback = pc.or_kleene(fallback, pc.and_kleene(is_tool, pc.is_null(columns["tool_name"])))
    for column, (_, convert) in norm.FACTS.items():
        per_plan = []
        for plan in both:
            found = next((f for f in plan[2] if f[0] == column), None)
            per_plan.append(found[1] if found else ())
        converter = _converter(convert, types[column]) if convert is not norm._fact_list else None
        if converter is None or not any(per_plan):
            columns[column] = pa.nulls(n, types[column])  # lists: only from array values (the Python path)
            continue
        positions = _candidate_positions(per_plan, sig_keys, plan_of)
        tag, text, string = _first(values, starts, positions, facts=True, convert=converter)
        columns[column] = converter(tag, text, string)
    columns["has_message_attributes"] = pc.take(pa.array([p[3] for p in plans], pa.bool_()), signature_id)

    fast = pc.and_kleene(valid, pc.invert(fallback))
    # the spans this path leaves to the Python one, built by it (unsampled: sampling comes next, in order)
    slow: dict[int, tuple[Any, ...] | None] = {}
    slow_index = pc.indices_nonzero(fallback).to_pylist()
    if slow_index:
        listed = scope_list()
        scope_index = scope_of.to_pylist()
        counts = pc.coalesce(pc.list_value_length(span_lists), _c(0, pa.int32()))
        first_of_scope = pc.subtract(pc.cumulative_sum(counts), counts).to_pylist()
        for i in slow_index:
            resource_json, service, scope_name, scope_version, scope_spans = listed[scope_index[i]]
            span = scope_spans.spans[i - first_of_scope[scope_index[i]]]
            slow[i] = span_row(span, resource_json, service, scope_name, scope_version, max_value_bytes)
    if keep is not None:
        # A sampler may remember what it decided for a trace (SessionSampler does): asked about every span
        # in the order of the requests, as the Python path asks, with each span's own session id.
        session_at = SPAN_SCHEMA.get_field_index("session_id")
        fast_flags = fast.to_pylist()
        sessions, traces = columns["session_id"].to_pylist(), trace_hex.to_pylist()
        kept = [False] * n
        for i in range(n):
            row = slow.get(i)
            if fast_flags[i]:
                kept[i] = keep(sessions[i], traces[i])
            elif row is not None:
                kept[i] = keep(row[session_at], row[0])
        fast = pc.and_kleene(fast, pa.array(kept))
        slow = {i: row for i, row in slow.items() if kept[i]}

    # resource JSON, service.name, scope name and version: per scope, for the scopes whose spans this path
    # writes (the others' values are never written, as on the Python path, where a bad one would fail)
    used = set(pc.unique(pc.filter(scope_of, fast)).to_pylist())
    scope_columns = _scope_columns(resources, scope_lists, per_scope, used)
    if scope_columns is None:  # values only the Python path writes exactly (a map in a resource ...)
        listed = scope_list()
        scope_columns = [
            pa.array(list(c), pa.string())
            for c in zip(*[s[:4] if i in used else (None,) * 4 for i, s in enumerate(listed)], strict=True)
        ]
    per_span = [pc.take(c, scope_of) for c in scope_columns]
    table = pa.table(
        {
            "trace_id": trace_hex,
            "span_id": hexed.get_column("s").to_arrow().cast(pa.string()),
            "parent_span_id": hexed.get_column("p").to_arrow().cast(pa.string()),
            "name": spans.field("name"),
            "span_kind": kind_label,
            "start_time": start,
            "end_time": end,
            "duration_ms": pc.divide(pc.cast(pc.subtract(end, start), pa.float64(), safe=False), _c(1e6)),
            "status_code": status_label,
            "status_message": pc.if_else(pc.equal(message, _EMPTY), _NULL_TEXT, message),
            "attributes": attributes_json,
            "resource_attributes": per_span[0],
            "scope_name": per_span[2],
            "scope_version": per_span[3],
            "events": pa.repeat(_c("[]"), n),
            "links": pa.repeat(_c("[]"), n),
            "service_name": per_span[1],
            **{f.name: columns[f.name] for f in SPAN_SCHEMA if f.name in columns},
        }
    )
    order = [pc.indices_nonzero(fast)]
    every = pc.all(fast).as_py() and fast.null_count == 0  # the usual batch: no copy through a filter
    parts = [(table if every else table.filter(fast)).cast(SPAN_SCHEMA)]
    written = {i: row for i, row in slow.items() if row is not None}
    if written:
        parts.append(rows_table(list(written.values()), SPAN_SCHEMA))
        order.append(pa.array(list(written), pa.uint64()))
    merged = pa.concat_tables(parts)
    if len(parts) == 1:
        return merged
    return merged.take(pc.sort_indices(pa.concat_arrays(order)))


def _scope_columns(
    resources: pa.Array, scope_lists: pa.Array, per_scope: pa.Array, used: set[int]
) -> list[pa.Array] | None:
    """Per scope: resource JSON, service.name, scope name, scope version, as the Python path writes them (None
    for a scope none of whose spans this path writes); None where that takes the Python path: a resource
    with an array, map or bytes value, a key given twice, or a service.name that is not a string."""
    resource = resources.field("resource")
    attr_lists = dict(zip([f.name for f in resource.type], resource.flatten(), strict=True))["attributes"]
    kv = pc.list_flatten(attr_lists)
    if len(kv) <= SMALL_VALUES:  # a batch holds a few resources: the kernels' fixed cost would dominate
        keys, tags, strings, fragments = _small_values(kv)
    else:
        values = _Values(kv)
        keys, tags, strings, fragments = (
            kv.field("key").to_pylist(),
            values.tag.to_pylist(),
            values.string.to_pylist(),
            values.fragment.to_pylist(),
        )
    lengths = pc.coalesce(pc.list_value_length(attr_lists), _c(0, pa.int32())).to_pylist()
    resource_json: list[str] = []
    service: list[str | None] = []
    start = 0
    for length in lengths:
        own = keys[start : start + length]
        if len(set(own)) != len(own) or _OTHER in tags[start : start + length]:
            return None
        at = own.index("service.name") + start if "service.name" in own else None
        if at is not None and tags[at] not in (_STRING, _NONE):
            return None
        resource_json.append("{" + ",".join(fragments[start : start + length]) + "}")
        service.append(strings[at] if at is not None else None)
        start += length
    scope = per_scope.field("scope")
    scope_fields = dict(zip([f.name for f in scope.type], scope.flatten(), strict=True))
    names, versions = scope_fields["name"].to_pylist(), scope_fields["version"].to_pylist()
    owner = pc.list_parent_indices(scope_lists).to_pylist()
    out: list[list[Any]] = [[], [], [], []]
    for i, r in enumerate(owner):
        row = (resource_json[r], service[r], names[i] or None, versions[i] or None) if i in used else (None,) * 4
        for column, value in zip(out, row, strict=True):
            column.append(value)
    return [pa.array(column, pa.string()) for column in out]


SMALL_VALUES = 2048  # up to this many resource key-values, `_small_values`; above, `_Values`' kernels
_VALUE_FIELDS = (("string_value", _STRING), ("int_value", _INT), ("double_value", _DOUBLE), ("bool_value", _BOOL))


def _small_values(kv: pa.StructArray) -> tuple[list[str], list[int], list[str | None], list[str]]:
    """(key, tag, string value, JSON fragment) of each key-value, as `_Values` has them, in Python."""
    keys: list[str] = []
    tags: list[int] = []
    strings: list[str | None] = []
    fragments: list[str] = []
    for item in kv.to_pylist():
        value = item["value"] or {}
        tag, python = _NONE, None
        for name, code in _VALUE_FIELDS:
            if value.get(name) is not None:
                tag, python = code, value[name]
        if any(value.get(name) is not None for name in ("array_value", "kvlist_value", "bytes_value")):
            tag, python = _OTHER, None
        keys.append(item["key"])
        tags.append(tag)
        strings.append(python if tag == _STRING else None)
        fragments.append(f"{_dumps(item['key'])}:{_dumps(python)}")
    return keys, tags, strings, fragments


def spans_table(
    request: ExportTraceServiceRequest, max_value_bytes: int | None = None, keep: Keep | None = None
) -> pa.Table:
    """One request's spans by this path, or by the Python path where the native decoder refuses it."""
    try:
        payload = request.SerializeToString()
        return spans_table_columnar([decode([payload])], [payload], max_value_bytes, keep)
    except (ValueError, TypeError, pa.ArrowException):
        return otlp_arrow.spans_table(request, max_value_bytes, keep)


def _full(n: int, code: int) -> pa.Array:
    """`n` tags `code`: from a buffer of repeated bytes (pa.repeat copies the scalar value by value, 50x slower)."""
    return pa.Array.from_buffers(pa.int8(), n, [None, pa.py_buffer(bytes((code,)) * n)])


def _in_range(codes: pa.Array, size: int) -> pa.Array:
    """`codes` where 0 <= code < size, else 0 (the first label)."""
    inside = pc.and_kleene(pc.greater_equal(codes, _ZERO), pc.less(codes, _c(size, pa.int64())))
    return pc.if_else(inside, codes, _ZERO)


def _nonempty(lists: pa.Array) -> pa.Array:
    return pc.greater(pc.coalesce(pc.list_value_length(lists), _c(0, pa.int32())), _c(0, pa.int32()))


def _any_per_span(offsets: pa.Array, flags: pa.Array) -> pa.Array:
    """Per span, whether any of its key-value rows is flagged (a running count of flags, read at the spans'
    offsets)."""
    running = pc.cumulative_sum(pc.cast(pc.coalesce(flags, _FALSE), pa.int64()))
    at = pc.take(pa.concat_arrays([pa.array([0], pa.int64()), running]), offsets)
    return pc.greater(pc.subtract(at[1:], at[:-1]), _ZERO)


def _candidate_positions(
    keys_per_plan: list[tuple[str, ...]], sig_keys: list[tuple[str, ...]], plan_of: pa.Array
) -> list[pa.Array]:
    """Per candidate rank, each span's position of that candidate key in its key list (null: none)."""
    ranks = max((len(k) for k in keys_per_plan), default=0)
    out = []
    for rank in range(ranks):
        table = [k.index(c[rank]) if rank < len(c) else None for c, k in zip(keys_per_plan, sig_keys, strict=True)]
        out.append(pc.take(pa.array(table, pa.int64()), plan_of))
    return out
