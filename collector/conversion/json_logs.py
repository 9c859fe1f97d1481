"""The log records of checked OTLP/JSON documents as a table of `LOG_SCHEMA`, the rows of `rows.log_tuples`, column
by column (see `json_columnar`)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from tracevals.collector.conversion.json_check import Refused, _Conformed, _Group
from tracevals.collector.conversion.json_values import _any_json, _ids, _key_values, _list_of, _parents, _storable
from tracevals.collector.conversion.values import (
    EMPTY,
    FALSE,
    NONE,
    NULL_TEXT,
    OTHER,
    STRING,
    TAGS,
    Values,
    c,
)
from tracevals.lake.arrow import arrow_array
from tracevals.lake.schema import LOG_SCHEMA, empty_table

# ---------------------------------------------------------------- log records


def _resource_columns(resources: _Conformed, n: int) -> tuple[pa.Array, pa.Array]:
    """Per resource: its attributes JSON and service.name, as `rows.log_tuples` writes them."""
    resource = resources.get("resource")
    kvs = _key_values(resource.get("attributes") if resource is not None else None, n)
    return _attributes_json(kvs, "resource"), _service(kvs)


def _attributes_json(kvs: pa.Array, where: str) -> pa.Array:
    """Each list of key-values as a JSON object (`_dumps(rows._attrs(...))`); a key twice: Refused."""
    values = Values(pc.list_flatten(kvs))
    lengths = pc.coalesce(pc.list_value_length(kvs), c(0, pa.int32()))
    owner = pc.cast(_parents(lengths), pa.string())
    if len(pc.unique(pc.binary_join_element_wise(owner, values.key, c("\x00")))) != len(values.key):
        raise Refused(f"{where}: a key given twice")  # a dict keeps the first place and the last value
    joined = pc.binary_join(_list_of(lengths, values.fragment), c(","))
    return pc.binary_join_element_wise(c("{"), joined, c("}"), EMPTY)


def _service(kvs: pa.Array) -> pa.Array:
    """service.name: a string as it is, another value as its JSON text (`lake.rows.service_name`)."""
    values = Values(pc.list_flatten(kvs))
    lengths = pc.coalesce(pc.list_value_length(kvs), c(0, pa.int32()))
    owner = _parents(lengths)
    here = pc.equal(values.key, c("service.name"))
    text = pc.if_else(
        pc.equal(values.tag, TAGS[STRING]),
        values.string,
        pc.if_else(
            pc.equal(values.tag, TAGS[NONE]),
            NULL_TEXT,
            pc.if_else(pc.equal(values.tag, TAGS[OTHER]), values.other_json, values.json),
        ),
    )
    position: list[int | None] = [None] * len(kvs)  # per resource, its service.name (a key twice was refused)
    hits = pc.indices_nonzero(pc.fill_null(here, FALSE))
    for resource, hit in zip(pc.take(owner, hits).to_pylist(), hits.to_pylist(), strict=True):
        position[resource] = hit
    return pc.take(text, arrow_array(position, pa.int64()))


def _ts(values: pa.Array) -> pa.Array:
    return pc.cast(pc.cast(values, pa.int64()), LOG_SCHEMA.field("time").type)


def _logs_table(group: _Group) -> pa.Table:
    resources = group.logs
    if resources is None:
        return empty_table(LOG_SCHEMA)
    n_resources = len(resources.array)
    scope_logs = resources.get("scope_logs")
    if scope_logs is None:
        return empty_table(LOG_SCHEMA)
    scopes = scope_logs.items
    records = scopes.get("log_records")
    if records is None:
        return empty_table(LOG_SCHEMA)
    items = records.items
    n = len(items.array)
    if n == 0:
        return empty_table(LOG_SCHEMA)
    resource_json, service = _resource_columns(resources, n_resources)
    scope_of = _parents(records.lengths)
    resource_of = pc.take(_parents(scope_logs.lengths), scope_of)
    scope = scopes.get("scope")
    scope_name = scope.scalar("name") if scope is not None else pa.nulls(len(scopes.array), pa.string())
    trace_id = _log_id(items.scalar("trace_id"), 16, "traceId")
    span_id = _log_id(items.scalar("span_id"), 8, "spanId")
    time = _storable(items.scalar("time_unix_nano", c(0, pa.uint64())), "timeUnixNano")
    observed = _storable(items.scalar("observed_time_unix_nano", c(0, pa.uint64())), "observedTimeUnixNano")
    zero = c(0, pa.uint64())
    observed_or_none = pc.if_else(pc.equal(observed, zero), c(None, pa.uint64()), observed)
    body = items.get("body")
    body_json = (
        pa.nulls(n, pa.string()) if body is None else pc.if_else(pc.is_valid(body.array), _any_json(body, n), NULL_TEXT)
    )
    severity = items.scalar("severity_number", c(0, pa.int32()))
    columns = {
        "trace_id": trace_id,
        "span_id": span_id,
        "time": _ts(pc.if_else(pc.equal(time, zero), observed, time)),
        "observed_time": _ts(observed_or_none),
        "event_name": _none_if_empty(items.scalar("event_name")),
        "severity_number": pc.if_else(pc.equal(severity, c(0, pa.int32())), c(None, pa.int32()), severity),
        "severity_text": _none_if_empty(items.scalar("severity_text")),
        "body": body_json,
        "attributes": _attributes_json(_key_values(items.get("attributes"), n), "logRecords.attributes"),
        "resource_attributes": pc.take(resource_json, resource_of),
        "scope_name": pc.take(_none_if_empty(scope_name), scope_of),
        "service_name": pc.take(service, resource_of),
    }
    return pa.table(columns).cast(LOG_SCHEMA)


def _none_if_empty(strings: pa.Array) -> pa.Array:
    return pc.if_else(pc.equal(strings, EMPTY), NULL_TEXT, strings)


def _log_id(strings: pa.Array, size: int, where: str) -> pa.Array:
    """A log record's id as lower-case hex, null where absent (`rows.log_tuples`)."""
    _ids(strings, (0, size), where)
    lowered = pc.utf8_lower(strings)
    return pc.if_else(pc.fill_null(pc.equal(lowered, EMPTY), c(True)), NULL_TEXT, lowered)
