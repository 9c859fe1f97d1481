"""Every query of docs/cookbook.md runs against the lake of a real `tracevals demo -k 2` run.

The demo runs the bundled order-support cases on a simulated model with injected faults (429s with
Retry-After, timeouts, bad arguments), hand-overs and an irreversible `delete_order`: several questions
must find something there, and the answers are checked against facts computed another way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from tracevals.cli import main
from tracevals.queries import open_lake

COOKBOOK = Path(__file__).resolve().parents[1] / "docs" / "cookbook.md"


def cookbook_queries() -> dict[str, str]:
    """{id: SQL} for every ```sql block of the cookbook (each names itself with `-- id: ...`)."""
    blocks = re.findall(r"```sql\n(.*?)```", COOKBOOK.read_text(encoding="utf-8"), re.S)
    queries = {}
    for block in blocks:
        match = re.search(r"^-- id: (\w+)$", block, re.M)
        assert match, f"a cookbook query has no `-- id:` line:\n{block}"
        queries[match.group(1)] = block
    return queries


QUERIES = cookbook_queries()


@pytest.fixture(scope="module")
def demo_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(main, ["demo", "--out", str(out), "-k", "2", "--seed", "1"])
    assert result.exit_code == 0, result.output
    return out / "lake"


@pytest.fixture(scope="module")
def con(demo_lake: Path) -> duckdb.DuckDBPyConnection:
    return open_lake(demo_lake, materialize=True)


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    relation = con.sql(sql)
    return [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]


def test_the_cookbook_answers_at_least_ten_questions() -> None:
    assert len(QUERIES) >= 10


@pytest.mark.parametrize("query_id", sorted(QUERIES))
def test_every_cookbook_query_runs(con: duckdb.DuckDBPyConnection, query_id: str) -> None:
    _rows(con, QUERIES[query_id])


def test_delete_without_handoff(con: duckdb.DuckDBPyConnection) -> None:
    rows = _rows(con, QUERIES["delete_without_handoff"])
    deleted = _rows(con, "SELECT DISTINCT session_id FROM tool_calls WHERE tool_name = 'delete_order' AND NOT is_error")
    handed = {r["session_id"] for r in _rows(con, "SELECT DISTINCT session_id FROM handoffs")}
    assert {r["session_id"] for r in rows} == {d["session_id"] for d in deleted} - handed


def test_no_backoff_429(con: duckdb.DuckDBPyConnection) -> None:
    rows = _rows(con, QUERIES["no_backoff_429"])
    assert rows  # the demo's agent sometimes retries a 429 at once
    assert all(r["waited_ms"] < r["asked_ms"] for r in rows)


def test_cost_per_task_variant(con: duckdb.DuckDBPyConnection) -> None:
    rows = _rows(con, QUERIES["cost_per_task_variant"])
    assert {r["variant"] for r in rows} == {"baseline", "candidate"} and len(rows) == 40  # 20 tasks x 2 variants
    assert all(r["runs"] == 2 and r["cost_per_run_usd"] > 0 for r in rows)
    # hand calculation of one row from model_calls: tokens x (0.15 in, 0.60 out) USD per million
    row = rows[0]
    (expected,) = _rows(
        con,
        f"""SELECT sum(m.input_tokens) * 0.15 / 1e6 + sum(m.output_tokens) * 0.60 / 1e6 AS usd
            FROM model_calls AS m JOIN runs AS r USING (trace_id)
            WHERE r.task_id = '{row["task_id"]}' AND r.variant = '{row["variant"]}'""",
    )
    assert row["cost_per_run_usd"] == pytest.approx(expected["usd"] / 2, abs=1e-6)


def test_slowest_tool(con: duckdb.DuckDBPyConnection) -> None:
    rows = _rows(con, QUERIES["slowest_tool"])
    assert rows[0]["p95_ms"] == max(r["p95_ms"] for r in rows) and sum(r["calls"] for r in rows) > 100


def test_terminal_states_and_never_finished(con: duckdb.DuckDBPyConnection) -> None:
    states = _rows(con, QUERIES["terminal_states"])
    # every demo attempt ends its session explicitly; some by handing over to a human
    assert {r["finished_by"] for r in states} == {"end_marker"}
    assert {"completed", "handoff"} <= {r["terminal_state"] for r in states}
    assert sum(r["sessions"] for r in states) == 80  # 20 cases x 2 attempts x 2 variants
    assert _rows(con, QUERIES["never_finished"]) == []


def test_tool_errors_and_regressions(con: duckdb.DuckDBPyConnection) -> None:
    errors = _rows(con, QUERIES["tool_errors"])
    assert {"rate_limit", "timeout"} <= {r["error_type"] for r in errors}
    assert all(0 < r["share_of_calls"] <= 1 for r in errors)
    regressions = _rows(con, QUERIES["regressions"])
    assert len(regressions) == 20 and regressions == sorted(regressions, key=lambda r: (r["delta"], r["task_id"]))


def test_pending_handoffs_and_sequences(con: duckdb.DuckDBPyConnection) -> None:
    pending = _rows(con, QUERIES["pending_handoffs"])
    assert pending and all(r["reason"] for r in pending)
    sequences = _rows(con, QUERIES["tool_sequences"])
    assert any(r["sequence"].startswith("search_customer") for r in sequences)
    steps = _rows(con, QUERIES["steps_per_variant"])
    assert [r["variant"] for r in steps] == ["baseline", "candidate"] and all(r["attempts"] == 40 for r in steps)


def test_the_cli_runs_a_cookbook_query_from_a_file(demo_lake: Path, tmp_path: Path) -> None:
    path = tmp_path / "slowest_tool.sql"
    path.write_text(QUERIES["slowest_tool"])
    result = CliRunner().invoke(main, ["sql", "--lake", str(demo_lake), "--format", "csv", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "tool_name,calls,avg_ms,p95_ms,max_ms"
