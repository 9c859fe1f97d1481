"""`lake.footer`: a Parquet footer's key-value metadata, read without pyarrow, is what pyarrow reads."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tracevals.lake.footer import footer_metadata
from tracevals.lake.retention import MARKER


def _tables() -> list[tuple[str, pa.Table, dict[str, object]]]:
    wide = pa.table({f"c{i}": pa.array([i, None, 3], pa.int64()) for i in range(40)})  # field ids past 15
    nested = pa.table(
        {
            "s": pa.array([{"a": 1, "b": [True, False]}, None]),
            "m": pa.array([[("k", 1.5)], []], pa.map_(pa.string(), pa.float64())),
            "t": pa.array([1, 2], pa.timestamp("ns", tz="UTC")),
            "flag": pa.array([True, None]),
        }
    )
    many = {f"key-{i}": "v" * i for i in range(40)}  # a list of more than 14 entries: its size in a varint
    return [
        ("none", pa.table({"x": [1, 2]}), {}),
        ("wide", wide, {"write_statistics": True, "row_group_size": 1}),
        ("nested", nested, {"write_page_index": True}),
        ("many", pa.table({"x": ["a"]}).replace_schema_metadata(many), {}),
        ("marker", pa.table({"x": ["a"]}).replace_schema_metadata({MARKER: '["a.parquet", "b-é.parquet"]'}), {}),
        ("empty value", pa.table({"x": [1]}).replace_schema_metadata({"k": ""}), {}),
        ("bloom", pa.table({"trace_id": ["a" * 32, "b" * 32]}), {"compression": "zstd"}),
    ]


@pytest.mark.parametrize("name", [n for n, _, _ in _tables()])
def test_the_metadata_is_what_pyarrow_reads(tmp_path: Path, name: str) -> None:
    [(_, table, options)] = [t for t in _tables() if t[0] == name]
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, **options)  # type: ignore[arg-type]
    assert footer_metadata(path) == pq.read_metadata(path).metadata


def test_a_file_written_by_duckdb_and_by_the_lake_writer(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    duckdb.execute(f"COPY (SELECT range AS x, 'é' || range AS y FROM range(1000)) TO '{path}' (FORMAT parquet)")
    assert footer_metadata(path) == pq.read_metadata(path).metadata
    from tracevals.lake.writer import write_table_atomically

    written = write_table_atomically(pa.table({"trace_id": ["a" * 32]}), tmp_path / "lake", "zstd")
    assert footer_metadata(written) == pq.read_metadata(written).metadata


def test_a_corrupt_footer_is_a_value_error_never_a_hang(tmp_path: Path) -> None:
    """Cut short, not Parquet, or any byte of the footer changed: a `ValueError` (or some metadata), never
    another exception and never a loop over a corrupt size."""
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"x": [1, 2]}).replace_schema_metadata({MARKER: b'["a.parquet"]'}), path)
    data = path.read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[:-100])
    with pytest.raises(ValueError):
        footer_metadata(cut)
    cut.write_bytes(b"not parquet at all")
    with pytest.raises(ValueError):
        footer_metadata(cut)
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    rng = random.Random(7)
    for position in range(start, len(data) - 8):
        changed = bytearray(data)
        changed[position] = rng.choice([0x00, 0xFF, 0x19, 0xF9, changed[position] ^ 0x55])
        cut.write_bytes(bytes(changed))
        with contextlib.suppress(ValueError):
            footer_metadata(cut)
