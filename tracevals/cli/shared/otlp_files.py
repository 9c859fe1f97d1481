"""The files `tracevals ingest` is given: what they are by name and first bytes, a folder's data files,
standard input kept as a file. Split from `cli/ingest.py`, which reads what they hold."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click
import pyarrow as pa

from tracevals.cli.shared.output import echo
from tracevals.collector.otlp_json import OTLPDecodeError

PROTOBUF_SUFFIXES = (".pb", ".bin", ".protobuf")


# compressed files, by their first bytes: what a file exporter or `gzip` / `zstd` leave
_COMPRESSED = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"BZh": "bz2"}
COMPRESSED_SUFFIXES = (".gz", ".gzip", ".zst", ".zstd", ".bz2")


def compression(path: Path) -> str | None:
    """The codec a file is compressed with (gzip, zstd, bz2), from its first bytes; None: not compressed."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    return next((codec for magic, codec in _COMPRESSED.items() if head.startswith(magic)), None)


def file_bytes(path: Path) -> bytes:
    """A file's bytes, decompressed when it is gzip, zstd or bz2 (whatever its name)."""
    codec = compression(path)
    if codec is None:
        return path.read_bytes()
    try:
        return bytes(pa.CompressedInputStream(pa.OSFile(str(path)), codec).read())
    except (OSError, pa.ArrowInvalid) as exc:
        raise OTLPDecodeError(f"not a whole {codec} file: {str(exc).splitlines()[0]}") from None


def stdin_copy(folder: Path) -> Path:
    """Standard input (`-`) copied to a file in `folder`, read then as a file given by name is (its format from
    its content, or `--input-format`: a name gives no `.pb` to go by)."""
    copy = folder / "stdin"
    with open(copy, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    return copy


def is_protobuf(path: Path, given: str) -> bool:
    """Whether a file is read as OTLP protobuf: `--input-format otlp-proto`, or its name (`.pb`, `.bin`,
    `.protobuf`, before a compression suffix)."""
    if given != "auto":
        return given == "otlp-proto"
    return data_name(path).endswith(PROTOBUF_SUFFIXES)


def data_name(path: Path) -> str:
    """A file's name as it says what the data is: lower case, a compression suffix (`.gz`, `.zst` ...) left out."""
    name = path.name.lower()
    for suffix in COMPRESSED_SUFFIXES:
        name = name.removesuffix(suffix)
    return name


# What a folder given to `ingest` is read for: files whose name (a compression suffix aside) says OTLP data.
DATA_SUFFIXES = (".json", ".jsonl", ".ndjson", *PROTOBUF_SUFFIXES)


def expanded(files: tuple[Path, ...]) -> tuple[Path, ...]:
    """The files given, a folder replaced by the data files beneath it (`DATA_SUFFIXES`, at any depth, in name
    order; hidden ones left out), as a Collector's `file` exporter with rotation leaves its output; the other
    files of a folder are said in one note. A folder with no data file is one error line."""
    out: list[Path] = []
    for given in files:
        if not given.is_dir():
            out.append(given)
            continue
        found: list[Path] = []
        other: list[Path] = []
        for path in sorted(given.rglob("*")):
            if any(part.startswith(".") for part in path.relative_to(given).parts) or not path.is_file():
                continue
            (found if data_name(path).endswith(DATA_SUFFIXES) else other).append(path)
        if not found:
            raise click.ClickException(
                f"{given}: a folder with no OTLP file in it (names ending {', '.join(DATA_SUFFIXES)}, or those "
                "gzip, zstd or bz2 compressed); name the files to read"
            )
        if other:
            shown = ", ".join(str(p.relative_to(given)) for p in other[:3]) + (", ..." if len(other) > 3 else "")
            files_not = "1 file" if len(other) == 1 else f"{len(other)} files"
            echo(f"note: {given}: {files_not} not read, not named as OTLP data: {shown}", err=True)
        out.extend(found)
    return tuple(out)
