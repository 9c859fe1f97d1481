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
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size < 12:
            raise ValueError(f"{size} bytes, too small for Parquet")
        fh.seek(0)
        head = fh.read(4)
        fh.seek(size - 8)
        tail = fh.read(8)
        problem = parquet_problem(head, tail, size)
        if problem is not None:
            raise ValueError(problem)
        length = int.from_bytes(tail[:4], "little")
        fh.seek(size - 8 - length)
        data = fh.read(length)
    try:
        return _Reader(data).file_metadata()
    except IndexError:
        raise ValueError("Parquet footer cut short") from None


def parquet_problem(head: bytes, tail: bytes, size: int) -> str | None:
    """What the first 4 and last 8 bytes of a file of `size` bytes say is wrong with it as Parquet."""
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
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

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
        if kind in (_TRUE, _FALSE):
            return
        if kind == _BYTE:
            self.at += 1
        elif kind in (_I16, _I32, _I64):
            self.varint()
        elif kind == _DOUBLE:
            self.at += 8
        elif kind == _UUID:
            self.at += 16
        elif kind == _BINARY:
            self.binary()
        elif kind in (_LIST, _SET):
            count, element = self.list_header()
            for _ in range(count):
                self.skip_element(element)
        elif kind == _MAP:
            count = self.count(self.varint())
            if count:
                types = self.byte()
                for _ in range(count):
                    self.skip_element(types >> 4)
                    self.skip_element(types & 0x0F)
        elif kind == _STRUCT:
            self.skip_struct()
        else:
            raise ValueError(f"Parquet footer: unknown Thrift type {kind}")
        if self.at > len(self.data):
            raise IndexError

    def skip_element(self, kind: int) -> None:
        """A list's, set's or map's element: a boolean is a byte of its own there."""
        if kind in (_TRUE, _FALSE):
            self.at += 1
        else:
            self.skip(kind)

    def skip_struct(self) -> None:
        last = 0
        while True:
            last, kind = self.field(last)
            if kind == 0:
                return
            self.skip(kind)

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
