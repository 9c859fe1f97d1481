"""The bytes of an OTLP/HTTP request: when they must arrive, and how HTTP/1.1 frames its body.

A body comes with a `Content-Length`, or in chunks (`Transfer-Encoding: chunked`, which Node's OTLP
exporters always send), or with neither (then it is empty: RFC 9112 6.3). Both framings are read the
same way: piece by piece, each piece charged (`charge(n)`, which may refuse by raising) before more is
read, so a chunked body is counted as it arrives and stopped at the size limit like a sized one.

Every read of a request, from its first byte to the end of its body (chunk-size lines and trailers
included), has one deadline (`DeadlineReader`): a client sending one byte a second gets its connection
closed when the deadline passes, however it spreads its bytes, and never holds more than it sent.
"""

from __future__ import annotations

import io
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message

_PIECE = 256 * 1024  # body bytes read (and charged) at a time
_LINE = 4096  # longest chunk-size line (size and extensions) or trailer line accepted
_TRAILERS = 16 * 1024  # longest trailer section accepted
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_DIGITS = re.compile(r"[0-9]{1,19}")
# Transfer codings that may come before `chunked` and are undone like the same content codings.
COMPRESSIONS = ("gzip", "x-gzip", "deflate")


class BodyError(ValueError):
    """A body this receiver will not read: `status` is the HTTP answer (400, 413 or 501)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Framing:
    """How a request's body is delimited: `length` bytes, or chunked (`length` None); `codings` are the
    transfer codings applied before `chunked` (outermost last); `close` when the connection cannot be
    reused after the answer (a request with both framings: RFC 9112 6.1)."""

    length: int | None
    codings: tuple[str, ...] = ()
    close: bool = False


def framing(headers: Message) -> Framing:
    """The body's framing from the request headers; `BodyError` (400, or 501 for a transfer coding this
    receiver does not speak) when it cannot be told for sure."""
    encodings = headers.get_all("Transfer-Encoding") or []
    lengths = headers.get_all("Content-Length") or []
    if encodings:
        codings = [c.strip().lower() for field in encodings for c in field.split(",") if c.strip()]
        if not codings or codings[-1] != "chunked":
            # RFC 9112 6.3: without chunked last, the body's end cannot be known
            raise BodyError(400, f"Transfer-Encoding {', '.join(encodings)!r} does not end in chunked")
        before = tuple(c for c in codings[:-1] if c != "identity")
        unknown = [c for c in before if c not in COMPRESSIONS]
        if unknown or "chunked" in before:
            raise BodyError(501, f"transfer coding {(unknown or ['chunked'])[0]!r} is not supported; use chunked")
        return Framing(None, before, close=bool(lengths))
    if not lengths:
        return Framing(0)
    values = {v.strip() for field in lengths for v in field.split(",")}
    value = values.pop() if len(values) == 1 else ""
    if not _DIGITS.fullmatch(value):  # int() would take '+5', ' 5' and '1_0'
        raise BodyError(400, f"Content-Length {', '.join(lengths)!r} is not a number of bytes")
    return Framing(int(value))


def read_body(rfile: io.BufferedIOBase, frame: Framing, limit: int, charge: Callable[[int], None]) -> bytes:
    """The body as sent (transfer codings before `chunked` still applied), at most `limit` bytes of it
    (`BodyError` 413 past that); `charge(n)` before each piece is kept. `ConnectionResetError` if the
    client goes away mid-body; `TimeoutError` (from the reader) past the request's deadline."""
    if frame.length is not None:
        if frame.length > limit:
            raise BodyError(413, f"body of {frame.length} bytes passes the {limit}-byte limit")
        return b"".join(_pieces(rfile, frame.length, charge))
    parts: list[bytes] = []
    total = 0
    while True:
        size = _chunk_size(_line(rfile, "chunk size"))
        if size == 0:
            _trailers(rfile)
            return b"".join(parts)
        total += size
        if total > limit:
            raise BodyError(413, f"chunked body passes the {limit}-byte limit")
        parts += _pieces(rfile, size, charge)
        if _line(rfile, "chunk end") not in (b"\r\n", b"\n"):
            raise BodyError(400, "a chunk is longer than its size line says")


def _pieces(rfile: io.BufferedIOBase, length: int, charge: Callable[[int], None]) -> list[bytes]:
    parts: list[bytes] = []
    while length:
        piece = rfile.read1(min(_PIECE, length))
        if not piece:
            raise ConnectionResetError("the client went away before the end of its body")
        charge(len(piece))  # what arrived, not what was announced
        parts.append(piece)
        length -= len(piece)
    return parts


def _chunk_size(line: bytes) -> int:
    text = line.split(b";", 1)[0].strip(b" \t\r\n")
    if not _HEX.fullmatch(text):
        raise BodyError(400, f"bad chunk size line {line[:40]!r}")
    return int(text, 16)


def _trailers(rfile: io.BufferedIOBase) -> None:
    """Read (and drop: OTLP defines none) the trailer fields up to the empty line that ends the body."""
    seen = 0
    while True:
        line = _line(rfile, "trailer")
        if line in (b"\r\n", b"\n"):
            return
        seen += len(line)
        if seen > _TRAILERS:
            raise BodyError(400, f"trailer section passes {_TRAILERS} bytes")


def _line(rfile: io.BufferedIOBase, what: str) -> bytes:
    """One CRLF-ended line of at most `_LINE` bytes. Read from what is buffered, one network read at a time
    (`readline` would wait for a whole line with a fresh timeout per byte)."""
    got = b""
    while True:
        buffered = rfile.peek(1)  # type: ignore[attr-defined]  # at most one network read, when empty
        if not buffered:
            raise ConnectionResetError("the client went away in the middle of its body")
        buffered = buffered[: _LINE + 1 - len(got)]
        end = buffered.find(b"\n")
        got += rfile.read(len(buffered) if end < 0 else end + 1)
        if len(got) > _LINE:
            raise BodyError(400, f"{what} line passes {_LINE} bytes")
        if end >= 0:
            return got


class DeadlineReader(io.RawIOBase):
    """A socket's reads, each bounded by the request's deadline: `idle` seconds for a request to begin,
    then `within` seconds from its first byte to the end of its body (`TimeoutError` past it)."""

    def __init__(self, sock: socket.socket, within: float) -> None:
        self.sock = sock
        self.within = within
        self.deadline = time.monotonic() + within
        self._waiting = False

    def expect_request(self, idle: float) -> None:
        """A new request may come: wait up to `idle` seconds for its first byte, then `within` for all."""
        self.deadline = time.monotonic() + idle
        self._waiting = True

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self.sock.settimeout(left)
        got = self.sock.recv_into(buffer)
        if got and self._waiting:
            self._waiting = False
            self.deadline = time.monotonic() + self.within
        return got
