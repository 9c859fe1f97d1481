"""The lake's span table: one row per span, lossless, plus canonical columns from the normalizer.

Attribute maps (span, resource, event and link attributes) are stored as JSON text with their
values' types kept (string, int, float, bool, arrays, maps): every engine can read JSON, and DuckDB
queries it with `->>` / `json_extract`. Canonical columns are derived, never the only copy.
"""

from __future__ import annotations

import array
import datetime as dt
import importlib.util
import itertools
import operator
import struct
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any

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
    return python_array(texts, pa.string())


def python_array(values: Sequence[Any], type_: pa.DataType) -> pa.Array:
    """Python values (None for null) as an Arrow array of `type_`, the array `pa.array` gives.

    `pa.array` imports pandas whenever it is installed and not yet imported (~0.4 s: in an agent's process
    on its first export, in every `tracevals run`); then the lake's column types (`ARROW_TYPES`) are built
    here from their buffers instead, with the standard library's `array` (a few times `pa.array`'s time per
    column: under a tenth more of what exporting a span costs, off the agent's path). Values of another Python
    type than the column's (a float in an integer column, bytes in a string one) go to `pa.array`, which
    converts or refuses them as it always has."""
    if "pandas" not in sys.modules and _pandas_installed():
        try:
            built = _from_buffers(values, type_)
        except (TypeError, ValueError, OverflowError, UnicodeError):
            built = None
        if built is not None:
            return built
    return pa.array(values, type=type_, from_pandas=False)


def python_table(columns: Sequence[Sequence[Any]], schema: pa.Schema) -> pa.Table:
    """A table of `schema` from Python values, a sequence per column in its order (`python_array`)."""
    return pa.Table.from_arrays([python_array(c, f.type) for c, f in zip(columns, schema, strict=True)], schema=schema)


def pylist_table(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """`pa.Table.from_pylist(rows, schema=schema)` (a missing key is null, another key is left out), built by
    `python_array`."""
    return python_table([[row.get(name) for row in rows] for name in schema.names], schema)


@cache
def _pandas_installed() -> bool:
    return importlib.util.find_spec("pandas") is not None


def _bitmap(values: Sequence[Any], test: Callable[[Any, Any], bool], other: Any) -> pa.Buffer:
    """An Arrow bitmap (least significant bit first) of `test(value, other)` for each of `values`, built by
    C loops (`map`, `bytes.translate`, `int`): this runs per column of every batch an agent exports."""
    ones = bytes(map(test, values, itertools.repeat(other))).translate(_DIGITS)[::-1]
    return pa.py_buffer(int(ones or b"0", 2).to_bytes((len(values) + 7) // 8, "little"))


_DIGITS = bytes.maketrans(b"\x00\x01", b"01")


def _from_buffers(values: Sequence[Any], type_: pa.DataType) -> pa.Array | None:
    """`python_array`'s array, or None when a value is not of the column's Python type."""
    n = len(values)
    nulls = values.count(None)
    validity = _bitmap(values, operator.is_not, None) if nulls else None
    filled = [v for v in values if v is not None] if nulls else values  # the values, nulls left out
    types = set(map(type, filled))
    if pa.types.is_string(type_):
        if not types <= {str}:
            return None
        text = "".join(filled)
        data = text.encode()
        if len(data) == len(text):  # ASCII: a value's bytes are its characters
            lengths: Iterable[int] = map(len, values if not nulls else (v or "" for v in values))
        else:
            lengths = map(len, [b"" if v is None else v.encode() for v in values])
        if len(data) >= 2**31:  # beyond 32-bit offsets: pa.array chunks it
            return None
        offsets = array.array(_I32, itertools.accumulate(lengths, initial=0))
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls)
    if pa.types.is_list(type_):
        if not types <= {list, tuple}:
            return None
        child = _from_buffers(list(itertools.chain.from_iterable(filled)), type_.value_type)
        if child is None:
            return None
        lengths = map(len, values if not nulls else (v or () for v in values))
        buffers = [validity, pa.py_buffer(array.array(_I32, itertools.accumulate(lengths, initial=0)))]
        return pa.Array.from_buffers(type_, n, buffers, null_count=nulls, children=[child])
    if pa.types.is_boolean(type_):
        if not types <= {bool}:
            return None
        return pa.Array.from_buffers(type_, n, [validity, _bitmap(values, operator.is_, True)], null_count=nulls)
    if pa.types.is_date32(type_):  # a partition's day (`date=` folders): days since the epoch
        if not types <= {dt.date}:
            return None
        days = array.array(_I32, [0 if v is None else (v - _EPOCH).days for v in values])
        return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(days)], null_count=nulls)
    code = _ARRAY_CODES.get(pa.int64() if pa.types.is_timestamp(type_) else type_)
    if code is None or not types <= ({float, int} if code == "d" else {int}):
        return None
    if code == "d" and int in types and any(type(v) is int and not -(2**53) <= v <= 2**53 for v in filled):
        return None  # an int a double does not hold exactly: pa.array refuses it
    numbers = array.array(code, values if not nulls else [0 if v is None else v for v in values])
    return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(numbers)], null_count=nulls)


_I32 = "i" if array.array("i").itemsize == 4 else "l"
_EPOCH = dt.date(1970, 1, 1)
# The `array` code of each fixed-width column type.
_ARRAY_CODES = {pa.int64(): "q", pa.int32(): _I32, pa.float64(): "d"}


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
