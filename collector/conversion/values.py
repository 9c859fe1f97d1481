"""The columnar path's kernels: every attribute value of a batch typed, with its JSON text, and the
Arrow helpers that pick a span's candidate values (see `columnar.py` for the stages that use them).

Arguments of compute functions are Arrow scalars, never Python values: without numpy installed, pyarrow
tries (and fails) to import it for every Python value it converts, which cost more than the kernels.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache, partial
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValueList

from tracevals.collector.conversion.rows import _dumps, any_value
from tracevals.lake.arrow import arrow_array, arrow_scalar
from tracevals.spans import normalize as norm
from tracevals.spans import reading

_ESCAPED = [chr(c) for c in range(32)] + ['"', "\\"]  # what JSON escapes in a string (ensure_ascii=False)
_ESCAPES = [json.dumps(ch, ensure_ascii=False)[1:-1] for ch in _ESCAPED]  # and how: \n, \u001b, \", \\ ...
# value type tags
NONE, STRING, INT, DOUBLE, BOOL, OTHER = range(6)
TAGS = list(arrow_array(range(6), pa.int8()))
EMPTY, QUOTE, NULL_TEXT = arrow_array(["", '"', None], pa.string())
FALSE, ZERO = arrow_scalar(False, pa.bool_()), arrow_scalar(0, pa.int64())
_SCALARS: dict[tuple[Any, Any, Any], pa.Scalar] = {}
_TYPES = {str: pa.string(), bool: pa.bool_(), int: pa.int64(), float: pa.float64(), type(None): pa.null()}


def c(value: Any, type_: pa.DataType | None = None) -> pa.Scalar:
    """An Arrow scalar, made once (`lake.arrow.arrow_scalar`: pyarrow's own conversion imports pandas)."""
    key = (type(value), value, type_)
    if key not in _SCALARS:
        _SCALARS[key] = arrow_scalar(value, type_ or _TYPES[type(value)])
    return _SCALARS[key]


def map_distinct(values: pa.Array, func: Callable[[Any], Any], out_type: pa.DataType) -> pa.Array:
    """`func` applied to each distinct non-null value of `values` (in Python), spread back row by row."""
    if values.null_count == len(values):
        return pa.nulls(len(values), out_type)
    distinct = pc.unique(values.drop_null())
    mapped = arrow_array([func(v) for v in distinct.to_pylist()], out_type)
    return pc.take(mapped, pc.index_in(values, distinct))


def doubles_json(doubles: pa.Array) -> pa.Array:
    """Each double's JSON text as `_dumps` writes it (repr; NaN, Infinity), once per distinct bit pattern
    (a hash of floats would make -0.0 and 0.0 one value)."""
    valid = pc.is_valid(doubles)
    if not pc.any(valid).as_py():
        return pa.nulls(len(doubles), pa.string())
    bits = pc.dictionary_encode(pc.coalesce(doubles, c(0.0)).view(pa.int64()))
    texts = arrow_array([_dumps(v) for v in bits.dictionary.view(pa.float64()).to_pylist()], pa.string())
    return pc.if_else(valid, pc.take(texts, bits.indices), NULL_TEXT)


def escaped(strings: pa.Array) -> pa.Array:
    """Each string with what JSON escapes in it escaped as `_dumps` does (ensure_ascii=False: quotes,
    backslashes and control characters; nothing else), without the quotes: in Polars, not per string."""
    frame = pl.from_arrow(pa.table({"s": strings}))
    assert isinstance(frame, pl.DataFrame)
    out = frame.select(pl.col("s").str.replace_many(_ESCAPED, _ESCAPES)).to_series().to_arrow()
    return out.cast(pa.string())


def string_json(strings: pa.Array) -> pa.Array:
    """Each string's JSON text as `_dumps` writes it: quoted, escaped."""
    return pc.binary_join_element_wise(QUOTE, escaped(strings), QUOTE, EMPTY)


# The values the native decoder keeps opaque (`native._READ`): their protobuf encoding, and what the Python
# path makes of them (`rows.any_value`, written by `_dumps`).
_OPAQUE: dict[str, Callable[[bytes], str]] = {
    "array_value": lambda raw: _dumps(any_value(AnyValue(array_value=ArrayValue.FromString(raw)))),
    "kvlist_value": lambda raw: _dumps(any_value(AnyValue(kvlist_value=KeyValueList.FromString(raw)))),
    "bytes_value": lambda raw: _dumps(raw.hex()),
}


def _opaque_json(name: str, raw: bytes) -> str | None:
    try:
        return _OPAQUE[name](raw)
    except Exception:  # not a valid encoding (protobuf's DecodeError): such a value takes the Python path
        return None


def other_json(fields: dict[str, pa.Array], n: int) -> pa.Array:
    """The JSON text of each array, map or bytes value (null for the others): given by the JSON reader
    (`other_json`, see `json_columnar.py`), or from the opaque encodings, once per distinct encoding."""
    if "other_json" in fields:
        given: pa.Array = fields["other_json"]
        return given
    out = pa.nulls(n, pa.string())
    for name in _OPAQUE:
        raw = fields.get(name)
        if raw is not None and raw.null_count < len(raw):
            out = pc.coalesce(out, map_distinct(raw, partial(_opaque_json, name), pa.string()))
    return out


def loads_then(func: Callable[[Any], Any]) -> Callable[[str], Any]:
    """A converter of the Python value that a value's JSON text (as `_dumps` wrote it) stands for."""
    return lambda text: func(json.loads(text))


class Values:
    """Every attribute value of the batch (one row per key-value), typed, with its JSON text."""

    def __init__(self, kv: pa.StructArray) -> None:
        value = kv.field("value")
        fields = dict(zip([f.name for f in value.type], value.flatten(), strict=True))  # parent nulls applied
        self.string: pa.Array = fields["string_value"]
        ints, doubles, bools = fields["int_value"], fields["double_value"], fields["bool_value"]
        other = pa.repeat(FALSE, len(kv))
        for name in (*_OPAQUE, "other_json"):
            if name in fields:
                other = pc.or_kleene(other, pc.is_valid(fields[name]))
        # an array, map or bytes value's JSON text (null where it has none: its span takes the Python path)
        self.other_json: pa.Array = other_json(fields, len(kv))
        tag = full(len(kv), NONE)
        for code, array in ((STRING, self.string), (INT, ints), (DOUBLE, doubles), (BOOL, bools)):
            tag = pc.if_else(pc.is_valid(array), TAGS[code], tag)
        self.tag: pa.Array = pc.if_else(other, TAGS[OTHER], tag)
        self.key: pa.Array = kv.field("key")
        self._placeholders: pa.Array | None = None
        # A string has no JSON text here (`json_of` writes it, for the few readers that need one): most are only
        # written into the attributes JSON, escaped there in one pass.
        is_string = pc.is_valid(self.string)
        text = pc.coalesce(pc.cast(ints, pa.string()), doubles_json(doubles), pc.if_else(bools, c("true"), c("false")))
        text = pc.coalesce(pc.if_else(pc.equal(self.tag, TAGS[OTHER]), NULL_TEXT, text), c("null"))
        self.json: pa.Array = pc.if_else(is_string, NULL_TEXT, text)
        # each key-value's JSON fragment, '"key":' + JSON text: a string's as '"key":"' + escaped string + '"'
        self.key_codes = pc.dictionary_encode(self.key)  # keys repeat: each distinct one's JSON text once
        prefixes = [f"{_dumps(k)}:{q}" for k in self.key_codes.dictionary.to_pylist() for q in ("", '"')]
        prefix_at = pc.add(
            pc.multiply(pc.cast(self.key_codes.indices, pa.int64()), c(2, pa.int64())), pc.cast(is_string, pa.int64())
        )
        strings = escaped(self.string) if self.string.null_count < len(self.string) else self.string
        self.fragment: pa.Array = pc.binary_join_element_wise(
            pc.take(arrow_array(prefixes, pa.string()), prefix_at),
            pc.coalesce(strings, self.other_json, self.json),
            pc.if_else(is_string, QUOTE, EMPTY),
            EMPTY,
        )

    def placeholders(self) -> pa.Array:
        """Whether each value is a placeholder (`placeholder`), worked out once per batch."""
        if self._placeholders is None:
            self._placeholders = placeholder(self.string)
        return self._placeholders

    def take(self, index: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
        """(tag, JSON text, string value) at `index` (null index: tag none; a string: no JSON text, see
        `json_of`)."""
        tag = pc.coalesce(pc.take(self.tag, index), TAGS[NONE])
        return tag, pc.take(self.json, index), pc.take(self.string, index)


def first(
    values: Values, starts: pa.Array, positions: list[pa.Array], facts: bool = False, convert: Any = None
) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """(tag, JSON text, string, rank) of the first candidate that counts: for canonical columns the first present,
    not null, not "" and not a placeholder (the normalizer's `pick`); for facts (facts=True) the first that
    `convert` turns into a value. `rank`: which candidate it was (null: none)."""
    n = len(starts)
    tag = full(n, NONE)
    text = pa.nulls(n, pa.string())
    string = pa.nulls(n, pa.string())
    rank = pa.nulls(n, pa.int64())
    chosen = pa.repeat(c(False), n)
    for at, position in enumerate(positions):
        index = pc.add(starts, position)
        t, j, s = values.take(index)
        if facts:
            counts = pc.is_valid(convert(t, j, s))
        else:
            empty = pc.and_kleene(pc.equal(t, TAGS[STRING]), pc.equal(s, EMPTY))
            no_value = pc.or_kleene(empty, pc.take(values.placeholders(), index))
            counts = pc.and_kleene(pc.not_equal(t, TAGS[NONE]), pc.invert(no_value))
        counts = pc.and_kleene(pc.coalesce(counts, FALSE), pc.invert(chosen))
        tag = pc.if_else(counts, t, tag)
        text = pc.if_else(counts, j, text)
        string = pc.if_else(counts, s, string)
        rank = pc.if_else(counts, c(at, pa.int64()), rank)
        chosen = pc.or_kleene(chosen, counts)
    return tag, text, string, rank


def placeholder(strings: pa.Array) -> pa.Array:
    """Whether each string is a placeholder (`rules.is_placeholder`: a declared value, or one of the declared
    prefixes); false for a null."""
    out = pc.is_in(strings, arrow_array(sorted(reading.PLACEHOLDERS), pa.string()))
    for prefix in reading.PLACEHOLDER_PREFIXES:
        out = pc.or_kleene(out, pc.starts_with(strings, pattern=prefix))
    return pc.coalesce(out, FALSE)


class Coded:
    """Values (tag, JSON text, string) as short codes, `<tag>:<number>`, that Python reads back (`decode`): a key
    for `map_distinct` that needs no escaping of the strings (most of a batch's bytes), only one dictionary
    encoding of them."""

    words: list[Any]
    codes: pa.Array

    def __init__(self, tag: pa.Array, text: pa.Array, string: pa.Array) -> None:
        if pc.all(pc.equal(tag, TAGS[NONE])).as_py() is not False:  # no value anywhere (the usual key absent)
            self.words, self.codes = [], pa.repeat(c(f"{NONE}:-"), len(tag))
            return
        shown = pc.if_else(pc.equal(tag, TAGS[STRING]), string, text)
        codes = pc.dictionary_encode(shown)
        self.words = codes.dictionary.to_pylist()
        self.codes = pc.binary_join_element_wise(
            pc.cast(tag, pa.string()),
            pc.cast(codes.indices, pa.string()),
            c(":"),
            null_handling="replace",
            null_replacement="-",
        )

    def decode(self, code: str) -> Any:
        """The Python value a code stands for (None for no value, whatever text it kept: a key read only on some
        spans' names is masked by its tag alone), as the Python path reads it."""
        tag, _, index = code.partition(":")
        if index == "-" or int(tag) == NONE:
            return None
        word = self.words[int(index)]
        return word if int(tag) == STRING else json.loads(word)


def json_of(tag: pa.Array, text: pa.Array, string: pa.Array, wanted: pa.Array | None = None) -> pa.Array:
    """Every value's JSON text (where `wanted`): `text`, with the strings (`Values` keeps no text for them)
    quoted and escaped."""
    missing = pc.and_kleene(pc.equal(tag, TAGS[STRING]), pc.is_null(text))
    if wanted is not None:
        missing = pc.and_kleene(missing, wanted)
    if not pc.any(missing).as_py():
        return text
    return pc.if_else(missing, string_json(pc.if_else(missing, string, NULL_TEXT)), text)


def as_text(tag: pa.Array, text: pa.Array, string: pa.Array) -> pa.Array:
    """normalize._text: a string as it is, a number or boolean as its JSON text."""
    return pc.if_else(pc.equal(tag, TAGS[STRING]), string, pc.if_else(pc.equal(tag, TAGS[NONE]), NULL_TEXT, text))


@cache
def converter(func: Callable[[Any], Any], out_type: pa.DataType) -> Callable[[Any, Any, Any], pa.Array]:
    """A column converter applied through the value's JSON text, once per distinct value; the common
    exact cases (a string for a text column, an int for an int column ...) without Python."""

    fast_tag = STRING if func in (norm._text, norm._json_text) else INT if func in (norm._int, norm._fact_int) else -1

    def convert(tag: pa.Array, text: pa.Array, string: pa.Array) -> pa.Array:
        is_fast = pc.equal(tag, c(fast_tag, pa.int8()))
        unset = pc.or_kleene(is_fast, pc.equal(tag, TAGS[NONE]))
        text = json_of(tag, text, string, pc.invert(unset))
        slow = map_distinct(pc.if_else(unset, NULL_TEXT, text), loads_then(func), out_type)
        if fast_tag == STRING:
            return pc.if_else(is_fast, string, slow)
        if fast_tag == INT:
            return pc.if_else(is_fast, pc.cast(pc.if_else(is_fast, text, NULL_TEXT), out_type), slow)
        return slow

    return convert


VALUE_FIELDS = (("string_value", STRING), ("int_value", INT), ("double_value", DOUBLE), ("bool_value", BOOL))


def small_values(kv: pa.StructArray) -> tuple[list[str], list[int], list[str | None], list[str | None]]:
    """(key, tag, string value, JSON fragment) of each key-value, as `Values` has them, in Python (the
    fragment None for an array, map or bytes value whose JSON text is not known)."""
    keys: list[str] = []
    tags: list[int] = []
    strings: list[str | None] = []
    fragments: list[str | None] = []
    for item in kv.to_pylist():
        value = item["value"] or {}
        tag, python = NONE, None
        for name, code in VALUE_FIELDS:
            if value.get(name) is not None:
                tag, python = code, value[name]
        text: str | None = _dumps(python)
        if value.get("other_json") is not None:
            tag, text = OTHER, value["other_json"]
        for name in _OPAQUE:
            if value.get(name) is not None:
                tag, text = OTHER, _opaque_json(name, value[name])
        keys.append(item["key"])
        tags.append(tag)
        strings.append(python if tag == STRING else None)
        fragments.append(None if text is None else f"{_dumps(item['key'])}:{text}")
    return keys, tags, strings, fragments


def full(n: int, code: int) -> pa.Array:
    """`n` tags `code`: from a buffer of repeated bytes (pa.repeat copies the scalar value by value, 50x slower)."""
    return pa.Array.from_buffers(pa.int8(), n, [None, pa.py_buffer(bytes((code,)) * n)])


def in_range(codes: pa.Array, size: int) -> pa.Array:
    """`codes` where 0 <= code < size, else 0 (the first label)."""
    inside = pc.and_kleene(pc.greater_equal(codes, ZERO), pc.less(codes, c(size, pa.int64())))
    return pc.if_else(inside, codes, ZERO)


def nonempty(lists: pa.Array) -> pa.Array:
    return pc.greater(pc.coalesce(pc.list_value_length(lists), c(0, pa.int32())), c(0, pa.int32()))


def any_per_span(offsets: pa.Array, flags: pa.Array) -> pa.Array:
    """Per span, whether any of its key-value rows is flagged (a running count of flags, read at the spans'
    offsets)."""
    running = pc.cumulative_sum(pc.cast(pc.coalesce(flags, FALSE), pa.int64()))
    at = pc.take(pa.concat_arrays([arrow_array([0], pa.int64()), running]), offsets)
    return pc.greater(pc.subtract(at[1:], at[:-1]), ZERO)


def candidate_positions(
    keys_per_plan: list[tuple[str, ...]], sig_keys: list[tuple[str, ...]], plan_of: pa.Array
) -> list[pa.Array]:
    """Per candidate rank, each span's position of that candidate key in its key list (null: none)."""
    ranks = max((len(k) for k in keys_per_plan), default=0)
    out = []
    for rank in range(ranks):
        table = [k.index(c[rank]) if rank < len(c) else None for c, k in zip(keys_per_plan, sig_keys, strict=True)]
        out.append(pc.take(arrow_array(table, pa.int64()), plan_of))
    return out
