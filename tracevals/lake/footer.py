"""The key-value metadata of a local Parquet file's footer, read without pyarrow.

A reader of a local lake reads the footers of merged files (`retention.superseded`: which inputs a merge
replaced) before it queries anything; pyarrow's footer reader would cost the import of pyarrow, a third of
a small `tracevals sql`. The footer is a Thrift struct in the compact protocol (the Parquet format's
`FileMetaData`); its field 5 is `key_value_metadata`, a list of `KeyValue {1: key, 2: value}`. Every other
field is skipped by its wire type, so the reader needs no knowledge of the rest of the format.
"""

from __future__ import annotations

import os

_KEY_VALUE_METADATA = 5
# compact-protocol wire types
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT, _UUID = range(1, 14)


def footer_metadata(path: str | os.PathLike[str]) -> dict[bytes, bytes] | None:
    """The key-value metadata of the Parquet file at `path` (None when it has none); a `ValueError` when the
    file is not Parquet or its footer is cut short or malformed, an `OSError` when it cannot be read."""
    fd = open_file(path)
    try:
        size = os.fstat(fd).st_size
        problem = file_problem(fd, size)
        if problem is not None:
            raise ValueError(problem)
        length = int.from_bytes(os.pread(fd, 4, size - 8), "little")
        data = os.pread(fd, length, size - 8 - length)
    finally:
        os.close(fd)
    try:
        return _Reader(data).file_metadata()
    except IndexError:
        raise ValueError("Parquet footer cut short") from None


def open_file(path: str | os.PathLike[str]) -> int:
    """A descriptor to read `path` with `os.pread` (unbuffered: a buffered open and seek cost 6x as much a
    file on a lake of thousands). Non-blocking, so that a FIFO named like a part file opens at once (and
    reads as 0 bytes) instead of waiting for a writer."""
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK)


def file_problem(fd: int, size: int) -> str | None:
    """What a file's size (`size`) and its first 4 and last 8 bytes say is wrong with it as Parquet (no
    parse): too small, no `PAR1` magic at either end, or a footer longer than the file; None when it looks
    whole. `fd`: open on it (`open_file`)."""
    if size < 12:
        return f"{size} bytes, too small"
    head, tail = os.pread(fd, 4, 0), os.pread(fd, 8, size - 8)
    if head != b"PAR1" or tail[4:] != b"PAR1":
        return "not Parquet: no PAR1 magic"
    if int.from_bytes(tail[:4], "little") + 12 > size:
        return "footer cut short"
    return None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        value = self.data[self.at]
        self.at += 1
        return value

    def varint(self) -> int:
        value, self.at = varint(self.data, self.at)
        return value

    def binary(self) -> bytes:
        n = self.varint()
        if self.at + n > len(self.data):
            raise IndexError
        value = self.data[self.at : self.at + n]
        self.at += n
        return value

    def field(self, last: int) -> tuple[int, int]:
        """(field id, wire type) of the next field of a struct; (0, 0) at its end."""
        header = self.byte()
        if header == 0:
            return 0, 0
        delta, kind = header >> 4, header & 0x0F
        if delta:
            return last + delta, kind
        zigzag = self.varint()
        return (zigzag >> 1) ^ -(zigzag & 1), kind

    def skip(self, kind: int) -> None:
        """Past one value of wire type `kind` (a field's value: a boolean has none)."""
        self.at = _skip(self.data, self.at, kind)

    def list_header(self) -> tuple[int, int]:
        header = self.byte()
        count = header >> 4
        return self.count(self.varint() if count == 15 else count), header & 0x0F

    def count(self, n: int) -> int:
        """A collection's size, checked: every element takes a byte at least (a corrupt size must not loop)."""
        if n > len(self.data) - self.at:
            raise IndexError
        return n

    def file_metadata(self) -> dict[bytes, bytes] | None:
        found: dict[bytes, bytes] | None = None
        last = 0
        while True:
            last, kind = self.field(last)
            if kind == 0:
                return found
            if last != _KEY_VALUE_METADATA or kind != _LIST:
                self.skip(kind)
                continue
            count, element = self.list_header()
            if element != _STRUCT:
                raise ValueError("Parquet footer: key_value_metadata is not a list of structs")
            found = {}
            for _ in range(count):
                key = value = None
                inner = 0
                while True:
                    inner, item = self.field(inner)
                    if item == 0:
                        break
                    if inner in (1, 2) and item == _BINARY:
                        if inner == 1:
                            key = self.binary()
                        else:
                            value = self.binary()
                    else:
                        self.skip(item)
                if key is not None:
                    found[key] = b"" if value is None else value


def _skip(data: bytes, at: int, kind: int) -> int:
    """The position past one value of wire type `kind` at `at` (a field's value: a boolean has none there, and
    one byte in a list, set or map). One loop over an explicit stack, not a call per value: most of a footer is
    skipped (the row groups' column chunks, thousands of values), and a call per value made the footers of a
    lake's merged files a visible part of every command's start. An IndexError when the data ends first."""
    end = len(data)
    # the wire types as locals (a global's lookup is a dict's, in the innermost loop)
    true, false, byte, i16, i32, i64, double, binary, list_, set_, map_, struct, uuid = range(1, 14)
    booleans, collections, integers = (true, false), (list_, set_), (i16, i32, i64)
    # frames: a struct (None) reads field headers up to its stop byte; a collection [left, type of even, of odd]
    # counts down its elements (a map's keys and values alternate; a list's types are the same)
    stack: list[list[int] | None] = []
    while True:
        if kind == struct:
            stack.append(None)
        elif kind in collections:
            header = data[at]
            at += 1
            count = header >> 4
            if count == 15:
                count, at = varint(data, at)
            if count > end - at:  # every element takes a byte at least: a corrupt size must not loop
                raise IndexError
            if count:
                stack.append([count, header & 0x0F, header & 0x0F])
        elif kind == map_:
            count, at = varint(data, at)
            if count > end - at:
                raise IndexError
            if count:
                types = data[at]
                at += 1
                stack.append([2 * count, types >> 4, types & 0x0F])  # key type, value type
        elif kind in integers:
            while data[at] & 0x80:
                at += 1
            at += 1
        elif kind == binary:
            n = data[at]
            if n < 0x80:  # a length under 128, nearly every one: its one byte read here
                at += 1 + n
            else:
                n, at = varint(data, at)
                at += n
        elif kind == byte:
            at += 1
        elif kind == double:
            at += 8
        elif kind == uuid:
            at += 16
        elif kind not in booleans:
            raise ValueError(f"Parquet footer: unknown Thrift type {kind}")
        if at > end:
            raise IndexError
        # the next value to skip: the top frame's next field or element; done when the stack is empty
        while stack:
            top = stack[-1]
            if top is None:
                header = data[at]
                at += 1
                if header == 0:
                    stack.pop()
                    continue
                kind = header & 0x0F
                if not header >> 4:  # a long field id (zigzag varint): skipped
                    while data[at] & 0x80:
                        at += 1
                    at += 1
                if kind in booleans:  # a field's boolean is in its header
                    continue
                break
            left = top[0]
            if not left:
                stack.pop()
                continue
            top[0] = left - 1
            kind = top[1 + (left & 1)]
            if kind in booleans:  # an element's boolean is a byte of its own
                at += 1
                continue
            break
        else:
            if at > end:
                raise IndexError
            return at


def varint(data: bytes, at: int) -> tuple[int, int]:
    """An unsigned varint (LEB128: Thrift's compact protocol and protobuf's wire format alike) at `at`: (its
    value, the position past it). An IndexError when the data ends first, a ValueError past ten bytes (no
    64-bit value is longer)."""
    value = shift = 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, at
        shift += 7
        if shift >= 70:
            raise ValueError("varint longer than ten bytes")
