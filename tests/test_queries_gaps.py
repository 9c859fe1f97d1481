"""Gaps: `tool_call_gaps` (the fast rule the steps and trajectories read) must flag exactly the requests that
`requested_tool_calls` (request-by-request matching) flags as gaps, on traces of any shape: a tool asked
for more or fewer times than it ran, the same count of calls to other tools, requests without a name or
an id, ids that match an execution of another tool, nested tool spans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fixtures.lake_rows import span_row
from fixtures.plain import plain_rows
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tracevals.lake.writer import LakeWriter
from tracevals.queries import open_lake, session_lookup

NAMES = st.sampled_from(["search", "refund", "send", None])
IDS = st.sampled_from(["c1", "c2", "c3", None])
REQUEST = st.tuples(NAMES, IDS)
MODEL_CALL = st.lists(REQUEST, max_size=3)
EXECUTION = st.tuples(NAMES, IDS, st.booleans())  # (tool, call id, nested in a framework span)
TRACE = st.tuples(st.lists(MODEL_CALL, min_size=1, max_size=3), st.lists(EXECUTION, max_size=4))


Request = tuple[str | None, str | None]
Execution = tuple[str | None, str | None, bool]


def _rows(traces: list[tuple[list[list[Request]], list[Execution]]]) -> list[dict[str, Any]]:
    rows = []
    for t, (model_calls, executions) in enumerate(traces):
        trace, root = f"{t + 1:032x}", f"{1:016x}"
        rows.append(span_row(trace, root, None, "agent", 0))
        ids = (f"{n:016x}" for n in range(2, 1000))
        # model calls and executions alternate in time, so that the order match has an order to follow
        for i in range(max(len(model_calls), len(executions))):
            at = 10 * i + 1
            if i < len(model_calls):
                attributes = {
                    "tracevals.tool_calls.names": [name for name, _ in model_calls[i]],
                    "tracevals.tool_calls.ids": [call_id for _, call_id in model_calls[i]],
                }
                rows.append(span_row(trace, next(ids), root, "llm", at, attributes=json.dumps(attributes), model="m"))
            if i < len(executions):
                name, call_id, nested = executions[i]
                span = next(ids)
                rows.append(span_row(trace, span, root, "tool", at + 5, tool_name=name, tool_call_id=call_id))
                if nested:  # the same call seen again by the tool's own client: one call, not two
                    rows.append(span_row(trace, next(ids), span, "tool", at + 6, tool_name=name, tool_call_id=call_id))
    return rows


GAP_COLUMNS = "trace_id, request_index, model_span_id, tool_name, tool_call_id"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(traces=st.lists(TRACE, min_size=1, max_size=25))
def test_tool_call_gaps_are_the_unmatched_requests(tmp_path_factory: Any, traces: Any) -> None:
    lake: Path = tmp_path_factory.mktemp("lake")
    LakeWriter(lake).write_rows(_rows(traces))
    con = open_lake(lake)
    fast = con.execute(f"SELECT {GAP_COLUMNS} FROM tool_call_gaps ORDER BY ALL").fetchall()
    matched = con.execute(f"SELECT {GAP_COLUMNS} FROM requested_tool_calls WHERE is_gap ORDER BY ALL").fetchall()
    assert fast == matched
    # and the steps show each gap once, as a gap step
    [(gap_steps,)] = con.execute("SELECT count(*) FROM steps WHERE is_gap").fetchall()
    assert gap_steps == len(fast)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(traces=st.lists(TRACE, min_size=1, max_size=6))
@example(traces=[([[("search", "c1"), ("refund", "c2")], [("send", None)]], [("search", "c1", True)])])
def test_a_session_without_content_looks_up_as_the_views_compute_it(tmp_path_factory: Any, traces: Any) -> None:
    """No message content (capture is off by default) and no log records: session_lookup reads the message
    views as empty tables instead of computing them; every view of the session must be what the views say,
    gaps (found from the requested-call attributes alone) included."""
    lake: Path = tmp_path_factory.mktemp("lake")
    LakeWriter(lake).write_rows(_rows(traces))
    con = open_lake(lake)
    snapshot = open_lake(lake, materialize=True)  # message_parts is a snapshot there, copied for the lookup
    for view in ("trajectories", "steps", "tool_call_gaps"):
        expected = con.execute(f"SELECT * FROM {view} WHERE session_id = 's-0000'").fetchall()
        for connection in (con, snapshot):
            looked_up = plain_rows(session_lookup(connection, "s-0000", view).to_pylist())
            assert sorted(map(repr, looked_up)) == sorted(map(repr, expected))
        assert expected or view == "tool_call_gaps"
    # the lookup took the shortcut: it made the empty stand-in of the message views (kept for the next one)
    tables = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
    assert {"tv_empty_message_sources", "tv_empty_message_parts"} <= tables
    # the views are back as they were, the snapshot's too
    for connection in (con, snapshot):
        shadows = "SELECT count(*) FROM duckdb_views() WHERE temporary AND view_name LIKE 'message_%'"
        assert connection.execute(shadows).fetchall() == [(0,)]
        assert connection.execute("SELECT count(*) FROM trajectories").fetchall() == [(len(traces),)]
