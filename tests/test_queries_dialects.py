"""Reconstruction on hand-made traces of each dialect (tests/fixtures/otlp/README.md tells the story).

Every dialect records the same conversation, so every dialect must rebuild the same turns, steps, gap,
retry and session; duplicated, split and shuffled arrival must change nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fixtures.otlp_lakes import DIALECTS, fixture_doc, ingest_fixture, ingest_scrambled, rows_without

from tracevals.queries import open_lake

LOOKUP = {"order_id": 7}
REFUND = {"order_id": 7, "reason": "late"}
SEND = {"to": "customer", "text": "Refunded"}


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    relation = con.sql(sql)
    return [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


@pytest.fixture(scope="module", params=DIALECTS)
def dialect_lake(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, duckdb.DuckDBPyConnection]:
    lake = tmp_path_factory.mktemp(request.param) / "lake"
    ingest_fixture(lake, request.param)
    # a snapshot: the same rows as the views (test_a_snapshot_reads_the_same_as_the_views), planned faster
    return request.param, open_lake(lake, materialize=True)


def test_turns_are_rebuilt_the_same_in_every_dialect(dialect_lake: tuple[str, duckdb.DuckDBPyConnection]) -> None:
    _, con = dialect_lake
    turns = _rows(con, "SELECT * FROM turns ORDER BY turn_index")
    assert [t["turn_index"] for t in turns] == [1, 2]
    first, second = turns
    assert (first["user_text"], first["final_text"]) == ("Refund order 7", "Refunded order 7.")
    assert first["intermediate_texts"] == ["Checking the order."]
    assert first["agents"] == ["shop"] and second["agents"] == ["shop"]
    calls = [
        (c["name"], _json(c["args"]), _json(c["result"]), c["is_error"], c["error_type"], c["is_gap"])
        for c in first["tool_calls"]
    ]
    # the calls one response asked for in the order it asked (refund_order, then send_message), the retry
    # beside the call it retries (the `steps` view keeps time order: the gap right after the response)
    assert calls == [
        ("lookup_order", LOOKUP, {"order_id": 7, "status": "delivered"}, False, None, False),
        ("refund_order", REFUND, None, True, "rate_limit", False),
        ("refund_order", REFUND, {"refunded": True}, False, None, False),
        ("send_message", SEND, None, False, None, True),  # asked for, never executed: rebuilt from the message
    ]
    # hand calculation: 100 + 200 + 300 in, 10 + 20 + 30 out; turn 2: 50 / 5
    assert (first["input_tokens"], first["output_tokens"], first["model_call_count"]) == (600, 60, 3)
    assert (second["user_text"], second["final_text"], second["tool_calls"]) == ("Thanks!", "You're welcome.", [])
    assert (second["input_tokens"], second["output_tokens"]) == (50, 5)
    assert first["gap_count"] == 1 and first["tool_call_count"] == 3


def test_steps_order_collapse_nested_calls_and_place_the_gap(
    dialect_lake: tuple[str, duckdb.DuckDBPyConnection],
) -> None:
    dialect, con = dialect_lake
    steps = _rows(con, "SELECT * FROM steps WHERE session_id LIKE 'sess-%' ORDER BY start_time, step_index")
    first = [(s["step_kind"], s["name"], s["status"]) for s in steps if s["step_index"] and s["trace_id"].endswith("c")]
    assert first == [
        ("llm", "gpt-x", "ok"),
        ("tool", "lookup_order", "ok"),
        ("llm", "gpt-x", "ok"),
        ("tool", "send_message", "gap"),  # right after the response that asked for it
        ("tool", "refund_order", "error"),
        ("tool", "refund_order", "ok"),
        ("llm", "gpt-x", "ok"),
    ]
    # framework -> MCP client (-> HTTP) -> MCP server: one call, named after the outermost span
    (nested,) = _rows(con, "SELECT span_count, span_id FROM tool_calls WHERE tool_name = 'lookup_order'")
    assert nested["span_count"] == (2 if dialect == "openllmetry" else 3)
    outer = con.execute(
        "SELECT parent_span_id IS NOT NULL AND kind = 'tool' FROM span_facts WHERE span_id = ?", [nested["span_id"]]
    ).fetchall()
    assert outer == [(True,)]
    # step_index is 1..n per trace, start time then span id
    for trace in {s["trace_id"] for s in steps}:
        indexes = [s["step_index"] for s in steps if s["trace_id"] == trace]
        assert sorted(indexes) == list(range(1, len(indexes) + 1))


def test_gap_retry_and_session(dialect_lake: tuple[str, duckdb.DuckDBPyConnection]) -> None:
    dialect, con = dialect_lake
    (gap,) = _rows(con, "SELECT * FROM tool_call_gaps")
    assert (gap["tool_name"], _json(gap["tool_args"])) == ("send_message", SEND)
    requested = _rows(con, "SELECT tool_name, is_gap, matched_by FROM requested_tool_calls ORDER BY request_index")
    assert [(r["tool_name"], r["is_gap"]) for r in requested] == [
        ("lookup_order", False),
        ("refund_order", False),
        ("send_message", True),
    ]
    # ids where the dialect has them; OpenLLMetry's tool spans carry none, so they match by order
    assert {r["matched_by"] for r in requested if not r["is_gap"]} == {"order" if dialect == "openllmetry" else "id"}
    (retry,) = _rows(con, "SELECT * FROM retries")
    # hand calculation: the failed call ended at 320 ms, the retry started at 330 ms
    assert (retry["name"], retry["error_type"], retry["retry_number"], retry["wait_ms"]) == (
        "refund_order",
        "rate_limit",
        1,
        10.0,
    )
    assert retry["retry_failed"] is False and retry["chain_length"] == 2
    (session,) = _rows(con, "SELECT * FROM sessions")
    assert session["turn_count"] == 2 and session["finished"] is True and session["terminal_state"] == "completed"
    assert session["finished_by"] == ("end_marker" if dialect == "genai_current" else "root_ended")
    assert (session["input_tokens"], session["output_tokens"]) == (650, 65)
    assert session["duration_ms"] == 5200.0
    (trajectory,) = _rows(con, "SELECT * FROM trajectories WHERE trace_id LIKE '%c'")
    assert trajectory["tools"] == ["lookup_order", "refund_order", "refund_order"]
    assert [s["status"] for s in trajectory["steps"]] == ["ok", "ok", "ok", "gap", "error", "ok", "ok"]
    assert (trajectory["gap_count"], trajectory["tool_error_count"], trajectory["status"]) == (1, 1, "ok")


def test_the_dialect_is_recorded(dialect_lake: tuple[str, duckdb.DuckDBPyConnection]) -> None:
    dialect, con = dialect_lake
    expected = {"genai_current": "genai"}.get(dialect, dialect)
    kinds = dict(con.execute("SELECT dialect, count(*) FROM genai_spans GROUP BY 1").fetchall())
    assert max(kinds, key=lambda d: kinds[d]) == expected


VIEWS_COMPARED = ("turns", "steps", "trajectories", "sessions", "retries", "requested_tool_calls", "model_calls")


def _snapshot(lake: Path, materialize: bool = True, views: tuple[str, ...] = VIEWS_COMPARED) -> dict[str, Any]:
    con = open_lake(lake, materialize=materialize)
    return {view: rows_without(_rows(con, f"SELECT * FROM {view} ORDER BY ALL"), "source_file") for view in views}


@pytest.mark.parametrize("seed", [1, 2])
def test_duplicated_split_and_shuffled_arrival_change_nothing(tmp_path: Path, seed: int) -> None:
    whole, scrambled = tmp_path / "whole", tmp_path / "scrambled"
    for dialect in DIALECTS:
        ingest_fixture(whole, dialect)
    ingest_scrambled(scrambled, [fixture_doc(d) for d in DIALECTS], seed=seed)
    raw = open_lake(scrambled).execute("SELECT count(*) > (SELECT count(*) FROM spans) FROM raw_spans").fetchall()
    assert raw == [(True,)]  # the scrambled lake does hold duplicates
    assert _snapshot(scrambled) == _snapshot(whole)


def test_a_snapshot_reads_the_same_as_the_views(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    for dialect in ("genai_current", "genai_legacy"):
        ingest_fixture(lake, dialect)
    views = ("turns", "steps", "sessions")
    assert _snapshot(lake, materialize=True, views=views) == _snapshot(lake, materialize=False, views=views)
