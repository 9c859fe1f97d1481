"""How a span's or log record's values become the text columns of a lake row, for every writer.

Attribute maps are stored as JSON text with their values' types kept (see `tracevals.lake.schema`);
the OTLP conversion (`tracevals.collector.conversion`) and the embedded exporters
(`tracevals.spans.exporters`, through `tracevals.spans.rows`) encode them the same way, with these helpers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def plain(value: Any) -> Any:
    """An SDK attribute value as a JSON-ready Python value, its type kept (tuples become lists, bytes hex)."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.hex()
    return value


def json_text(value: Any) -> str:
    """Compact JSON, non-ASCII kept as it is; anything JSON cannot hold as its `str()`."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def service_name(resource: Mapping[str, Any]) -> str | None:
    """The resource's `service.name` as text: a string as it is, any other value as its JSON text (the
    column is text; a sender that gets the type wrong must not make its spans unwritable)."""
    value = resource.get("service.name")
    return value if value is None or isinstance(value, str) else json_text(value)
