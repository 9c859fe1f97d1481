"""The views' contract: the columns and types of every view, pinned; evaluators and users read them."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from fixtures.otlp_lakes import DIALECTS, ingest_fixture

from tracevals.model.prices import default_prices
from tracevals.queries import VIEW_NAMES, open_lake

# Renaming or retyping a column breaks readers (evaluators, saved queries): change the pinned contract,
# tests/fixtures/view_columns.json ({view: {column: DuckDB type}}), on purpose.
VIEW_COLUMNS: dict[str, dict[str, str]] = json.loads(
    (Path(__file__).parent / "fixtures" / "view_columns.json").read_text(encoding="utf-8")
)


def _columns(con: duckdb.DuckDBPyConnection, view: str) -> dict[str, str]:
    return {name: type_ for name, type_, *_ in con.execute(f"DESCRIBE SELECT * FROM {view}").fetchall()}


@pytest.fixture(scope="module")
def empty_lake(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    return open_lake(tmp_path_factory.mktemp("empty"))


def test_every_view_is_pinned() -> None:
    assert set(VIEW_COLUMNS) == set(VIEW_NAMES)


@pytest.mark.parametrize("view", VIEW_NAMES)
def test_columns_and_types_on_an_empty_lake(empty_lake: duckdb.DuckDBPyConnection, view: str) -> None:
    assert _columns(empty_lake, view) == VIEW_COLUMNS[view]
    # an empty lake has no rows, but the default price table (tracevals/model/prices.json), one row a model
    expected = len(default_prices()) if view == "model_prices" else 0
    assert empty_lake.execute(f"SELECT count(*) FROM {view}").fetchall() == [(expected,)]


def test_columns_and_types_with_every_dialect_and_logs(tmp_path: Path) -> None:
    # files of every dialect, log records included: a typed empty table and real files agree
    lake = tmp_path / "lake"
    for dialect in DIALECTS:
        ingest_fixture(lake, dialect)
    for con in (open_lake(lake), open_lake(lake, materialize=True)):
        for view in VIEW_NAMES:
            assert _columns(con, view) == VIEW_COLUMNS[view], view
