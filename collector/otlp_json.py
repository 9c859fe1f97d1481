"""The OTLP/JSON decoder: OTLP/JSON documents as protobuf `Export*ServiceRequest`s.

The OTLP/JSON encoding differs from protobuf's canonical JSON mapping in ways
`google.protobuf.json_format` gets wrong on its own: trace and span ids are hex, not base64 (parsed
as base64 they silently become 24-byte ids), and enums are integers. `parse_json_traces` reads the
document against the messages' descriptors itself: ids from hex (of the right length), int64 from
numbers or strings, enums from numbers or names, keys in lowerCamelCase or as in the .proto, unknown
keys ignored; an error names the path to the value at fault. The receivers and `tracevals ingest`
decode JSON with it; the conversion to lake rows (`collector.conversion`) then reads protobuf only.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import threading
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tracevals.model.errors import UserError
from tracevals.model.json_text import whole_text


class OTLPDecodeError(UserError, ValueError):
    """The payload is not valid OTLP; the message says where."""


class _Where(Exception):
    """A decoding error on its way up, collecting the path to the value at fault."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.message, self.path = message, path

    def under(self, key: str) -> _Where:
        self.path = f"{key}.{self.path}" if self.path and not self.path.startswith("[") else f"{key}{self.path}"
        return self


# bytes fields that OTLP/JSON writes as hex (not base64, as the protobuf JSON mapping would), and their size
_HEX_IDS = {"trace_id": 16, "span_id": 8, "parent_span_id": 8}
_ID_MESSAGES = frozenset({"opentelemetry.proto.trace.v1.Span", "opentelemetry.proto.trace.v1.Span.Link"})
_ID_MESSAGES |= {"opentelemetry.proto.logs.v1.LogRecord"}
_INTS = frozenset(
    getattr(FieldDescriptor, f"TYPE_{t}")
    for t in ("INT64", "UINT64", "SINT64", "FIXED64", "SFIXED64", "INT32", "UINT32", "SINT32", "FIXED32", "SFIXED32")
)
_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
Converter = Callable[[Any], Any]


def _int(value: Any) -> int:
    if type(value) is int:
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise _Where(f"{value!r} is not an integer") from None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise _Where(f"expected an integer (or one as a string), got {type(value).__name__}")


def _float(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        if value in _FLOAT_WORDS:
            return _FLOAT_WORDS[value]
        try:
            return float(value)
        except ValueError:
            pass
    raise _Where(f"expected a number, got {value!r}")


def _typed(kind: type, name: str) -> Converter:
    def convert(value: Any) -> Any:
        if type(value) is not kind:
            raise _Where(f"expected {name}, got {type(value).__name__}")
        return value

    return convert


def _bytes(value: Any) -> bytes:
    if not isinstance(value, str):
        raise _Where(f"expected base64 text, got {type(value).__name__}")
    try:
        return base64.b64decode(
            value + "=" * (-len(value) % 4), altchars=b"-_" if "-" in value or "_" in value else None
        )
    except (binascii.Error, ValueError):
        raise _Where(f"{value!r} is not base64") from None


_ids = threading.local()  # base64 ids read by the current parse (see `_hex_bytes`)


def _sure_base64(value: str, size: int) -> bytes | None:
    """`value` as an id of `size` bytes written in base64, where that reading is the only one: the length
    base64 gives `size` bytes (24 / 12 characters padded, 22 / 11 not), and no hex reading of that size."""
    if len(value) not in (-(-size // 3) * 4, -(-size * 4 // 3)):
        return None
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == size else None


def _hex_bytes(size: int) -> Converter:
    def convert(value: Any) -> bytes:
        if not isinstance(value, str):
            raise _Where(f"expected a hex string, got {type(value).__name__}")
        raw: bytes | None
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            raw = None
        if raw is None or (raw and len(raw) != size):
            # Some exporters write ids in base64 (the protobuf JSON mapping's bytes), though OTLP/JSON says
            # hex. Where only the base64 reading gives an id of the right size it is taken, and counted so
            # the reader can say so; anything else is refused.
            decoded = _sure_base64(value, size)
            if decoded is None:
                if raw is None:
                    raise _Where(f"{value!r} is not hex (OTLP/JSON ids are hex), nor a {size}-byte id in base64")
                raise _Where(f"{value!r} is {len(raw)} bytes, expected {size}")
            _ids.base64 = getattr(_ids, "base64", 0) + 1
            return decoded
        return raw

    return convert


def base64_ids_read() -> int:
    """How many ids the last parse in this thread read as base64 (`parse_json_traces` / `_logs`)."""
    return int(getattr(_ids, "base64", 0))


def _enum(field: FieldDescriptor) -> Converter:
    names = {v.name: v.number for v in field.enum_type.values}

    def convert(value: Any) -> int:
        if type(value) is int:
            return value
        if isinstance(value, str) and value in names:
            return names[value]
        raise _Where(f"{value!r} is not a {field.enum_type.name}")

    return convert


# Attributes are most of a document: their usual shapes skip the general walk (same result).
_SCALAR_VALUES = {"stringValue": ("string_value", str), "boolValue": ("bool_value", bool)}


def _any_value(value: Any) -> dict[str, Any]:
    if type(value) is dict and len(value) == 1:
        ((key, item),) = value.items()
        known = _SCALAR_VALUES.get(key)
        if known is not None and type(item) is known[1]:
            return {known[0]: item}
        if key == "intValue" and type(item) is int:
            return {"int_value": item}
    return _message(AnyValue.DESCRIPTOR, value)


def _key_value(value: Any) -> dict[str, Any]:
    if type(value) is dict and len(value) == 2 and type(value.get("key")) is str and "value" in value:
        if value["value"] is None:  # JSON null: the field is unset (protobuf's JSON mapping)
            return {"key": value["key"]}
        try:
            return {"key": value["key"], "value": _any_value(value["value"])}
        except _Where as exc:
            raise exc.under("value") from None
    return _message(KeyValue.DESCRIPTOR, value)


_FAST = {AnyValue.DESCRIPTOR.full_name: _any_value, KeyValue.DESCRIPTOR.full_name: _key_value}


def _converter(message: Descriptor, field: FieldDescriptor) -> Converter:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        sub = field.message_type
        return _FAST.get(sub.full_name) or (lambda value: _message(sub, value))
    if field.type in _INTS:
        return _int
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return _float
    if field.type == FieldDescriptor.TYPE_BOOL:
        return _typed(bool, "true or false")
    if field.type == FieldDescriptor.TYPE_STRING:
        return _typed(str, "a string")
    if field.type == FieldDescriptor.TYPE_ENUM:
        return _enum(field)
    if field.type == FieldDescriptor.TYPE_BYTES:
        if message.full_name in _ID_MESSAGES and field.name in _HEX_IDS:
            return _hex_bytes(_HEX_IDS[field.name])
        return _bytes
    raise TypeError(f"unsupported field type {field.type} ({field.full_name})")  # not in OTLP


def _is_repeated(field: FieldDescriptor) -> bool:
    flag = getattr(field, "is_repeated", None)
    return bool(flag) if flag is not None else field.label == FieldDescriptor.LABEL_REPEATED


# The keys of OTLP before 1.0 (`InstrumentationLibrary`, renamed `InstrumentationScope` in 0.15), which
# older exporters still write, and Tempo's `batches`: read as their successors, never dropped as unknown keys.
_LEGACY_KEYS = {
    # Grafana Tempo's trace-by-id JSON names the resource spans `batches`
    "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest": {"batches": "resource_spans"},
    "opentelemetry.proto.trace.v1.ResourceSpans": {"instrumentationLibrarySpans": "scope_spans"},
    "opentelemetry.proto.trace.v1.ScopeSpans": {"instrumentationLibrary": "scope"},
    "opentelemetry.proto.logs.v1.ResourceLogs": {"instrumentationLibraryLogs": "scope_logs"},
    "opentelemetry.proto.logs.v1.ScopeLogs": {"instrumentationLibrary": "scope"},
}


@cache
def _plan(message: Descriptor) -> dict[str, tuple[str, Converter, bool]]:
    """JSON key (lowerCamelCase, the proto name, or a pre-1.0 key) -> (field name, converter, repeated?)."""
    plan = {}
    for field in message.fields:
        entry = (field.name, _converter(message, field), _is_repeated(field))
        plan[field.json_name] = plan[field.name] = entry
    for legacy, name in _LEGACY_KEYS.get(message.full_name, {}).items():
        plan[legacy] = plan[name]
    return plan


# Messages nested in one request at most: protobuf (upb) refuses to parse past 100, and the collector
# re-parses what its write-ahead log holds, so a deeper request accepted here could never be written.
MAX_DEPTH = 64
_depth = threading.local()


def _message(message: Descriptor, value: Any) -> dict[str, Any]:
    """An OTLP/JSON object as the keyword arguments of its protobuf message (unknown keys dropped)."""
    if not isinstance(value, dict):
        raise _Where(f"expected an object, got {type(value).__name__}")
    depth = getattr(_depth, "n", 0) + 1
    if depth > MAX_DEPTH:
        raise _Where(
            f"nested deeper than {MAX_DEPTH} messages (attribute values of arrays or maps inside each other?): "
            "flatten the value"
        )
    _depth.n = depth
    try:
        return _fields(message, value)
    finally:
        _depth.n = depth - 1


def _fields(message: Descriptor, value: dict[str, Any]) -> dict[str, Any]:
    plan = _plan(message)
    out: dict[str, Any] = {}
    for key, item in value.items():
        entry = plan.get(key)
        if entry is None or item is None:
            continue
        name, convert, repeated = entry
        if name in out:  # `resourceSpans` and `resource_spans` both: one would silently replace the other
            raise _Where(f"{key}: field {name} is given twice, under two spellings (send one)")
        try:
            if repeated:
                if not isinstance(item, list):
                    raise _Where(f"expected an array, got {type(item).__name__}")
                converted = []
                for i, element in enumerate(item):
                    try:
                        converted.append(convert(element))
                    except _Where as exc:
                        raise exc.under(f"[{i}]") from None
                out[name] = converted
            else:
                out[name] = convert(item)
        except _Where as exc:
            raise exc.under(key) from None
    return out


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key that appears twice (json.loads would keep only the last value)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _DuplicateKey(f"key {twice!r} appears twice in one object")
    return out


# A UTF-16 surrogate escaped in JSON text (`\ud83d`): JSON lets one stand alone, Unicode text cannot hold it.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def _whole_characters(value: Any) -> Any:
    """`value` with each lone surrogate of its strings (keys too) read as U+FFFD (`whole_text`). JavaScript's
    `JSON.stringify` writes one escaped whenever a string was cut inside a surrogate pair (a tool's output
    truncated mid-emoji): Node's OTLP/HTTP JSON exporter sends it so, its protobuf exporter encodes it as
    U+FFFD, and Go's `encoding/json` (the OpenTelemetry Collector's) reads it as U+FFFD. Refused, the whole
    request was lost (a 400 the exporter drops)."""
    if isinstance(value, str):
        return whole_text(value)
    if isinstance(value, dict):
        return {_whole_characters(k): _whole_characters(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_characters(v) for v in value]
    return value


def load_document(body: bytes | str | Mapping[str, Any]) -> Mapping[str, Any]:
    """A JSON body as an object: a key given twice, nesting past the parser, or not JSON at all is an
    `OTLPDecodeError` (never a value silently dropped, never a RecursionError). A lone surrogate in a string
    reads as U+FFFD (`_whole_characters`)."""
    if isinstance(body, Mapping):
        return body
    try:
        doc = json.loads(body, object_pairs_hook=_unique_keys)
        escaped = _SURROGATE_ESCAPE_BYTES if isinstance(body, bytes | bytearray) else _SURROGATE_ESCAPE
        if escaped.search(body):  # type: ignore[arg-type]
            doc = _whole_characters(doc)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise OTLPDecodeError(f"body is not JSON: {exc}") from None
    except _DuplicateKey as exc:
        raise OTLPDecodeError(f"{exc}: one of the values would be dropped; send each key once") from None
    except RecursionError:
        raise OTLPDecodeError(
            f"body is nested too deeply to read (more than {MAX_DEPTH} levels make no OTLP)"
        ) from None
    if not isinstance(doc, dict):
        raise OTLPDecodeError("body must be a JSON object with resourceSpans / resourceLogs")
    return doc


def _parse(kind: type[Message], doc: Mapping[str, Any], what: str) -> Any:
    """`doc` as a `kind` message: the JSON is walked once into the message's keyword arguments (ids
    from hex, int64 from strings, enums from numbers or names), and protobuf builds the message from
    them in C: much faster than `json_format.ParseDict`, which also reads ids as base64."""
    _ids.base64 = 0
    try:
        return kind(**_message(kind.DESCRIPTOR, dict(doc)))
    except _Where as exc:
        raise OTLPDecodeError(f"{exc.path}: {exc.message}" if exc.path else exc.message) from None
    except (TypeError, ValueError) as exc:  # a value protobuf itself refuses (out of range ...)
        raise OTLPDecodeError(f"not an OTLP {what} document: {str(exc).splitlines()[0]}") from None


def parse_json_traces(body: bytes | str | Mapping[str, Any]) -> ExportTraceServiceRequest:
    """An OTLP/JSON traces document (hex ids) as an `ExportTraceServiceRequest`."""
    request: ExportTraceServiceRequest = _parse(ExportTraceServiceRequest, load_document(body), "traces")
    return request


def parse_json_logs(body: bytes | str | Mapping[str, Any]) -> ExportLogsServiceRequest:
    """An OTLP/JSON logs document (hex ids) as an `ExportLogsServiceRequest`."""
    request: ExportLogsServiceRequest = _parse(ExportLogsServiceRequest, load_document(body), "logs")
    return request
