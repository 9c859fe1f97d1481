"""The lake's span table: one row per span, lossless, plus canonical columns from the normalizer.

Attribute maps (span, resource, event and link attributes) are stored as JSON text with their
values' types kept (string, int, float, bool, arrays, maps): every engine can read JSON, and DuckDB
queries it with `->>` / `json_extract`. Canonical columns are derived, never the only copy.
"""

from __future__ import annotations

import array
import itertools
import struct

import pyarrow as pa

from tracevals.lake.columns import (
    CANONICAL_COLUMNS,
    DERIVED_DIR,
    LAKE_FORMAT_VERSION,
    LOG_COLUMNS,
    LOGS_DIR,
    RAW_COLUMNS,
    SCORE_COLUMNS,
    SCORES_DIR,
    SPANS_DIR,
    STEP_RELIABILITY_COLUMNS,
    STEP_RELIABILITY_DIR,
    Column,
)

__all__ = ["DERIVED_DIR", "LAKE_FORMAT_VERSION", "LOGS_DIR", "SCORES_DIR", "SPANS_DIR", "STEP_RELIABILITY_DIR"]

_TS = pa.timestamp("ns", tz="UTC")
# The Arrow type of each column type of `tracevals.lake.columns`.
ARROW_TYPES = {
    "string": pa.string(),
    "int64": pa.int64(),
    "int32": pa.int32(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "strings": pa.list_(pa.string()),
    "timestamp": _TS,
}


def _fields(columns: tuple[Column, ...]) -> list[pa.Field]:
    return [pa.field(c[0], ARROW_TYPES[c[1]], nullable=len(c) < 3 or bool(c[2])) for c in columns]


def _schema(columns: tuple[Column, ...]) -> pa.Schema:
    return pa.schema(_fields(columns), metadata={b"tracevals.lake_format_version": str(LAKE_FORMAT_VERSION).encode()})


# The tables' columns are defined once, in `tracevals.lake.columns` (with what each holds).
RAW_FIELDS = _fields(RAW_COLUMNS)  # copied from the span as it was received
CANONICAL_FIELDS = _fields(CANONICAL_COLUMNS)  # filled by the normalizer of `tracevals.spans`
SPAN_SCHEMA = _schema(RAW_COLUMNS + CANONICAL_COLUMNS)
SCORE_SCHEMA = _schema(SCORE_COLUMNS)  # one row per (target, evaluator): LAKE/scores/
STEP_RELIABILITY_SCHEMA = _schema(STEP_RELIABILITY_COLUMNS)  # one row per (run, variant, task, expected step)
LOG_SCHEMA = _schema(LOG_COLUMNS)  # one row per OTLP log record: LAKE/logs/date=…/hour=…/
#: The schema of each table, by folder.
SCHEMAS = {
    SPANS_DIR: SPAN_SCHEMA,
    LOGS_DIR: LOG_SCHEMA,
    SCORES_DIR: SCORE_SCHEMA,
    STEP_RELIABILITY_DIR: STEP_RELIABILITY_SCHEMA,
}


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of `schema` with no rows. (`pa.Schema.empty_table()` imports pandas, ~0.4 s that a command
    reading a small lake would otherwise pay for an empty relation.)"""
    return pa.Table.from_batches([], schema=schema)


def int64_scalar(value: int) -> pa.Scalar:
    """An int64 scalar from its bytes. `pa.scalar` (and a Python int given to a compute function) imports
    pandas whenever it is installed (~0.2 s); this runs in agents' processes too, where `lake.arrow`'s
    Polars is not imported."""
    return pa.Array.from_buffers(pa.int64(), 1, [None, pa.py_buffer(struct.pack("<q", value))])[0]


def string_array(texts: list[str]) -> pa.Array:
    """Python strings (no null) as an Arrow string array from its buffers (see `int64_scalar`)."""
    encoded = [t.encode() for t in texts]
    offsets = array.array("q", [0, *itertools.accumulate(len(e) for e in encoded)])
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.large_string(), len(encoded), buffers).cast(pa.string())


class ColumnMismatch(ValueError):
    """A column that cannot be read as its schema's type (`conformed_columns`)."""

    def __init__(self, name: str, found: pa.DataType, wanted: pa.DataType) -> None:
        super().__init__(f"column {name} is {found}, not {wanted}")
        self.name = name


def conformed_columns(table: pa.Table, schema: pa.Schema) -> list[pa.ChunkedArray | pa.Array]:
    """The columns of `schema`, in order and of its types, from `table`: dictionary columns decoded, large
    strings, timestamps of another unit (or int64 nanoseconds, as Spark's `nanosAsLong` reads them) and a
    `date` read as text cast; a column `table` lacks (an older file) is null; extra columns are left out.
    Raises `ColumnMismatch` for a column that cannot be cast. What every reader of rows from elsewhere
    (an engine's partition, a file live scoring reads) does to them."""
    import pyarrow.compute as pc

    columns: list[pa.ChunkedArray | pa.Array] = []
    for f in schema:
        if f.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, f.type))
            continue
        column = found = table.column(f.name)
        try:
            if pa.types.is_dictionary(column.type):
                column = column.cast(column.type.value_type)
            if column.type != f.type:
                if pa.types.is_large_string(column.type):
                    column = column.cast(pa.string())
                if f.name == "date" and pa.types.is_string(column.type):
                    column = pc.strptime(column, format="%Y-%m-%d", unit="s").cast(pa.date32())
                column = column.cast(f.type)
        except (pa.ArrowException, ValueError):
            raise ColumnMismatch(f.name, found.type, f.type) from None
        columns.append(column)
    return columns
