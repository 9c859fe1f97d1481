"""The write-ahead log's segment format: records written, and read back.

A segment (`wal-<seq>.log`) starts with its magic (`TVWAL002`); then records, each
`marker (4) | kind (1) | length (4) | count (4) | crc32 (4)` and the payload (a request's protobuf
encoding); the CRC covers kind, length, count and payload. A record is named by its `Ref` (segment,
byte offset), which is how a commit says what it covered and how the pipeline reads a record again after
a failed Parquet write. Segments of format 1 (`TVWAL001`: kind, length, crc32; no count) are still read.

Reading back is where damage is met: a torn last record (a crash in the middle of an append, never
acknowledged) is ignored; a damaged record between good ones (a bad sector, a foreign write) is skipped to
the next record marker whose CRC holds, saying how many bytes were skipped. Writing, syncing and deleting
segments is the log's (`wal.WriteAheadLog`).
"""

from __future__ import annotations

import errno
import logging
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

_log = logging.getLogger(__name__)

TRACES = 1
LOGS = 2
_KINDS = (TRACES, LOGS)
_MAGIC_V1 = b"TVWAL001"  # records: kind (1) | length (4) | crc32 (4); read, no longer written
MAGIC = b"TVWAL002"
_HEADER_V1 = struct.Struct("<BII")
_MARKER = b"\xd5\x1fW\x02"
_HEADER = struct.Struct("<4sBIII")  # marker, kind, length, count, crc
_CRC_FROM = 4  # the CRC covers the header from the kind on (without the CRC itself), then the payload
_READ_BUFFER = 1024**2  # replay: headers come from this buffer; a payload past it is read straight into its bytes


class Ref(NamedTuple):
    """Where a record is: its segment and byte offset."""

    seq: int
    offset: int


class Record(NamedTuple):
    ref: Ref
    kind: int
    items: int  # spans or log records in the payload (0 in a format-1 segment: not recorded)
    payload: bytes


def _crc(kind: int, length: int, count: int, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(struct.pack("<BII", kind, length, count)))


def encode(kind: int, payload: bytes, count: int) -> bytes:
    """One record's bytes (header and payload)."""
    return _HEADER.pack(_MARKER, kind, len(payload), count, _crc(kind, len(payload), count, payload)) + payload


def read_record(path: Path, ref: Ref) -> Record:
    """The record at `ref` in the segment `path`, read again (after a failed Parquet write)."""
    with open(path, "rb") as fh:
        v1 = fh.read(len(MAGIC)) == _MAGIC_V1
        fh.seek(ref.offset)
        if v1:
            kind, length, crc = _HEADER_V1.unpack(fh.read(_HEADER_V1.size))
            payload = fh.read(length)
            if len(payload) == length and zlib.crc32(payload) == crc:
                return Record(ref, kind, 0, payload)
        else:
            marker, kind, length, count, crc = _HEADER.unpack(fh.read(_HEADER.size))
            payload = fh.read(length)
            if marker == _MARKER and len(payload) == length and _crc(kind, length, count, payload) == crc:
                return Record(ref, kind, count, payload)
    raise OSError(errno.EIO, f"write-ahead log record {ref} does not read back intact")


def read_segment(path: Path, seq: int) -> Iterator[Record]:
    """The intact records of a segment, front to back. Each record is two reads (its header, then its payload
    straight into the bytes it is yielded as: one copy, no whole-segment buffer); its CRC is the only check.
    At the first record that does not check out, the rest of the segment is scanned in memory (`_scan`)."""
    try:
        fh = open(path, "rb", buffering=_READ_BUFFER)  # noqa: SIM115 (closed by the `with` below)
    except FileNotFoundError:  # deleted meanwhile: its records were all committed
        return
    with fh:
        size = os.fstat(fh.fileno()).st_size  # an old segment: nothing appends to it any more
        magic = fh.read(len(MAGIC))
        if magic == _MAGIC_V1:
            yield from _read_v1(path, seq, magic + fh.read())
            return
        if magic != MAGIC:
            if magic:
                _log.warning("tracevals collector: %s is not a write-ahead log segment; skipped", path)
            return
        pos = len(MAGIC)
        while pos + _HEADER.size <= size:
            header = fh.read(_HEADER.size)
            marker, kind, length, count, crc = _HEADER.unpack(header)
            start = pos + _HEADER.size
            if marker == _MARKER and kind in _KINDS and start + length <= size:
                payload = fh.read(length)
                if (
                    len(payload) == length
                    and zlib.crc32(payload, zlib.crc32(header[_CRC_FROM : _HEADER.size - 4])) == crc
                ):
                    yield Record(Ref(seq, pos), kind, count, payload)
                    pos = start + length
                    continue
            fh.seek(pos)
            yield from _scan(path, seq, fh.read(), pos)
            return


def _scan(path: Path, seq: int, data: bytes, base: int) -> Iterator[Record]:
    """The intact records in `data`, the part of a segment from byte `base` on, which starts with damage: a
    torn last record (a crash mid-append: never acknowledged), or a bad record between good ones. Goes on at
    each next marker that starts an intact record, if there is one."""
    pos = 0
    end = len(data)
    while pos + _HEADER.size <= end:
        marker, kind, length, count, crc = _HEADER.unpack_from(data, pos)
        start = pos + _HEADER.size
        if (
            marker == _MARKER
            and kind in _KINDS
            and start + length <= end
            and _crc(kind, length, count, data[start : start + length]) == crc
        ):
            yield Record(Ref(seq, base + pos), kind, count, data[start : start + length])
            pos = start + length
            continue
        nxt = pos
        while True:
            nxt = data.find(_MARKER, nxt + 1)
            if nxt < 0 or nxt + _HEADER.size > end:
                _log.warning("tracevals collector: %s ends in a torn record at byte %d; ignored", path, base + pos)
                return
            _, k, n, c, r = _HEADER.unpack_from(data, nxt)
            body = nxt + _HEADER.size
            if k in _KINDS and body + n <= end and _crc(k, n, c, data[body : body + n]) == r:
                break
        _log.warning(
            "tracevals collector: %s has %d damaged bytes at byte %d; skipped to the next intact record",
            path,
            nxt - pos,
            base + pos,
        )
        pos = nxt


def _read_v1(path: Path, seq: int, data: bytes) -> Iterator[Record]:
    pos = len(_MAGIC_V1)
    while pos + _HEADER_V1.size <= len(data):
        kind, length, crc = _HEADER_V1.unpack_from(data, pos)
        start = pos + _HEADER_V1.size
        payload = data[start : start + length]
        if len(payload) != length or zlib.crc32(payload) != crc or kind not in _KINDS:
            _log.warning("tracevals collector: %s has a torn record at byte %d; ignoring the rest", path, pos)
            return
        yield Record(Ref(seq, pos), kind, 0, payload)
        pos = start + length
