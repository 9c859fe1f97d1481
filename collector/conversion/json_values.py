"""The values of a checked OTLP/JSON document (`json_check._Conformed`) as the lake writes them: each AnyValue's
JSON text, key-value lists, ids, for `json_columnar`'s spans and `json_logs`' log records."""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from tracevals.collector import otlp_json
from tracevals.collector.conversion.json_check import Refused, _all, _Conformed, _Repeated
from tracevals.collector.conversion.rows import _dumps
from tracevals.collector.conversion.values import (
    EMPTY,
    FALSE,
    NULL_TEXT,
    c,
    doubles_json,
    map_distinct,
    string_json,
)
from tracevals.collector.otlp_decode import LATEST_NS
from tracevals.lake.arrow import arrow_array

# ---------------------------------------------------------------- values


def _any_json(value: _Conformed | None, n: int, scalars: bool = True) -> pa.Array:
    """Each AnyValue's JSON text, as `_dumps(rows.any_value(v))` writes it ("null" for an unset one); with
    `scalars` False, only arrays', maps' and bytes' (null for the others: `Values` writes those)."""
    if value is None:
        return pa.repeat(c("null"), n) if scalars else pa.nulls(n, pa.string())
    texts: list[pa.Array] = []
    if scalars and (strings := value.get("string_value")) is not None:
        texts.append(string_json(strings))
    if scalars and (booleans := value.get("bool_value")) is not None:
        texts.append(pc.if_else(booleans, c("true"), c("false")))
    if scalars and (ints := value.get("int_value")) is not None:
        texts.append(pc.cast(ints, pa.string()))
    if scalars and (doubles := value.get("double_value")) is not None:
        texts.append(doubles_json(doubles))
    for name, opening, closing in (("array_value", "[", "]"), ("kvlist_value", "{", "}")):
        nested = value.get(name)
        if nested is None:
            continue
        items = nested.get("values")
        valid = pc.is_valid(nested.array)
        if items is None:
            texts.append(pc.if_else(valid, c(opening + closing), NULL_TEXT))
            continue
        parts = _any_json(items.items, len(items.items.array)) if name == "array_value" else _pairs(items)
        offsets = pc.cumulative_sum(pc.cast(items.lengths, pa.int32()))
        offsets = pa.concat_arrays([arrow_array([0], pa.int32()), offsets])
        joined = pc.binary_join(pa.ListArray.from_arrays(offsets, parts), c(","))
        texts.append(pc.if_else(valid, pc.binary_join_element_wise(c(opening), joined, c(closing), EMPTY), NULL_TEXT))
    if (raw := value.get("bytes_value")) is not None:
        texts.append(map_distinct(raw, _bytes_json, pa.string()))
    if not scalars:
        return pc.coalesce(*texts) if texts else pa.nulls(n, pa.string())
    return pc.coalesce(*texts, c("null")) if texts else pa.repeat(c("null"), n)


def _bytes_json(text: str) -> str:
    try:
        return _dumps(otlp_json._bytes(text).hex())
    except otlp_json._Where:
        raise Refused("a bytes value that is not base64") from None


def _keys(kv: _Conformed) -> pa.Array:
    return kv.scalar("key", c(""))


def _pairs(kvlist: _Repeated) -> pa.Array:
    """`"key":value` of each key-value of a map (a key twice in one map: Refused, a dict keeps one)."""
    keys = _keys(kvlist.items)
    owner = arrow_array(range(len(kvlist.lengths)), pa.int64())
    owner = pc.take(owner, _parents(kvlist.lengths))
    if len(pc.unique(pc.binary_join_element_wise(pc.cast(owner, pa.string()), keys, c("\x00")))) != len(keys):
        raise Refused("a key twice in one map")
    key_json = map_distinct(keys, _dumps, pa.string())
    return pc.binary_join_element_wise(key_json, c(":"), _any_json(kvlist.items.get("value"), len(keys)), EMPTY)


def _parents(lengths: pa.Array) -> pa.Array:
    """The parent index of each element of lists of these lengths."""
    offsets = pa.concat_arrays([arrow_array([0], pa.int32()), pc.cumulative_sum(pc.cast(lengths, pa.int32()))])
    return pc.list_parent_indices(pa.ListArray.from_arrays(offsets, pa.nulls(offsets[-1].as_py())))


_VALUE = pa.struct(
    [("string_value", pa.string()), ("bool_value", pa.bool_()), ("int_value", pa.int64()),
     ("double_value", pa.float64()), ("other_json", pa.string())]
)  # fmt: skip
_KV = pa.struct([("key", pa.string()), ("value", _VALUE)])


def _key_values(kvs: _Repeated | None, parents: int) -> pa.Array:
    """Repeated KeyValues as the columnar path reads them (`Values`): list<key, value(scalars, other_json)>."""
    if kvs is None:
        return pa.nulls(parents, pa.list_(_KV))
    items = kvs.items
    n = len(items.array)
    value = items.get("value")
    if value is None:
        values = pa.nulls(n, _VALUE)
    else:
        other_json = _any_json(value, n, scalars=False)
        values = pa.StructArray.from_arrays(
            [value.scalar("string_value"), value.scalar("bool_value"), value.scalar("int_value"),
             value.scalar("double_value"), other_json],
            fields=list(_VALUE), mask=pc.is_null(value.array),
        )  # fmt: skip
    kv = pa.StructArray.from_arrays([_keys(items), values], fields=list(_KV))
    offsets = pa.concat_arrays([arrow_array([0], pa.int32()), pc.cumulative_sum(pc.cast(kvs.lengths, pa.int32()))])
    return pa.ListArray.from_arrays(offsets, kv)


def _lengths(repeated: _Repeated | None, parents: int) -> pa.Array:
    return pa.repeat(c(0, pa.int32()), parents) if repeated is None else repeated.lengths


def _list_of(lengths: pa.Array, items: pa.Array) -> pa.Array:
    offsets = pa.concat_arrays([arrow_array([0], pa.int32()), pc.cumulative_sum(pc.cast(lengths, pa.int32()))])
    return pa.ListArray.from_arrays(offsets, items)


def _storable(times: pa.Array, where: str) -> pa.Array:
    """OTLP times (uint64) as given; Refused when one is past the last a lake stores (`LATEST_NS`, year 2262):
    the validating decoder's path then says which item (`otlp_decode.first_rejected`), as the collector does."""
    if len(times) and (pc.max(times).as_py() or 0) > LATEST_NS:
        raise Refused(f"{where}: a time past year 2262")
    return times


def _nonzero(ids: pa.Array, size: int, where: str) -> pa.Array:
    """Ids (bytes) as given; Refused when one is `size` zero bytes (OTLP's invalid id, which the collector
    rejects): the validating decoder's path then says which item."""
    if len(ids) and pc.any(pc.equal(ids, c(bytes(size), ids.type))).as_py():
        raise Refused(f"{where}: an id of zeros")
    return ids


def _ids(strings: pa.Array, sizes: tuple[int, ...], where: str) -> pa.Array:
    """Hex ids as bytes; Refused unless every one is hex of one of `sizes` bytes (0: absent), which the
    decoder reads alike (anything else it reads as base64, or refuses, and says so)."""
    frame = pl.from_arrow(pa.table({"s": pc.fill_null(strings, EMPTY)}))
    assert isinstance(frame, pl.DataFrame)
    # not hex (an odd length, another character, spaces, which bytes.fromhex reads): null
    raw = frame.select(pl.col("s").str.decode("hex", strict=False)).to_series().to_arrow().cast(pa.binary())
    if not _all(pc.fill_null(pc.is_in(pc.binary_length(raw), arrow_array(sizes, pa.int32())), FALSE)):
        raise Refused(f"{where}: an id that is not hex of its size")
    return raw
