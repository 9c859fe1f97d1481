"""The fact columns (normalizer 5) against the JSON they replace: a lake written before them, read through
`span_facts`' JSON path, and the same spans written with them must give the views the same rows."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fixtures.otlp_lakes import DIALECTS, corpus_recordings, fixture_doc

from tracevals.collector.conversion.rows import rows_from_request
from tracevals.collector.otlp_json import parse_json_traces
from tracevals.lake.writer import LakeWriter
from tracevals.queries import open_lake
from tracevals.queries.export import export_view
from tracevals.spans.normalize import FACTS, NORMALIZER_VERSION

FACT_COLUMNS = [*FACTS, "has_content"]


def _any(value: Any) -> dict[str, Any]:
    """An OTLP/JSON AnyValue."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    return {"stringValue": value}


def _doc(spans: list[tuple[str, str | None, dict[str, Any]]]) -> dict[str, Any]:
    """One trace of (span id, parent id, attributes) spans."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "facts"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "t"},
                        "spans": [
                            {
                                "traceId": "5" * 32,
                                "spanId": span_id,
                                **({"parentSpanId": parent} if parent else {}),
                                "name": "span",
                                "startTimeUnixNano": str(1_795_000_000_000_000_000 + i),
                                "endTimeUnixNano": str(1_795_000_000_000_000_000 + i + 1),
                                "attributes": [{"key": k, "value": _any(v)} for k, v in attrs.items()],
                            }
                            for i, (span_id, parent, attrs) in enumerate(spans)
                        ],
                    }
                ],
            }
        ]
    }


def _as_before(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as a normalizer before version 5 wrote them: no fact columns."""
    return [{**row, **dict.fromkeys([*FACTS, "has_message_attributes"]), "normalizer_version": 4} for row in rows]


def _rows(con: duckdb.DuckDBPyConnection, query: str) -> list[dict[str, Any]]:
    """Rows as dicts, NaN as text (NaN is a value here, read the same both ways, but never equal to itself)."""
    cursor = con.execute(query)
    names = [d[0] for d in cursor.description]
    nan = lambda v: "NaN" if isinstance(v, float) and math.isnan(v) else v  # noqa: E731
    return [{n: nan(v) for n, v in zip(names, row, strict=True)} for row in cursor.fetchall()]


def _both_ways(tmp_path: Path, rows: list[dict[str, Any]], views: list[str]) -> None:
    assert rows and all(row["normalizer_version"] == NORMALIZER_VERSION for row in rows)
    LakeWriter(tmp_path / "new").write_rows(rows)
    LakeWriter(tmp_path / "old").write_rows(_as_before(rows))
    # the older lake's files lack the columns altogether, as files written before them do
    dropped = ", ".join([*FACTS, "has_message_attributes"])
    files = sorted((tmp_path / "old" / "spans").rglob("*.parquet"))
    for path in files:
        tmp = path.with_name(path.name + ".tmp")
        duckdb.connect().execute(f"COPY (SELECT * EXCLUDE ({dropped}) FROM '{path}') TO '{tmp}' (FORMAT parquet)")
        tmp.replace(path)
    assert "http_status_code" not in {d[0] for d in duckdb.connect().execute(f"DESCRIBE FROM '{files[0]}'").fetchall()}
    new, old = open_lake(tmp_path / "new"), open_lake(tmp_path / "old")
    for view in views:
        columns = "* EXCLUDE (has_content)" if view == "span_facts" else "*"
        query = f"SELECT {columns} FROM {view} ORDER BY ALL"
        got, expected = _rows(new, query), _rows(old, query)
        assert len(got) == len(expected), view
        for a, b in zip(got, expected, strict=True):
            assert a == b, (view, {k: (a[k], b[k]) for k in a if a[k] != b[k]})
    # a lake of older files exported a group of hours at a time (views bound against no files first)
    if "trajectories" in views:
        export_view(tmp_path / "old", "trajectories", tmp_path / "exported", max_spans=1)
        exported = f"SELECT * FROM read_parquet('{tmp_path / 'exported'}/*.parquet') ORDER BY ALL"
        assert _rows(duckdb.connect(), exported) == _rows(old, "SELECT * FROM trajectories ORDER BY ALL")
    # has_content from the keys is the exact case of the old text search: never true where that was false
    wider = "SELECT trace_id, span_id FROM span_facts WHERE has_content ORDER BY ALL"
    assert set(new.execute(wider).fetchall()) <= set(old.execute(wider).fetchall())


# Values that reach the fact keys in practice and at the edges: numbers as strings, decimals where an
# integer is expected, booleans spelled out, lists with nulls and numbers, empty strings.
EDGE_VALUES: list[Any] = [
    429, 503.0, 429.5, -2.5, "429", " 429 ", "+429", "4e2", "1_000", "0x1A", "429.", ".5", "1e400", "nan",
    "1,000", "abc", "", True, False, "true", "TRUE", "t", "yes", "n", "1", "0", "2", 1, 0, 2, 0.25, 1e-3,
    ["a", "b"], ["call_1", "call_2"], ["x", 1, True], [], "finished",
]  # fmt: skip
FACT_KEYS = [
    "http.response.status_code", "tracevals.retry_after_ms", "tracevals.retryable", "tracevals.retry.attempt",
    "tracevals.idempotency_key", "tracevals.replay", "tracevals.tool_calls.names", "gen_ai.usage.cost",
    "llm.cost.total", "traceloop.entity.name", "tracevals.commit", "tracevals.lock_hash",
    "tracevals.attempt.output", "tracevals.attempt.error", "tracevals.session.status",
]  # fmt: skip


def test_edge_values_read_the_same_from_the_columns_and_from_the_json(tmp_path: Path) -> None:
    spans: list[tuple[str, str | None, dict[str, Any]]] = [
        ("0" * 15 + "1", None, {"gen_ai.operation.name": "invoke_agent"})
    ]
    n = 2
    for key in FACT_KEYS:
        for value in EDGE_VALUES:
            if key.startswith("tracevals.tool_calls") and not isinstance(value, list):
                continue  # the JSON path fails the whole query on a non-list here (a cast, not a try_cast)
            for operation in ("chat", "execute_tool"):  # spans the facts are read for ...
                attrs = {"gen_ai.operation.name": operation, key: value}
                spans.append((f"{n:016x}", "0" * 15 + "1", attrs))
                n += 1
            spans.append((f"{n:016x}", "0" * 15 + "1", {key: value}))  # ... and one they are not
            n += 1
    # a cost in both keys: the first that reads as a number wins, as coalesce does
    spans.append((f"{n:016x}", None, {"gen_ai.usage.cost": "n/a", "llm.cost.total": 0.5}))
    # message content keys, for has_content
    spans.append((f"{n + 1:016x}", None, {"gen_ai.operation.name": "chat", "gen_ai.prompt.0.content": "hi"}))
    spans.append((f"{n + 2:016x}", None, {"gen_ai.operation.name": "chat", "note": "messages in a value"}))
    rows = rows_from_request(parse_json_traces(_doc(spans)))
    _both_ways(tmp_path, rows, ["span_facts"])


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_dialect_rebuilds_the_same_from_the_columns_and_from_the_json(tmp_path: Path, dialect: str) -> None:
    rows = rows_from_request(parse_json_traces(fixture_doc(dialect)))
    _both_ways(tmp_path, rows, ["span_facts", "steps", "trajectories", "retries", "requested_tool_calls", "runs"])


@pytest.mark.needs("corpus")
def test_the_corpus_rebuilds_the_same_from_the_columns_and_from_the_json(tmp_path: Path) -> None:
    import json

    rows = []
    for path in corpus_recordings():
        rows += rows_from_request(parse_json_traces(json.loads(path.read_text())))
    _both_ways(tmp_path, rows, ["span_facts", "steps", "trajectories", "requested_tool_calls"])
