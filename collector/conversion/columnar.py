"""OTLP trace requests to the lake's span table column by column: the collector's fast path.

`rows.span_tuples` builds each span's row in Python, ~20 µs a span, most of it walking the decoded
protobuf attribute by attribute. Here a batch of requests is decoded in one call, natively, straight into
Arrow arrays (`native.decode`: ptars, protobuf to Arrow in Rust), and every column is computed over all
spans at once with Arrow and Polars kernels (`values.py`). What needs Python runs once per distinct thing,
not once per span: the normalizer's plan once per set of attribute keys (`normalize.plan_for`, the same
plans), a span's kind once per distinct (key set, values that decide the kind) (`reading.kind_of`), a
converter once per distinct value it converts, a key's JSON text once per distinct key.

The stages, in order (`spans_table_columnar`): flatten the requests into spans (`_Spans`); ids, times,
status and kind labels (`_raw_columns`); every attribute value and each span's key set (`_Attributes`);
which spans take the Python path (`_fallback`); the canonical columns and facts (`canonical.py`); the
Python path's rows (`_python_rows`); sampling (`_sample`); resource and scope columns (`scopes.py`);
the table, in request order (`_assemble`).

The result equals `rows.spans_table` value for value; tests/test_otlp_columnar.py holds the two equal on
generated requests. Spans this path does not handle are built by `rows.span_row` (their requests decoded
again by protobuf) and put back in their place: spans with events or links, with an array, map or bytes
value under a key the normalizer reads, a key given twice, a key a declaration reads as a failure's flag,
level or message (`reading.DEEP_KEYS`), a string value over the truncation limit, or a tool span whose tool
name would come from its span name. Resource and scope columns come from the Arrow form too, except for a
resource with such values (then from protobuf, as on the Python path).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracevals.collector.conversion import rows as python_path
from tracevals.collector.conversion.canonical import Signatures, canonical_columns, python_signatures
from tracevals.collector.conversion.native import decode
from tracevals.collector.conversion.rows import Keep, rows_table, scopes, span_row
from tracevals.collector.conversion.scopes import scope_columns_of
from tracevals.collector.conversion.values import (
    EMPTY,
    NULL_TEXT,
    OTHER,
    TAGS,
    ZERO,
    Values,
    any_per_span,
    c,
    in_range,
    nonempty,
)
from tracevals.lake.arrow import arrow_array
from tracevals.lake.schema import SPAN_SCHEMA, empty_table
from tracevals.spans import normalize as norm
from tracevals.spans import reading

__all__ = ["decode", "spans_table", "spans_table_columnar", "table_of"]

_KIND_LABELS = arrow_array(["unspecified", "internal", "server", "client", "producer", "consumer"], pa.string())
_STATUS_LABELS = arrow_array(["unset", "ok", "error"], pa.string())
# Every key whose value the normalizer reads (not only its presence): an array, map or bytes value under one of them
# takes the Python path, which reads it as such; under any other key it is only written.
_READ_KEYS = frozenset(
    reading.READ_KEYS
    | reading.DEEP_KEYS
    | {k for keys, _ in norm.FACTS.values() for k in keys}
    | {python_path.TRUNCATED}
)


@dataclass
class _Spans:
    """The requests flattened: resources, their scopes, every span, and each span's scope."""

    resources: pa.Array
    scope_lists: pa.Array
    per_scope: pa.Array
    span_lists: pa.Array
    spans: pa.Array
    scope_of: pa.Array
    payloads: Sequence[bytes]
    _listed: list[tuple[str, Any, str | None, str | None, Any]] = field(default_factory=list)
    _first_of_scope: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, batches: Sequence[pa.RecordBatch], payloads: Sequence[bytes]) -> _Spans:
        batch = pa.concat_batches(list(batches)) if len(batches) != 1 else batches[0]
        resources = pc.list_flatten(batch.column(0))
        scope_lists = resources.field("scope_spans")
        per_scope = pc.list_flatten(scope_lists)
        span_lists = per_scope.field("spans")
        spans = pc.list_flatten(span_lists)
        return cls(resources, scope_lists, per_scope, span_lists, spans, pc.list_parent_indices(span_lists), payloads)

    def scope_list(self) -> list[tuple[str, Any, str | None, str | None, Any]]:
        """Each scope's (resource JSON, service.name, name, version, ScopeSpans) from protobuf, as the
        Python path has them: decoded on first use only."""
        if not self._listed:
            requests = [ExportTraceServiceRequest.FromString(p) for p in self.payloads]
            self._listed = [scope for request in requests for scope in scopes(request)]
            if len(self._listed) != len(self.per_scope):
                raise ValueError("the native decoder and protobuf disagree on the requests' scopes")
        return self._listed

    def span_at(self, i: int, scope: int) -> Any:
        """Span `i` (of scope `scope`) as protobuf, for the Python path."""
        if not self._first_of_scope:
            counts = pc.coalesce(pc.list_value_length(self.span_lists), c(0, pa.int32()))
            self._first_of_scope = pc.subtract(pc.cumulative_sum(counts), counts).to_pylist()
        return self.scope_list()[scope][4].spans[i - self._first_of_scope[scope]]


def _raw_columns(spans: pa.Array) -> tuple[dict[str, pa.Array], pa.Array]:
    """The columns copied from the span (ids in hex, times, status, kind), and whether its ids are valid."""
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
    start = pc.cast(spans.field("start_time_unix_nano"), pa.int64())
    end_raw = pc.cast(spans.field("end_time_unix_nano"), pa.int64())
    end = pc.if_else(pc.equal(end_raw, ZERO), c(None, pa.int64()), end_raw)
    status = spans.field("status")
    status_fields = dict(zip([f.name for f in status.type], status.flatten(), strict=True))
    code = pc.cast(pc.coalesce(status_fields["code"], c(0, pa.int32())), pa.int64())
    message = status_fields["message"]
    columns = {
        "trace_id": hexed.get_column("t").to_arrow().cast(pa.string()),
        "span_id": hexed.get_column("s").to_arrow().cast(pa.string()),
        "parent_span_id": hexed.get_column("p").to_arrow().cast(pa.string()),
        "name": spans.field("name"),
        "span_kind": pc.take(_KIND_LABELS, in_range(pc.cast(spans.field("kind"), pa.int64()), 6)),
        "start_time": start,
        "end_time": end,
        "duration_ms": pc.divide(pc.cast(pc.subtract(end, start), pa.float64(), safe=False), c(1e6)),
        "status_code": pc.take(_STATUS_LABELS, in_range(code, 3)),
        "status_message": pc.if_else(pc.equal(message, EMPTY), NULL_TEXT, message),
    }
    return columns, hexed.get_column("ok").to_arrow()


@dataclass
class _Attributes:
    """Every attribute value of the batch (`values`), each span's first row among them (`starts`, `offsets`),
    its attributes JSON, and its key set: a number per distinct set (`signature_id`) and the sets' keys."""

    values: Values
    starts: pa.Array
    offsets: pa.Array
    json: pa.Array
    signature_id: pa.Array
    signatures: list[tuple[str, ...]]

    @classmethod
    def of(cls, spans: pa.Array) -> _Attributes:
        attr_lists = spans.field("attributes")
        lengths = pc.cast(pc.coalesce(pc.list_value_length(attr_lists), c(0, pa.int32())), pa.int64())
        ends = pc.cumulative_sum(lengths)
        starts = pc.subtract(ends, lengths)
        values = Values(pc.list_flatten(attr_lists))
        offsets = pa.concat_arrays([arrow_array([0], pa.int32()), pc.cast(ends, pa.int32())])
        joined = pc.binary_join(pa.ListArray.from_arrays(offsets, values.fragment), c(","))
        attributes_json = pc.binary_join_element_wise(c("{"), joined, c("}"), EMPTY)
        # a span's key set, as one binary value: the numbers of its keys in the batch's dictionary of keys, as
        # fixed-width integers, laid end to end (the key rows' numbers seen through the spans' offsets, no copy)
        key_names = values.key_codes.dictionary.to_pylist()
        codes = values.key_codes.indices  # int32
        if codes.offset:  # the buffers below are read from their start
            codes = pa.concat_arrays([codes])
        byte_offsets = pc.multiply(offsets, c(4, pa.int32()))
        key_sets = pa.Array.from_buffers(pa.binary(), len(spans), [None, byte_offsets.buffers()[1], codes.buffers()[1]])
        signature = pc.dictionary_encode(key_sets)
        signatures = [tuple(key_names[k] for k in memoryview(s).cast("i")) for s in signature.dictionary.to_pylist()]
        return cls(values, starts, offsets, attributes_json, signature.indices, signatures)


def _fallback(spans: pa.Array, attrs: _Attributes, max_value_bytes: int | None) -> pa.Array:
    """The spans this path does not do (see the module docstring): `rows.span_row` builds them."""
    values, offsets = attrs.values, attrs.offsets
    is_other = pc.equal(values.tag, TAGS[OTHER])
    # an array, map or bytes value is only written into the attributes JSON here: where the normalizer reads
    # it (a key it reads), or where its JSON text is not known, the span takes the Python path
    read = [k in _READ_KEYS or k.startswith(reading.READ_PREFIXES) for k in values.key_codes.dictionary.to_pylist()]
    key_read = pc.take(arrow_array(read, pa.bool_()), values.key_codes.indices)
    python_value = pc.and_kleene(is_other, pc.or_kleene(key_read, pc.is_null(values.other_json)))
    fallback = pc.or_kleene(
        pc.or_kleene(nonempty(spans.field("events")), nonempty(spans.field("links"))),
        any_per_span(offsets, python_value),
    )
    if max_value_bytes is not None:
        other_text = pc.if_else(is_other, values.other_json, NULL_TEXT)
        sizes = pc.coalesce(pc.binary_length(values.string), pc.binary_length(other_text))
        long = pc.greater(pc.coalesce(pc.cast(sizes, pa.int64()), ZERO), c(max_value_bytes, pa.int64()))
        fallback = pc.or_kleene(fallback, any_per_span(offsets, long))
    python_signature = python_signatures(attrs.signatures)
    return pc.or_kleene(fallback, pc.take(arrow_array(python_signature, pa.bool_()), attrs.signature_id))


def _python_rows(flat: _Spans, fallback: pa.Array, max_value_bytes: int | None) -> dict[int, tuple[Any, ...] | None]:
    """The spans this path leaves to the Python one, built by it (unsampled: sampling comes next, in order)."""
    slow: dict[int, tuple[Any, ...] | None] = {}
    slow_index = pc.indices_nonzero(fallback).to_pylist()
    if slow_index:
        listed = flat.scope_list()
        scope_index = flat.scope_of.to_pylist()
        for i in slow_index:
            resource_json, service, scope_name, scope_version, _ = listed[scope_index[i]]
            span = flat.span_at(i, scope_index[i])
            slow[i] = span_row(span, resource_json, service, scope_name, scope_version, max_value_bytes)
    return slow


def _sample(
    keep: Keep, fast: pa.Array, slow: dict[int, tuple[Any, ...] | None], sessions: pa.Array, traces: pa.Array
) -> tuple[pa.Array, dict[int, tuple[Any, ...] | None]]:
    """A sampler may remember what it decided for a trace (SessionSampler does): asked about every span in
    the order of the requests, as the Python path asks, with each span's own session id."""
    session_at = SPAN_SCHEMA.get_field_index("session_id")
    fast_flags = fast.to_pylist()
    session_ids, trace_ids = sessions.to_pylist(), traces.to_pylist()
    kept = [False] * len(fast_flags)
    for i, is_fast in enumerate(fast_flags):
        row = slow.get(i)
        if is_fast:
            kept[i] = keep(session_ids[i], trace_ids[i])
        elif row is not None:
            kept[i] = keep(row[session_at], row[0])
    return pc.and_kleene(fast, arrow_array(kept, pa.bool_())), {i: row for i, row in slow.items() if kept[i]}


def _assemble(columns: dict[str, pa.Array], fast: pa.Array, slow: dict[int, tuple[Any, ...] | None]) -> pa.Table:
    """This path's rows and the Python path's, in the order of the requests."""
    table = pa.table({name: columns[name] for name in SPAN_SCHEMA.names})
    order = [pc.indices_nonzero(fast)]
    every = pc.all(fast).as_py() and fast.null_count == 0  # the usual batch: no copy through a filter
    parts = [(table if every else table.filter(fast)).cast(SPAN_SCHEMA)]
    written = {i: row for i, row in slow.items() if row is not None}
    if written:
        parts.append(rows_table(list(written.values()), SPAN_SCHEMA))
        order.append(arrow_array(list(written), pa.uint64()))
    merged = pa.concat_tables(parts)
    if len(parts) == 1:
        return merged
    return merged.take(pc.sort_indices(pa.concat_arrays(order)))


def spans_table_columnar(
    batches: Sequence[pa.RecordBatch],
    payloads: Sequence[bytes],
    max_value_bytes: int | None = None,
    keep: Keep | None = None,
) -> pa.Table:
    """The spans of some requests as a table of `SPAN_SCHEMA`, equal to concatenating `rows.spans_table`
    of each: `batches` are the requests decoded by `decode` (a row each), `payloads` their protobuf encodings
    (decoded with protobuf only where the Python path is needed: spans it builds, or resources it writes)."""
    return table_of(_Spans.of(batches, payloads), max_value_bytes, keep)


def table_of(flat: _Spans, max_value_bytes: int | None = None, keep: Keep | None = None) -> pa.Table:
    """The spans of `flat` as a table of `SPAN_SCHEMA` (the stages of the module docstring)."""
    n = len(flat.spans)
    if n == 0:
        return empty_table(SPAN_SCHEMA)
    raw, valid = _raw_columns(flat.spans)
    attrs = _Attributes.of(flat.spans)
    sigs = Signatures(attrs.values, attrs.starts, attrs.signature_id, attrs.signatures)
    canonical, unknown_tool = canonical_columns(sigs, raw["name"], raw["status_code"], raw["status_message"], n)
    fallback = pc.or_kleene(_fallback(flat.spans, attrs, max_value_bytes), unknown_tool)
    fast = pc.and_kleene(valid, pc.invert(fallback))
    slow = _python_rows(flat, fallback, max_value_bytes)
    if keep is not None:
        fast, slow = _sample(keep, fast, slow, canonical["session_id"], raw["trace_id"])
    # resource JSON, service.name, scope name and version: per scope, for the scopes whose spans this path
    # writes (the others' values are never written, as on the Python path, where a bad one would fail)
    used = set(pc.unique(pc.filter(flat.scope_of, fast)).to_pylist())
    scope_columns = scope_columns_of(flat.resources, flat.scope_lists, flat.per_scope, used)
    if scope_columns is None:  # values only the Python path writes exactly (a map in a resource ...)
        scope_columns = [
            arrow_array(list(col), pa.string())
            for col in zip(*[s[:4] if i in used else (None,) * 4 for i, s in enumerate(flat.scope_list())], strict=True)
        ]
    per_span = [pc.take(col, flat.scope_of) for col in scope_columns]
    columns = {
        **raw,
        "attributes": attrs.json,
        "resource_attributes": per_span[0],
        "scope_name": per_span[2],
        "scope_version": per_span[3],
        "events": pa.repeat(c("[]"), n),
        "links": pa.repeat(c("[]"), n),
        "service_name": per_span[1],
        **canonical,
    }
    return _assemble(columns, fast, slow)


def spans_table(
    request: ExportTraceServiceRequest, max_value_bytes: int | None = None, keep: Keep | None = None
) -> pa.Table:
    """One request's spans by this path, or by the Python path where the native decoder refuses it."""
    try:
        payload = request.SerializeToString()
        return spans_table_columnar([decode([payload])], [payload], max_value_bytes, keep)
    except (ValueError, TypeError, pa.ArrowException):
        return python_path.spans_table(request, max_value_bytes, keep)
