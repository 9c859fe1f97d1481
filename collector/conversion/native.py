"""The native decoder of the columnar path: ExportTraceServiceRequests to Arrow in one call (ptars, Rust)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ptars
import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

_handler: Any = None

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


def decode(payloads: Sequence[bytes]) -> pa.RecordBatch:
    """ExportTraceServiceRequests' protobuf encodings as Arrow, a row each (ValueError if one is malformed)."""
    return _decoder().list_to_record_batch(list(payloads))
