"""Arrow arrays from Python values without pyarrow's conversion of Python objects.

`pa.array`, `pa.scalar`, `pa.Table.from_pylist` and a Python value given to a compute function import
pandas whenever it is installed (the Ray extra brings it): ~0.2 s that a command pays for one small array
(`tests/test_cli_sql.py` holds the commands to it). These build the same arrays through Polars (a core
dependency, imported when first needed; `tracevals.spans`, which must not import Polars, keeps pyarrow's).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

import pyarrow as pa


def arrow_array(values: Iterable[Any], type_: pa.DataType) -> pa.Array:
    """Python values as an Arrow array of `type_`, built by Polars. pyarrow's own conversion of Python
    objects (`pa.array`, `pa.scalar`, `pa.Table.from_pylist`, a Python value given to a compute function)
    imports pandas whenever it is installed (the Ray extra brings it): ~0.2 s that a command would pay for
    one small array. A value that is not of the type raises `pa.ArrowInvalid`, as `pa.array` does."""
    import polars as pl

    try:
        array = pl.Series("values", list(values), dtype=_polars_type(type_), strict=True).to_arrow()
    except (TypeError, OverflowError, pl.exceptions.PolarsError) as exc:
        raise pa.ArrowInvalid(f"cannot read the values as {type_}: {exc}") from exc
    return array if array.type == type_ else array.cast(type_)


def arrow_scalar(value: Any, type_: pa.DataType) -> pa.Scalar:
    """`value` as an Arrow scalar of `type_`, without pyarrow's conversion (see `arrow_array`)."""
    return arrow_array([value], type_)[0]


@cache
def _polars_type(type_: pa.DataType) -> Any:
    """The Polars type of an Arrow one (once per type: the collector asks for a few types per batch)."""
    import polars as pl

    return pl.from_arrow(pa.nulls(0, type_)).dtype  # type: ignore[union-attr]
