"""The walking skeleton end to end: simulated model -> reference agent -> lake -> views -> scores -> stats.

Real parts throughout: the real `openai` client talks to the simulated server over loopback, spans go
through the real OTel SDK into Parquet, DuckDB reads them back.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from fixtures.simulated import run_demo_agent

import tracevals
from tracevals.cli import main
from tracevals.cli.demo import bundled_tasks
from tracevals.demo.profiles import make_profile
from tracevals.demo.rates import FailureRates
from tracevals.evaluators import evaluate_all
from tracevals.model.tasks import load_cases
from tracevals.queries import open_lake
from tracevals.queries.trajectories import load_trajectories
from tracevals.simulator import DEFAULT_REGISTRY, SimulatedModelServer
from tracevals.stats import summarize
from tracevals.stats.outcomes import outcomes


@pytest.fixture(scope="module")
def demo_out(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    out = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(main, ["demo", "--out", str(out), "-k", "3", "--seed", "1"])
    assert result.exit_code == 0, result.output
    yield out, result.output


def test_demo_prints_pass_at_1_pass_hat_k_and_worst_task(demo_out: tuple[Path, str]) -> None:
    _, output = demo_out
    for heading in ("pass@1", "pass^k", "worst task", "final [Wilson]", "do not ship"):
        assert heading in output
    assert "baseline" in output and "candidate" in output and "(k=3)" in output
    assert "sign test" in output


def _table(output: str) -> list[str]:
    """The lines of the first summary table printed (header to bottom border)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith("└"))
    return lines[start : end + 1]


def test_demo_and_report_print_one_summary_table(demo_out: tuple[Path, str], tmp_path: Path) -> None:
    out, output = demo_out
    report = CliRunner().invoke(main, ["report", "--lake", str(out / "lake"), "--out", str(tmp_path / "r.md")])
    assert report.exit_code == 0, report.output
    assert _table(report.stdout) == _table(output)  # the same renderer, the same figures, cell for cell
    assert max(len(line) for line in _table(output)) <= 120  # a terminal's width, not a report's


def test_demo_writes_reports(demo_out: tuple[Path, str]) -> None:
    out, _ = demo_out
    with open(out / "report.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["variant"] for r in rows] == ["baseline", "candidate"]
    assert all(int(r["runs"]) == 60 for r in rows)  # 20 cases x 3 attempts
    report = json.loads((out / "report.json").read_text())
    assert set(report["variants"]) == {"baseline", "candidate"}
    assert len(report["variants"]["baseline"]["tasks"]) == 20
    assert "Regressions first" in (out / "report.md").read_text()


def test_duckdb_alone_reads_the_lake(demo_out: tuple[Path, str]) -> None:
    out, _ = demo_out
    glob = str(out / "lake" / "spans" / "**" / "*.parquet")
    kinds = dict(
        duckdb.sql(
            f"select kind, count(*) from read_parquet('{glob}', hive_partitioning = true) group by kind"
        ).fetchall()
    )
    assert kinds["llm"] > 0 and kinds["tool"] > 0 and kinds["agent"] == 120 and kinds["session_end"] == 120


def test_sql_json_count_of_tool_calls(demo_out: tuple[Path, str]) -> None:
    out, _ = demo_out
    result = CliRunner().invoke(
        main, ["sql", "--lake", str(out / "lake"), "--format", "json", "select count(*) as n from tool_calls"]
    )
    assert result.exit_code == 0
    rows = json.loads(result.output)
    assert list(rows[0]) == ["n"] and rows[0]["n"] > 120


def test_tool_spans_link_to_the_model_request(demo_out: tuple[Path, str]) -> None:
    """Every executed tool call carries the id of a tool call that a model response in its trace asked for."""
    out, _ = demo_out
    con = open_lake(out / "lake")
    unlinked = con.execute(
        """
        select count(*) from tool_calls t
        where t.tool_call_id is null or not exists (
            select 1 from spans m
            where m.trace_id = t.trace_id and m.kind = 'llm'
              and list_contains(cast(json_extract(m.attributes, '$."tracevals.tool_calls.ids"') as varchar[]),
                                t.tool_call_id))
        """
    ).fetchone()
    assert unlinked == (0,)


def _pass_hat_k(lake: Path, telemetry: tracevals.Telemetry, model: str, rates: FailureRates, k: int) -> float:
    cases = load_cases(bundled_tasks())
    DEFAULT_REGISTRY.add(make_profile(model, rates))
    try:
        with SimulatedModelServer() as server:
            run_demo_agent(server, model, cases, k=k, run_id=model, seed=3, concurrency=8)
    finally:
        DEFAULT_REGISTRY.remove(model)
    telemetry.force_flush()
    con = open_lake(lake)
    trajectories = load_trajectories(con, where=f"run_id = '{model}'")
    scores = evaluate_all(trajectories, {c.case_id: c for c in cases})
    return summarize(outcomes(trajectories, scores))[model].pass_hat_k_headline


def test_pass_hat_k_falls_as_the_model_errs_more(lake: Path) -> None:
    """The figures are real: raise the profile's error rates and pass^k must go down; zero rates pass all."""
    k = 3
    telemetry = tracevals.instrument(lake=lake, batch=True)
    try:
        perfect = _pass_hat_k(lake, telemetry, "test-zero", FailureRates.zero(), k)
        some = _pass_hat_k(lake, telemetry, "test-some", FailureRates.uniform(0.15), k)
        many = _pass_hat_k(lake, telemetry, "test-many", FailureRates.uniform(0.6), k)
    finally:
        telemetry.shutdown()
    assert perfect == 1.0
    assert perfect > some > many
