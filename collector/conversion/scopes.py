"""The columnar path's resource and scope columns: per scope, the resource JSON, service.name, scope name
and version, as the Python path (`rows.scopes`) writes them."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tracevals.collector.conversion.values import NONE, OTHER, STRING, Values, c, small_values

SMALL_VALUES = 2048  # up to this many resource key-values, `values.small_values`; above, `Values`' kernels


def scope_columns_of(
    resources: pa.Array, scope_lists: pa.Array, per_scope: pa.Array, used: set[int]
) -> list[pa.Array] | None:
    """Per scope: resource JSON, service.name, scope name, scope version, as the Python path writes them (None
    for a scope none of whose spans this path writes); None where that takes the Python path: a resource
    with an array, map or bytes value whose JSON text is not known, a key given twice, or a service.name
    that is not a string."""
    resource = resources.field("resource")
    attr_lists = dict(zip([f.name for f in resource.type], resource.flatten(), strict=True))["attributes"]
    kv = pc.list_flatten(attr_lists)
    if len(kv) <= SMALL_VALUES:  # a batch holds a few resources: the kernels' fixed cost would dominate
        keys, tags, strings, fragments = small_values(kv)
    else:
        values = Values(kv)
        unknown = pc.and_kleene(pc.equal(values.tag, c(OTHER, pa.int8())), pc.is_null(values.other_json))
        keys, tags, strings, fragments = (
            kv.field("key").to_pylist(),
            values.tag.to_pylist(),
            values.string.to_pylist(),
            pc.if_else(unknown, c(None, pa.string()), values.fragment).to_pylist(),
        )
    lengths = pc.coalesce(pc.list_value_length(attr_lists), c(0, pa.int32())).to_pylist()
    resource_json: list[str] = []
    service: list[str | None] = []
    start = 0
    for length in lengths:
        own = keys[start : start + length]
        if len(set(own)) != len(own) or None in fragments[start : start + length]:
            return None
        at = own.index("service.name") + start if "service.name" in own else None
        if at is not None and tags[at] not in (STRING, NONE):
            return None
        resource_json.append("{" + ",".join(f for f in fragments[start : start + length] if f is not None) + "}")
        service.append(strings[at] if at is not None else None)
        start += length
    scope = per_scope.field("scope")
    scope_fields = dict(zip([f.name for f in scope.type], scope.flatten(), strict=True))
    names, versions = scope_fields["name"].to_pylist(), scope_fields["version"].to_pylist()
    owner = pc.list_parent_indices(scope_lists).to_pylist()
    out: list[list[Any]] = [[], [], [], []]
    for i, r in enumerate(owner):
        row = (resource_json[r], service[r], names[i] or None, versions[i] or None) if i in used else (None,) * 4
        for column, value in zip(out, row, strict=True):
            column.append(value)
    return [pa.array(column, pa.string()) for column in out]
