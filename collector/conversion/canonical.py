"""The columnar path's canonical columns: the normalizer (`tracevals.spans.normalize`) applied column by column.

The same plans as the Python path (`normalize.plan_for`, once per set of attribute keys), the same kind rule
(`reading.kind_of`, once per distinct key set and values of the keys that decide a kind, and span name where a
dialect decides by name), the same first candidate that holds a value (placeholders are none), the same
wrappers unwrapped (`rules.unwrap`, once per distinct value of a framework's envelope), the same error type
(`normalize.error_type`'s steps: a class repr read as the class, else the class the status message names, else
`_OTHER`). What needs Python runs once per distinct thing, never once per span. Spans this path cannot read
exactly take the Python path (`python_signatures`, and the tool spans whose name would come from the span's
name); see `columnar.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tracevals.collector.conversion.values import (
    NONE,
    NULL_TEXT,
    OTHER,
    STRING,
    TAGS,
    Coded,
    Values,
    as_text,
    c,
    candidate_positions,
    converter,
    first,
    map_distinct,
)
from tracevals.lake.arrow import arrow_array
from tracevals.lake.schema import SPAN_SCHEMA
from tracevals.spans import normalize as norm
from tracevals.spans import reading
from tracevals.spans.declare import Key
from tracevals.spans.rules import arguments, error_class, error_type_of, says_failed, unwrap

_TYPES = {f.name: f.type for f in SPAN_SCHEMA}


class Signatures:
    """Each span's key set as a number (`signature_id`), the sets' keys, and a way to read the value at a key."""

    def __init__(self, values: Values, starts: pa.Array, signature_id: pa.Array, keys: list[tuple[str, ...]]) -> None:
        self.values, self.starts, self.signature_id, self.keys = values, starts, signature_id, keys

    def value_of(self, key: str) -> Coded:
        """Each span's value at `key`, coded (no value where the span has no such key)."""
        at = [k.index(key) if key in k else None for k in self.keys]
        if all(a is None for a in at):
            n = len(self.signature_id)
            return Coded(pa.repeat(TAGS[NONE], n), pa.nulls(n, pa.string()), pa.nulls(n, pa.string()))
        position = pc.take(arrow_array(at, pa.int64()), self.signature_id)
        return Coded(*self.values.take(pc.add(self.starts, position)))


def python_signatures(keys: list[tuple[str, ...]]) -> list[bool]:
    """The key sets whose spans the Python path reads: a key given twice, or a key read through a path into its
    JSON, as a failure's flag, level or message (`reading.DEEP_KEYS`)."""
    return [len(set(k)) != len(k) or not reading.DEEP_KEYS.isdisjoint(k) for k in keys]


def kinds(sigs: Signatures, plans: list[norm.Plan], names: pa.Array) -> pa.Array:
    """Each span's canonical kind: `reading.kind_of` once per (key set, values of the keys that decide a kind,
    and the span's name where one of its dialects decides by name)."""
    decide = [sigs.value_of(k) for k in reading.KIND_VALUE_KEYS]
    by_name = [any(d.name in reading.BY_NAME for d in p.dialects) for p in plans]
    named = Coded(pa.repeat(TAGS[STRING], len(names)), pa.nulls(len(names), pa.string()), names)
    name_part = pc.if_else(pc.take(arrow_array(by_name, pa.bool_()), sigs.signature_id), named.codes, c("-:-"))
    kind_key = pc.binary_join_element_wise(
        pc.cast(sigs.signature_id, pa.string()), name_part, *(d.codes for d in decide), c("\x01")
    )
    kind_codes = pc.dictionary_encode(kind_key)
    out = []
    for key in kind_codes.dictionary.to_pylist():
        sig, name, *codes = key.split("\x01")
        values: dict[str, Any] = dict.fromkeys(sigs.keys[int(sig)])
        for attribute, coded, code in zip(reading.KIND_VALUE_KEYS, decide, codes, strict=True):
            if code.startswith(f"{OTHER}:"):
                values[attribute] = []  # an array or map: those spans take the Python path anyway
            elif not code.endswith(":-"):
                values[attribute] = coded.decode(code)
        out.append(reading.kind_of(values, plans[int(sig)].dialects, named.decode(name) if name != "-:-" else ""))
    return pc.take(arrow_array(out, pa.string()), kind_codes.indices)


def _arguments(text: str) -> str | None:
    return norm._text(arguments(text))


def _deep(
    sigs: Signatures,
    names: pa.Array,
    candidates: list[tuple[Key, ...]],
    plan_of: pa.Array,
    mask: pa.Array,
    convert: Any,
    out_type: pa.DataType,
) -> pa.Array:
    """A column some of whose candidates read inside a value (a path into its JSON, a regular expression), for
    the spans of `mask`: `normalize.pick` on each distinct (plan, candidate values), in Python."""
    width = max(len(ks) for ks in candidates)
    coded = []
    sig_keys = [keys for keys in sigs.keys for _ in (0, 1)]
    for rank in range(width):
        keys_at = [ks[rank].name if rank < len(ks) else None for ks in candidates]
        table = [
            k.index(key) if key is not None and key in k else None for key, k in zip(keys_at, sig_keys, strict=True)
        ]
        position = pc.take(arrow_array(table, pa.int64()), plan_of)
        tag, text, string = sigs.values.take(pc.add(sigs.starts, position))
        for pattern in {k.on_names for ks in candidates if rank < len(ks) and (k := ks[rank]).on_names is not None}:
            # a key read only on some names: no value on the others (as `normalize.pick` skips it there)
            keyed = pc.take(
                arrow_array([rank < len(ks) and ks[rank].on_names == pattern for ks in candidates], pa.bool_()), plan_of
            )
            elsewhere = pc.and_kleene(keyed, pc.invert(pc.match_substring_regex(names, "^(?:" + pattern + ")")))
            tag = pc.if_else(elsewhere, TAGS[NONE], tag)
        coded.append(Coded(tag, text, string))
    composite = pc.binary_join_element_wise(pc.cast(plan_of, pa.string()), *(v.codes for v in coded), c("\x01"))

    def pick_one(key: str) -> Any:
        plan, *codes = key.split("\x01")
        keys = candidates[int(plan)]
        attrs = {k.name: v.decode(code) for k, v, code in zip(keys, coded, codes, strict=False)}
        present = tuple(k for k in keys if attrs[k.name] is not None)
        return norm.pick(attrs, present, convert)

    return map_distinct(pc.if_else(mask, composite, NULL_TEXT), pick_one, out_type)


def _columns(sigs: Signatures, names: pa.Array, both: list[norm.Plan], plan_of: pa.Array) -> dict[str, pa.Array]:
    """Each canonical column from each span's plan: the first candidate that holds a value, converted (a value
    in a framework's envelope unwrapped)."""
    columns: dict[str, pa.Array] = {}
    sig_keys = [keys for keys in sigs.keys for _ in (0, 1)]
    for i, (column, _, convert) in enumerate(both[0].fields if both else ()):
        candidates = [p.fields[i][1] for p in both]
        positions = candidate_positions([tuple(k.name for k in ks) for ks in candidates], sig_keys, plan_of)
        tag, text, string, rank = first(sigs.values, sigs.starts, positions)
        if convert is norm._text:
            value = as_text(tag, text, string)
        else:
            value = converter(convert, _TYPES[column])(tag, text, string)
        width = max((len(ks) for ks in candidates), default=0)
        if any(k.envelope for ks in candidates for k in ks):
            table = [i < len(ks) and ks[i].envelope for ks in candidates for i in range(width)]
            at = pc.add(pc.multiply(pc.cast(plan_of, pa.int64()), c(width, pa.int64())), rank)
            envelope = pc.coalesce(pc.take(arrow_array(table, pa.bool_()), at), c(False))
            if pc.any(envelope).as_py():
                chosen = Coded(tag, text, string)

                def unwrapped(code: str, chosen: Coded = chosen) -> str | None:
                    found = unwrap(chosen.decode(code))
                    return None if found is None else norm._text(found)

                value = pc.if_else(envelope, map_distinct(pc.if_else(envelope, chosen.codes, NULL_TEXT), unwrapped,
                                                          pa.string()), value)  # fmt: skip
        # read inside a value (a path, a regular expression), or only on some spans' names: span by span
        deep = [any(k.path or k.regex or k.on_names for k in ks) for ks in candidates]
        if any(deep):
            mask = pc.take(arrow_array(deep, pa.bool_()), plan_of)
            value = pc.if_else(mask, _deep(sigs, names, candidates, plan_of, mask, convert, _TYPES[column]), value)
        columns[column] = value
    if "tool_args" in columns:  # arguments a framework injected (an object's repr) are none the model gave
        columns["tool_args"] = map_distinct(columns["tool_args"], _arguments, pa.string())
    return columns


def _failed_outputs(sigs: Signatures) -> pa.Array | None:
    """Whether a declared output says the span failed (`normalize.failed`'s `reading.ERROR_OUTPUTS`: the same
    `rules.says_failed`), once per distinct value; None when no span holds such an output."""
    out = None
    for key in reading.ERROR_OUTPUTS:
        if not any(key.name in k for k in sigs.keys):
            continue
        coded = sigs.value_of(key.name)
        flags = map_distinct(coded.codes, _says_failed(coded, key), pa.bool_())
        out = flags if out is None else pc.or_kleene(out, flags)
    return out


def _says_failed(coded: Coded, key: Key) -> Callable[[str], bool]:
    """`rules.says_failed` of the value a code stands for."""

    def read(code: str) -> bool:
        return says_failed(key, coded.decode(code))

    return read


def _error_type(
    recorded: pa.Array, status_label: pa.Array, status_message: pa.Array, failed: pa.Array | None = None
) -> pa.Array:
    """`normalize.error_type` for spans without events or declared failure keys: the recorded type (a class repr
    read as the class), else for a failed span (its status, or a declared output: `failed`) the class its status
    message names, else `_OTHER`."""
    recorded = map_distinct(recorded, error_type_of, pa.string())
    failure = pc.equal(status_label, c("error"))
    if failed is not None:
        failure = pc.or_kleene(failure, pc.coalesce(failed, c(False)))
    missing = pc.and_kleene(pc.is_null(recorded), failure)
    if not pc.any(missing).as_py():
        return recorded
    named = map_distinct(pc.if_else(missing, status_message, NULL_TEXT), error_class, pa.string())
    return pc.if_else(missing, pc.coalesce(named, c(norm.UNKNOWN_ERROR_TYPE)), recorded)


def canonical_columns(
    sigs: Signatures, names: pa.Array, status_label: pa.Array, status_message: pa.Array, n: int
) -> tuple[dict[str, pa.Array], pa.Array]:
    """The normalizer's columns and facts for every span, and the spans whose tool name this path cannot know
    (a tool span named by no attribute: they take the Python path, which reads the span's name)."""
    plans = [norm.plan_for(keys, is_tool=False) for keys in sigs.keys]
    span_kind = kinds(sigs, plans, names)
    is_tool = pc.equal(span_kind, c("tool"))
    plan_of = pc.add(
        pc.multiply(pc.cast(sigs.signature_id, pa.int64()), c(2, pa.int64())), pc.cast(is_tool, pa.int64())
    )
    tool_plans = [norm.plan_for(keys, is_tool=True) for keys in sigs.keys]
    both = [p for pair in zip(plans, tool_plans, strict=True) for p in pair]
    columns: dict[str, pa.Array] = {
        "dialect": pc.take(arrow_array([p.dialect for p in plans], pa.string()), sigs.signature_id),
        "normalizer_version": pa.repeat(c(norm.NORMALIZER_VERSION, pa.int32()), n),
        **_columns(sigs, names, both, plan_of),
    }
    not_call = pc.and_kleene(
        is_tool, pc.is_in(columns["tool_name"], arrow_array(sorted(reading.NOT_CALLS), pa.string()))
    )
    columns["kind"] = pc.if_else(pc.coalesce(not_call, c(False)), c("other"), span_kind)
    columns["error_type"] = _error_type(columns["error_type"], status_label, status_message, _failed_outputs(sigs))
    # the operation digest where the span recorded none (normalizer 6): once per distinct arguments text
    missing = pc.and_kleene(pc.is_null(columns["tool_args_hash"]), pc.is_valid(columns["tool_args"]))
    if pc.any(missing).as_py():
        digests = map_distinct(pc.if_else(missing, columns["tool_args"], NULL_TEXT), norm.args_digest_of, pa.string())
        columns["tool_args_hash"] = pc.coalesce(columns["tool_args_hash"], digests)
    unknown_tool = pc.and_kleene(pc.equal(columns["kind"], c("tool")), pc.is_null(columns["tool_name"]))
    sig_keys = [keys for keys in sigs.keys for _ in (0, 1)]
    for column, (_, convert) in norm.FACTS.items():
        per_plan = []
        for plan in both:
            found = next((f for f in plan.facts if f[0] == column), None)
            per_plan.append(found[1] if found else ())
        convert_fact = converter(convert, _TYPES[column]) if convert is not norm._fact_list else None
        if convert_fact is None or not any(per_plan):
            columns[column] = pa.nulls(n, _TYPES[column])  # lists: only from array values (the Python path)
            continue
        positions = candidate_positions(per_plan, sig_keys, plan_of)
        tag, text, string, _ = first(sigs.values, sigs.starts, positions, facts=True, convert=convert_fact)
        columns[column] = convert_fact(tag, text, string)
    columns["has_message_attributes"] = pc.take(
        arrow_array([p.has_messages for p in plans], pa.bool_()), sigs.signature_id
    )
    return columns, unknown_tool
