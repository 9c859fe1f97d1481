"""Jaeger's JSON (its query API's and UI's trace export, `{"data": [{"traceID", "spans", "processes"}]}`) as
an OTLP/JSON document, so that `tracevals ingest` reads traces a team already keeps in Jaeger.

The mapping is the one Jaeger and the OpenTelemetry Collector's Jaeger translator use, read backwards:
- a process is a resource (`serviceName` -> `service.name`, its tags -> resource attributes);
- `otel.scope.name` / `otel.library.name` (and `.version`) tags are the instrumentation scope;
- `span.kind` is the span kind; `otel.status_code` (`ERROR` / `OK`) and `otel.status_description`, or a
  boolean `error` tag, the status;
- the first `CHILD_OF` reference (else `FOLLOWS_FROM`) is the parent; other references are links;
- `startTime` / `duration` are microseconds; a span's `logs` are its events (the `event` field is the name);
- tags keep their types (`string`, `bool`, `int64`, `float64`, `binary`), and ids shorter than OTLP's
  (Jaeger drops leading zeros) are padded back.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from tracevals.model.errors import UserError

_KINDS = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_SCOPE_TAGS = {"otel.scope.name", "otel.library.name"}
_SCOPE_VERSION_TAGS = {"otel.scope.version", "otel.library.version"}
_SPECIAL = {"span.kind", "otel.status_code", "otel.status_description", "internal.span.format"}
_SPECIAL |= _SCOPE_TAGS | _SCOPE_VERSION_TAGS


class JaegerError(UserError, ValueError):
    """Not a Jaeger trace document, with where and why."""


def is_jaeger(doc: Mapping[str, Any]) -> bool:
    """Whether `doc` looks like a Jaeger export: a `data` list of traces that have `spans` and `processes`."""
    data = doc.get("data")
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(t, Mapping) and "spans" in t and "traceID" in t for t in data)
        and "resourceSpans" not in doc
    )


def _id(value: Any, size: int, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise JaegerError(f"{where}: expected a hex id, got {value!r}")
    text = value.lower()
    if len(text) > 2 * size or any(c not in "0123456789abcdef" for c in text):
        raise JaegerError(f"{where}: {value!r} is not a hex id of at most {size} bytes")
    return text.rjust(2 * size, "0")


def _value(tag: Mapping[str, Any], where: str) -> dict[str, Any]:
    kind = str(tag.get("type", "string")).lower()
    value: Any = tag.get("value")  # a bad one raises below, said with where
    try:
        if kind == "bool":
            return {"boolValue": value if isinstance(value, bool) else str(value).lower() == "true"}
        if kind == "int64":
            return {"intValue": str(int(value))}
        if kind == "float64":
            return {"doubleValue": float(value)}
        if kind == "binary":
            return {"bytesValue": value if isinstance(value, str) else base64.b64encode(bytes(value)).decode()}
    except (TypeError, ValueError):
        raise JaegerError(f"{where}: {value!r} is not a {kind} value") from None
    if kind == "string":
        return {"stringValue": "" if value is None else str(value)}
    raise JaegerError(f"{where}: tag type {kind!r} is none of string, bool, int64, float64, binary")


def _attributes(tags: Any, where: str, skip: set[str] = set()) -> list[dict[str, Any]]:  # noqa: B006 - read only
    if tags is None:
        return []
    if not isinstance(tags, list):
        raise JaegerError(f"{where}: expected a list of tags")
    return [
        {"key": str(t["key"]), "value": _value(t, f"{where}.{t['key']}")}
        for t in tags
        if isinstance(t, Mapping) and "key" in t and t["key"] not in skip
    ]


def _tag(tags: Any, keys: set[str]) -> Any:
    for t in tags or []:
        if isinstance(t, Mapping) and t.get("key") in keys:
            return t.get("value")
    return None


def _span(span: Mapping[str, Any], where: str) -> dict[str, Any]:
    tags = span.get("tags") or []
    trace_id = _id(span.get("traceID"), 16, f"{where}.traceID")
    out: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": _id(span.get("spanID"), 8, f"{where}.spanID"),
        "name": str(span.get("operationName", "")),
    }
    try:
        start = int(span["startTime"]) * 1000
        out["startTimeUnixNano"] = str(start)
        out["endTimeUnixNano"] = str(start + int(span.get("duration") or 0) * 1000)
    except (KeyError, TypeError, ValueError):
        raise JaegerError(f"{where}: startTime (microseconds) is missing or not a number") from None
    references = [r for r in span.get("references") or [] if isinstance(r, Mapping)]
    parents = [r for r in references if r.get("refType") == "CHILD_OF"] or [
        r for r in references if r.get("refType") == "FOLLOWS_FROM"
    ]
    parent = parents[0] if parents else None
    if parent is not None:
        out["parentSpanId"] = _id(parent.get("spanID"), 8, f"{where}.references")
    links = [
        {"traceId": _id(r.get("traceID"), 16, f"{where}.references"), "spanId": _id(r.get("spanID"), 8, where)}
        for r in references
        if r is not parent
    ]
    if links:
        out["links"] = links
    kind = _tag(tags, {"span.kind"})
    out["kind"] = _KINDS.get(str(kind).lower(), 1) if kind is not None else 1
    code, message, error = _tag(tags, {"otel.status_code"}), _tag(tags, {"otel.status_description"}), None
    for t in tags:
        if isinstance(t, Mapping) and t.get("key") == "error" and str(t.get("type", "")).lower() == "bool":
            error = t.get("value") in (True, "true")
    if code is not None or error:
        status: dict[str, Any] = {"code": 2 if str(code).upper() == "ERROR" or (code is None and error) else 1}
        if message:
            status["message"] = str(message)
        out["status"] = status
    skip = set(_SPECIAL) | ({"error"} if error is not None else set())
    out["attributes"] = _attributes(tags, f"{where}.tags", skip)
    events = []
    for i, log in enumerate(span.get("logs") or []):
        fields = log.get("fields") or []
        name = _tag(fields, {"event", "message"}) or "log"
        events.append(
            {
                "timeUnixNano": str(int(log.get("timestamp", 0)) * 1000),
                "name": str(name),
                "attributes": _attributes(fields, f"{where}.logs[{i}]", {"event"}),
            }
        )
    if events:
        out["events"] = events
    return out


def jaeger_to_otlp(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The OTLP/JSON document (`resourceSpans`, hex ids) holding the spans of a Jaeger export."""
    if not is_jaeger(doc):
        raise JaegerError('not a Jaeger export: expected {"data": [{"traceID", "spans", "processes"}]}')
    resources: dict[tuple[str, str], dict[str, Any]] = {}
    scopes: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for t, trace in enumerate(doc["data"]):
        processes = trace.get("processes") or {}
        for s, span in enumerate(trace.get("spans") or []):
            where = f"data[{t}].spans[{s}]"
            process_id = str(span.get("processID", ""))
            process = processes.get(process_id) or span.get("process") or {}
            service = str(process.get("serviceName", "unknown_service"))
            key = (service, repr(process.get("tags")))
            if key not in resources:
                attrs = [{"key": "service.name", "value": {"stringValue": service}}]
                attrs += _attributes(process.get("tags"), f"data[{t}].processes.{process_id}", {"service.name"})
                resources[key] = {"attributes": attrs}
            tags = span.get("tags") or []
            scope = (str(_tag(tags, _SCOPE_TAGS) or ""), str(_tag(tags, _SCOPE_VERSION_TAGS) or ""))
            scopes.setdefault((*key, *scope), []).append(_span(span, where))
    out: list[dict[str, Any]] = []
    for key, resource in resources.items():
        scope_spans = [
            {"scope": {"name": name, "version": version}, "spans": spans}
            for (service, tags, name, version), spans in scopes.items()
            if (service, tags) == key
        ]
        out.append({"resource": resource, "scopeSpans": scope_spans})
    return {"resourceSpans": out}
