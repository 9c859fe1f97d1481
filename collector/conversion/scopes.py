"""The columnar path's resource and scope columns: per scope, the resource JSON, service.name, scope name
and version, as the Python path (`rows.scopes`) writes them."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from tracevals.collector.conversion.values import NONE, OTHER, STRING, Values, c, small_values
from tracevals.lake.arrow import arrow_array

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
    # a batch holds a few resources: the kernels' fixed cost would dominate
    per_resource = _small(attr_lists, kv) if len(kv) <= SMALL_VALUES else _kernels(attr_lists, kv)
    if per_resource is None:
        return None
    resource_json, service = per_resource
    scope = per_scope.field("scope")
    scope_fields = dict(zip([f.name for f in scope.type], scope.flatten(), strict=True))
    owner = pc.list_parent_indices(scope_lists)
    written = pc.is_in(arrow_array(range(len(per_scope)), pa.int64()), arrow_array(sorted(used), pa.int64()))
    columns = [
        pc.take(resource_json, owner),
        pc.take(service, owner),
        _none_if_empty(scope_fields["name"]),
        _none_if_empty(scope_fields["version"]),
    ]
    return [pc.if_else(written, column, c(None, pa.string())) for column in columns]


def _none_if_empty(strings: pa.Array) -> pa.Array:
    return pc.if_else(pc.fill_null(pc.equal(strings, c("")), c(True)), c(None, pa.string()), strings)


def _small(attr_lists: pa.Array, kv: pa.Array) -> tuple[pa.Array, pa.Array] | None:
    """Per resource (attributes JSON, service.name), in Python (`values.small_values`)."""
    keys, tags, strings, fragments = small_values(kv)
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
    return arrow_array(resource_json, pa.string()), arrow_array(service, pa.string())


def _kernels(attr_lists: pa.Array, kv: pa.Array) -> tuple[pa.Array, pa.Array] | None:
    """Per resource (attributes JSON, service.name), column by column (`Values`): as `_small`."""
    values = Values(kv)
    lengths = pc.coalesce(pc.list_value_length(attr_lists), c(0, pa.int32()))
    offsets = pa.concat_arrays([arrow_array([0], pa.int32()), pc.cumulative_sum(lengths)])
    owner = pc.list_parent_indices(pa.ListArray.from_arrays(offsets, pa.nulls(len(kv))))
    keys = pc.fill_null(values.key, c(""))
    if len(pc.unique(pc.binary_join_element_wise(pc.cast(owner, pa.string()), keys, c("\x00")))) != len(kv):
        return None  # a key given twice in a resource
    other = pc.equal(values.tag, c(OTHER, pa.int8()))
    if pc.any(pc.and_kleene(other, pc.is_null(values.other_json))).as_py():
        return None
    is_service = pc.equal(keys, c("service.name"))
    typed = pc.is_in(values.tag, arrow_array([STRING, NONE], pa.int8()))
    if pc.any(pc.and_kleene(is_service, pc.invert(typed))).as_py():
        return None
    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, values.fragment), c(","))
    resource_json = pc.binary_join_element_wise(c("{"), joined, c("}"), c(""))
    hits = pc.indices_nonzero(is_service)
    at = pc.index_in(arrow_array(range(len(attr_lists)), pa.int64()), pc.cast(pc.take(owner, hits), pa.int64()))
    return resource_json, pc.take(pc.take(values.string, hits), at)
