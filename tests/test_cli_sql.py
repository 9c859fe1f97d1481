"""`tracevals sql`: formats, read-only enforcement, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracevals
from tracevals.cli import main


@tracevals.tool(effect="read")
def get_orders(customer_id: str) -> list[str]:
    return ["ord_1"]


@pytest.fixture
def filled_lake(lake: Path, telemetry: tracevals.Telemetry) -> Path:
    with tracevals.session("s-1"), tracevals.agent("support"):
        get_orders(customer_id="cus_001")
        get_orders(customer_id="cus_002")
    telemetry.force_flush()
    return lake


def _files(lake: Path) -> dict[str, bytes]:
    return {str(p.relative_to(lake)): p.read_bytes() for p in sorted(lake.rglob("*")) if p.is_file()}


def test_json_format_prints_row_objects(filled_lake: Path) -> None:
    result = CliRunner().invoke(
        main, ["sql", "--lake", str(filled_lake), "--format", "json", "select count(*) as n from tool_calls"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"n": 2}]


def test_csv_and_table_formats(filled_lake: Path) -> None:
    query = "select tool_name, call_index from tool_calls order by call_index"
    csv_out = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "--format", "csv", query])
    assert csv_out.exit_code == 0
    assert csv_out.output.splitlines() == ["tool_name,call_index", "get_orders,1", "get_orders,2"]
    table_out = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), query])
    assert table_out.exit_code == 0 and "get_orders" in table_out.output


def test_query_from_a_sql_file(filled_lake: Path, tmp_path: Path) -> None:
    query_file = tmp_path / "q.sql"
    query_file.write_text("select count(*) as traces from trajectories")
    result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "--format", "json", str(query_file)])
    assert json.loads(result.output) == [{"traces": 1}]


@pytest.mark.parametrize(
    "statement",
    [
        "DROP VIEW spans",
        "COPY (SELECT 1) TO 'out.csv'",
        "INSTALL httpfs",
        "ATTACH 'other.db'",
        "SELECT 1; DROP VIEW tool_calls",
        "CREATE TABLE t AS SELECT 1",
    ],
)
def test_writes_are_rejected_and_the_lake_is_untouched(filled_lake: Path, statement: str) -> None:
    before = _files(filled_lake)
    result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), statement])
    assert result.exit_code == 1
    assert "only SELECT queries may run over a lake" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert _files(filled_lake) == before


def test_bad_sql_and_missing_lake_are_one_line_errors(filled_lake: Path, tmp_path: Path) -> None:
    bad = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "select nope from tool_calls"])
    assert bad.exit_code == 1 and bad.output.startswith("Error: query failed:")
    missing = CliRunner().invoke(main, ["sql", "--lake", str(tmp_path / "absent"), "select 1"])
    assert missing.exit_code == 1 and "is not a directory" in missing.output


def test_table_keeps_square_brackets_in_values(filled_lake: Path) -> None:
    result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "select '[a, b]' as v"])
    assert result.exit_code == 0 and "[a, b]" in result.output
