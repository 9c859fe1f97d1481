"""Decoding and checking OTLP export requests, shared by the HTTP and gRPC receivers.

A request is checked before it is acknowledged, so that nothing the exporter thread cannot write ever
reaches the write-ahead log: ids of the wrong length (or all zero), and times past int64 (the lake
stores nanosecond timestamps) make a span or log record *rejected*. A request with some rejected items
is accepted with an OTLP partial success naming the count and the first problem; one whose every item
is rejected is bad data (HTTP 400 / gRPC INVALID_ARGUMENT).
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracevals.collector.otlp_json import OTLPDecodeError, base64_ids_read, parse_json_logs, parse_json_traces
from tracevals.collector.wal_format import LOGS, TRACES
from tracevals.lake.footer import varint

_log = logging.getLogger(__name__)
_said = {"base64": False, "utf8": False}
LATEST_NS = 2**63 - 1  # the last time a lake's timestamp[ns] holds (2262-04-11); OTLP's are uint64
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


class TooLarge(ValueError):
    """The decompressed body passes the receiver's size limit."""


class UnsupportedEncoding(ValueError):
    """A Content-Encoding the receiver does not speak."""


@dataclass
class Decoded:
    """A checked request: what to log (`payload`, protobuf bytes), its item count, and what was rejected."""

    kind: int
    request: Any
    payload: bytes
    accepted: int
    rejected: int = 0
    error: str = ""


_PIECE = 1024 * 1024  # decompressed bytes produced (and charged) at a time


def inflate(body: bytes, encoding: str, limit: int, charge: Callable[[int], None] | None = None) -> bytes:
    """`body` decoded from its Content-Encoding, never more than `limit` bytes (a gzip bomb stops there).
    `charge(n)` is called for every `n` decompressed bytes before more are produced (it may raise to stop:
    admission on the decompressed size)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        if len(body) > limit:
            raise TooLarge(f"body is {len(body)} bytes, over the {limit}-byte limit")
        return body
    if encoding in _FRAMED:
        return _inflate_frames(body, encoding, limit, charge)
    if encoding in ("snappy", "x-snappy-framed"):  # which of the two snappy formats: told by the first bytes,
        return _inflate_snappy(body, limit, charge)  # as the Collector's receivers tell them (its PR 12911)
    if encoding not in ("gzip", "deflate", "x-gzip"):
        raise UnsupportedEncoding(
            f"Content-Encoding {encoding!r} is not supported; use gzip, zstd, lz4, snappy, deflate or none"
        )
    # A gzip body may hold several members one after another (RFC 1952 2.2): all are the body. Anything
    # else after the last member is an error, never silently ignored.
    parts: list[bytes] = []
    rest, total = body, 0
    while True:
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)  # 32: accept a gzip or a zlib header
        while True:
            try:
                out = inflater.decompress(rest, min(_PIECE, limit - total + 1))
            except zlib.error as exc:
                raise OTLPDecodeError(f"body is not valid {encoding}: {exc}") from None
            total = _counted(total, len(out), limit, charge)
            parts.append(out)
            rest = inflater.unconsumed_tail
            if inflater.eof or (not rest and not out):
                break
        if not inflater.eof:
            raise OTLPDecodeError(f"{encoding} body is truncated")
        rest = inflater.unused_data
        if not rest:
            return b"".join(parts)
        if not rest.startswith(b"\x1f\x8b"):
            raise OTLPDecodeError(f"{len(rest)} bytes after the end of the {encoding} body that are no gzip member")


def _counted(total: int, n: int, limit: int, charge: Callable[[int], None] | None) -> int:
    """`total` with `n` more decompressed bytes: `TooLarge` past `limit`, else charged (`charge(n)`, which may
    raise to stop) before more are produced. The one rule every Content-Encoding is inflated by."""
    total += n
    if total > limit:
        raise TooLarge(f"decompressed body passes the {limit}-byte limit")
    if n and charge is not None:
        charge(n)
    return total


# The OpenTelemetry Collector's HTTP exporters offer these besides gzip (`compression: zstd` ...): zstd and lz4 as
# their frame formats, snappy as its framing format (older versions) or one block (`x-snappy-framed` names the
# framing format in newer ones); its receivers read all of them.
_FRAMED = {"zstd": "zstd", "lz4": "lz4"}
_SNAPPY_STREAM = b"\xff\x06\x00\x00sNaPpY"


def _inflate_frames(body: bytes, encoding: str, limit: int, charge: Callable[[int], None] | None) -> bytes:
    """A zstd or lz4 body (their frame formats), never more than `limit` bytes, charged as `inflate` charges."""
    import pyarrow as pa

    parts: list[bytes] = []
    total = 0
    try:
        stream = pa.CompressedInputStream(pa.BufferReader(body), _FRAMED[encoding])
        while True:
            out = stream.read(min(_PIECE, limit - total + 1))
            if not out:
                return b"".join(parts)
            total = _counted(total, len(out), limit, charge)
            parts.append(out)
    except (OSError, pa.ArrowException) as exc:
        raise OTLPDecodeError(f"body is not valid {encoding}: {str(exc).splitlines()[0]}") from None


def _inflate_snappy(body: bytes, limit: int, charge: Callable[[int], None] | None) -> bytes:
    """A snappy body: the framing format (chunks of compressed or plain data after the stream identifier), or
    one raw snappy block, never more than `limit` bytes. The chunks' checksums are not checked (a corrupt
    body fails as protobuf or JSON next)."""
    import pyarrow as pa

    blocks: list[tuple[bytes, bool]] = []  # (data, compressed)
    if body.startswith(_SNAPPY_STREAM):
        at = 0
        while at < len(body):
            if at + 4 > len(body):
                raise OTLPDecodeError("snappy body is truncated")
            kind, length = body[at], int.from_bytes(body[at + 1 : at + 4], "little")
            chunk = body[at + 4 : at + 4 + length]
            if len(chunk) != length:
                raise OTLPDecodeError("snappy body is truncated")
            if kind in (0x00, 0x01):  # compressed or uncompressed data, after a 4-byte checksum
                blocks.append((chunk[4:], kind == 0x00))
            elif kind <= 0x7F:  # reserved unskippable chunks (0x80-0xFE: skippable, padding; 0xFF: the identifier)
                raise OTLPDecodeError(f"snappy body has an unknown chunk type {kind:#04x}")
            at += 4 + length
    else:
        blocks.append((body, True))
    parts: list[bytes] = []
    total = 0
    for data, compressed in blocks:
        try:
            size = varint(data, 0)[0] if compressed else len(data)
        except (IndexError, ValueError):
            raise OTLPDecodeError("body is not valid snappy") from None
        total = _counted(total, size, limit, charge)  # before the block is decompressed: its size is known
        try:
            parts.append(pa.decompress(data, size, codec="snappy", asbytes=True) if compressed else data)
        except (OSError, pa.ArrowException) as exc:
            raise OTLPDecodeError(f"body is not valid snappy: {str(exc).splitlines()[0]}") from None
    return b"".join(parts)


def parse_request(message: Any, body: bytes, what: str) -> bytes:
    """Parse `body` into `message`; the bytes it was read from: `body`, or, when a string in it is not UTF-8,
    `body` with each such string's bad bytes as U+FFFD (`_whole_strings`). Python's protobuf refuses a
    proto3 string that is not UTF-8, and the whole request with it (a 400, the exporter's batch lost), where
    the OpenTelemetry Collector takes it; a C++ exporter in a release build can send one (a header's raw
    bytes, a file name). The repaired bytes are what the write-ahead log keeps."""
    try:
        message.ParseFromString(body)
        return body
    except (DecodeError, RuntimeError, ValueError) as exc:  # upb raises DecodeError; deep nesting, others
        error = exc
    repaired = _whole_strings(body, message.DESCRIPTOR) if "UTF-8" in str(error) else None
    if repaired is not None:
        try:
            message.ParseFromString(repaired)
        except (DecodeError, RuntimeError, ValueError):
            pass
        else:
            if not _said["utf8"]:
                _said["utf8"] = True
                _log.warning(
                    "tracevals: a protobuf request holds strings that are not UTF-8; read with U+FFFD for their "
                    "bad bytes (said once)"
                )
            return repaired
    raise OTLPDecodeError(f"not a protobuf {what}: {error}") from None


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _whole_strings(data: bytes, descriptor: Any, depth: int = 0) -> bytes | None:
    """`data` (a message of `descriptor`, in protobuf's wire format) with every string field's bytes made UTF-8
    (`errors="replace"`: U+FFFD), nested messages rewritten with their new lengths; every other field's bytes
    as they are. None when `data` is not well-formed wire format (the parser's error then stands)."""
    if depth > 64:
        return None
    out = bytearray()
    at = 0
    try:
        while at < len(data):
            key, body_at = varint(data, at)
            number, wire = key >> 3, key & 7
            if wire == 0:
                _, end = varint(data, body_at)
            elif wire in (1, 5):
                end = body_at + (8 if wire == 1 else 4)
            elif wire == 2:
                length, start = varint(data, body_at)
                end = start + length
                body = data[start:end]
                field = descriptor.fields_by_number.get(number)
                if field is not None and field.type == field.TYPE_STRING:
                    body = body.decode("utf-8", "replace").encode("utf-8")
                elif field is not None and field.type == field.TYPE_MESSAGE:
                    nested = _whole_strings(body, field.message_type, depth + 1)
                    if nested is None:
                        return None
                    body = nested
                out += data[at:body_at] + _varint_bytes(len(body)) + body
                at = end
                continue
            else:  # groups (3, 4) are in no OTLP message; 6 and 7 are no wire type
                return None
            if end > len(data):
                return None
            out += data[at:end]
            at = end
    except (IndexError, ValueError):
        return None
    return bytes(out) if at == len(data) else None


def _bad_span(span: Any) -> str:
    if len(span.trace_id) != 16 or span.trace_id == _ZERO_TRACE:
        return f"span {span.name!r}: traceId must be 16 bytes, not all zero (got {len(span.trace_id)})"
    if len(span.span_id) != 8 or span.span_id == _ZERO_SPAN:
        return f"span {span.name!r}: spanId must be 8 bytes, not all zero (got {len(span.span_id)})"
    if span.parent_span_id and len(span.parent_span_id) != 8:
        return f"span {span.name!r}: parentSpanId must be 8 bytes or empty (got {len(span.parent_span_id)})"
    if span.start_time_unix_nano > LATEST_NS or span.end_time_unix_nano > LATEST_NS:
        return f"span {span.name!r}: times past year 2262 cannot be stored"
    return ""


def _bad_record(record: Any) -> str:
    if record.trace_id and len(record.trace_id) != 16:
        return f"log record: traceId must be 16 bytes or empty (got {len(record.trace_id)})"
    if record.span_id and len(record.span_id) != 8:
        return f"log record: spanId must be 8 bytes or empty (got {len(record.span_id)})"
    if record.time_unix_nano > LATEST_NS or record.observed_time_unix_nano > LATEST_NS:
        return "log record: times past year 2262 cannot be stored"
    return ""


def _spans_all_valid(request: Any) -> int | None:
    """The span count of a request none of whose spans `_bad_span` rejects, else None: the usual request,
    checked with the tests inline (a call per span cost a quarter of the check)."""
    count = 0
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            spans = scope.spans
            for span in spans:
                trace, span_id = span.trace_id, span.span_id
                if (
                    len(trace) != 16
                    or len(span_id) != 8
                    or trace == _ZERO_TRACE
                    or span_id == _ZERO_SPAN
                    or len(span.parent_span_id) not in (0, 8)
                    or span.start_time_unix_nano > LATEST_NS
                    or span.end_time_unix_nano > LATEST_NS
                ):
                    return None
            count += len(spans)
    return count


def _check(request: Any, kind: int) -> tuple[int, int, str]:
    """(accepted, rejected, first error); rejected items are removed from `request` in place."""
    if kind == TRACES:
        valid = _spans_all_valid(request)
        if valid is not None:
            return valid, 0, ""
    accepted = rejected = 0
    first = ""
    check = _bad_span if kind == TRACES else _bad_record
    for items in _item_lists(request, kind):
        bad = [i for i, item in enumerate(items) if check(item)]
        if bad:
            first = first or check(items[bad[0]])
            for i in reversed(bad):
                del items[i]
        rejected += len(bad)
        accepted += len(items)
    return accepted, rejected, first


def _item_lists(request: Any, kind: int) -> Iterator[Any]:
    """Each scope's spans (or log records) of `request`, as the repeated field itself (deletable in place)."""
    if kind == TRACES:
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                yield scope.spans
    else:
        for resource in request.resource_logs:
            for scope in resource.scope_logs:
                yield scope.log_records


def first_rejected(request: Any, kind: int) -> str:
    """What the collector would reject first in `request` (`_bad_span`, `_bad_record`: ids of the wrong size
    or all zero, times past year 2262), or "" when it takes every item. `tracevals ingest` takes a file
    whole or not at all, so it refuses the file with this line where the collector answers partial success."""
    if kind == TRACES and _spans_all_valid(request) is not None:
        return ""
    check = _bad_span if kind == TRACES else _bad_record
    return next((problem for items in _item_lists(request, kind) for item in items if (problem := check(item))), "")


def decode(kind: int, body: bytes, is_json: bool) -> Decoded:
    """Decode and check an export request body; raises `OTLPDecodeError` for bad data."""
    if is_json:
        request = parse_json_traces(body) if kind == TRACES else parse_json_logs(body)
        if base64_ids_read() and not _said["base64"]:
            _said["base64"] = True
            _log.warning(
                "tracevals collector: a client sends OTLP/JSON ids in base64, not hex as OTLP/JSON writes them; "
                "read as base64 where that is the only reading (said once)"
            )
    else:
        request = ExportTraceServiceRequest() if kind == TRACES else ExportLogsServiceRequest()
        body = parse_request(
            request, body, "ExportTraceServiceRequest" if kind == TRACES else "ExportLogsServiceRequest"
        )
    accepted, rejected, error = _check(request, kind)
    if rejected and not accepted:
        raise OTLPDecodeError(f"every item was rejected; first: {error}")
    payload = body if not is_json and not rejected else request.SerializeToString()
    return Decoded(kind, request, payload, accepted, rejected, error)


__all__ = [
    "LATEST_NS", "LOGS", "TRACES", "Decoded", "OTLPDecodeError", "TooLarge", "UnsupportedEncoding", "decode",
    "first_rejected", "inflate", "parse_request",
]  # fmt: skip
