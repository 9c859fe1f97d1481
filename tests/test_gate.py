"""Acceptance: `tracevals gate` fails the demo's candidate for its regression, with a reason a person can
act on, and passes a variant that meets the thresholds. Through the CLI, on a lake from a small demo run
(-k 3) to which a disciplined variant (`fixed`, zero mistake rates, scored by the gate itself) is added.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from fixtures.simulated import run_demo_agent

import tracevals
from tracevals.cli import main
from tracevals.cli.demo import bundled_tasks
from tracevals.demo.profiles import make_profile
from tracevals.demo.rates import FailureRates
from tracevals.model.tasks import load_cases
from tracevals.simulator import DEFAULT_REGISTRY, SimulatedModelServer

FIXED_MODEL = "order-support-fixed"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("gate")
    result = CliRunner().invoke(main, ["demo", "--out", str(out), "-k", "3", "--seed", "1", "--format", "json"])
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    lake = out / "lake"
    # A third variant in the same run: the candidate with its mistakes fixed. Its scores are not
    # written, so the gate scores it on the fly.
    DEFAULT_REGISTRY.add(make_profile(FIXED_MODEL, FailureRates.zero()))
    telemetry = tracevals.instrument(lake=lake, batch=True)
    try:
        with SimulatedModelServer() as server:
            cases = load_cases(bundled_tasks())
            run_demo_agent(server, FIXED_MODEL, cases, k=3, run_id=run_id, variant="fixed", seed=1, concurrency=8)
    finally:
        telemetry.shutdown()
        DEFAULT_REGISTRY.remove(FIXED_MODEL)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return {"out": out, "lake": str(lake), "run_id": run_id, "report": report}


def gate(demo: dict[str, Any], *args: str) -> Result:
    return CliRunner().invoke(main, ["gate", "--lake", demo["lake"], "--run", demo["run_id"], *args])


def test_gate_fails_the_candidate_for_its_regression(demo: dict[str, Any], tmp_path: Path) -> None:
    deltas = demo["report"]["comparison"]["deltas"]
    worst = deltas[0]
    # the demo's candidate is built to regress: at k = 3 its worst task loses at least one attempt in three
    assert worst["regression"] and worst["delta"] <= -1 / 3 + 1e-9
    # Only the regression check, so that the verdict can be nothing but the regression.
    config = tmp_path / "gate.yaml"
    config.write_text("max_task_regression: 0.2\nforbid: []\nfail_on_significant_regression: false\n")
    result = gate(demo, "--baseline", "baseline", "--candidate", "candidate", "--config", str(config))
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("FAIL: candidate against baseline (run ")
    assert "20 tasks; n = 60 vs 60 attempts" in lines[0]
    b, c = worst["baseline"], worst["candidate"]
    over = [d for d in deltas if -d["delta"] > 0.2]
    assert lines[1].startswith(f"  FAIL max_task_regression: {len(over)} task")
    assert f"{worst['task_id']} fell from {b['c']}/{b['n']} to {c['c']}/{c['n']} ({worst['delta']:+.3f})" in lines[1]
    assert lines[-1] == (
        f"  see the failed attempts: tracevals report --lake {demo['lake']} --run {demo['run_id']} "
        "--baseline baseline --candidate candidate --out gate-report.html"
    )
    assert len(lines) == 3  # a few lines a person reads, not a log


def test_gate_json_names_the_failed_checks_and_tasks(demo: dict[str, Any]) -> None:
    # Default policy (no do_not_ship task, no significant regression) plus a per-task limit.
    result = gate(
        demo, "--baseline", "baseline", "--candidate", "candidate", "--max-task-regression", "0.2", "--format", "json"
    )
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["passed"] is False and doc["n"] == {"baseline": 60, "candidate": 60}
    checks = {c["check"]: c for c in doc["checks"]}
    assert set(checks) == {"max_task_regression", "forbid:do_not_ship", "significant_regression"}
    assert checks["max_task_regression"]["passed"] is False
    expected = [d["task_id"] for d in demo["report"]["comparison"]["deltas"] if -d["delta"] > 0.2]
    assert checks["max_task_regression"]["tasks"] == expected
    # the demo's candidate has tasks that must not ship (unauthorised calls, tasks that mostly fail)
    dont_ship = [
        t["task_id"] for t in demo["report"]["variants"]["candidate"]["tasks"] if t["category"] == "do_not_ship"
    ]
    assert dont_ship and checks["forbid:do_not_ship"]["tasks"] == dont_ship
    assert checks["forbid:do_not_ship"]["passed"] is False
    assert doc["next"].startswith("tracevals report --lake")
    # --format csv: the same checks, one row each, failures first (the choices of every command's --format)
    rows = gate(
        demo, "--baseline", "baseline", "--candidate", "candidate", "--max-task-regression", "0.2", "--format", "csv"
    )
    assert rows.exit_code == 1
    table = list(csv.DictReader(io.StringIO(rows.stdout)))
    assert {r["check"]: r["passed"] for r in table} == {c: str(checks[c]["passed"]) for c in checks}
    assert [r["passed"] for r in table] == sorted((r["passed"] for r in table), key=lambda p: p == "True")
    assert table[0]["tasks"].split(";")[0] in {*expected, *dont_ship}


def test_gate_passes_a_variant_that_meets_the_thresholds(demo: dict[str, Any]) -> None:
    result = gate(
        demo,
        "--baseline", "baseline", "--candidate", "fixed",
        "--min-pass-hat-k", "0.9", "--at-k", "3", "--max-task-regression", "0", "--max-regression", "0",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("PASS: fixed against baseline")
    assert all(line.startswith("  ok   ") for line in lines[1:])
    assert any("pass^3 1.000 over 20 tasks (n = 60) vs minimum 0.9" in line for line in lines)
    assert any("forbid:do_not_ship: no task is do not ship" in line for line in lines)


@pytest.mark.parametrize(
    ("args", "config", "message"),
    [
        (["--baseline", "baseline", "--candidate", "nope"], None, "variant nope not in the selection"),
        (["--baseline", "baseline", "--candidate", "baseline"], None, "compare two variants"),
        (["--baseline", "baseline", "--candidate", "candidate"], "max_regresion: 0.1\n", "unknown key 'max_regresion'"),
        (["--baseline", "baseline", "--candidate", "candidate"], "max_regression: [\n", "not valid YAML"),
        (["--baseline", "baseline", "--candidate", "candidate"], "forbid: [dont_ship]\n", "forbid: unknown category"),
        # a value out of range names the file, as a bad key does (it did not)
        (
            ["--baseline", "baseline", "--candidate", "candidate"],
            "min_pass_rate: 2\n",
            "gate.yaml: min_pass_rate must be",
        ),
        (["--baseline", "baseline", "--candidate", "candidate", "--since", "last tuesday"], None, "is not a time"),
    ],
)
def test_bad_input_is_one_line(
    demo: dict[str, Any], tmp_path: Path, args: list[str], config: str | None, message: str
) -> None:
    if config is not None:
        (tmp_path / "gate.yaml").write_text(config)
        args = [*args, "--config", str(tmp_path / "gate.yaml")]
    result = gate(demo, *args)
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


def test_report_command(demo: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "fixed.json"
    args = ["report", "--lake", demo["lake"], "--baseline", "baseline", "--candidate", "fixed", "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert (printed["out"], printed["format"]) == (str(out), "json")
    doc = json.loads(out.read_text())
    assert set(doc["variants"]) == {"baseline", "fixed"}
    assert doc["variants"]["fixed"]["pass_hat_k"]["3"] == 1.0
    assert doc["meta"]["scores_computed"] > 0  # the fixed variant had no stored scores
    assert doc["meta"]["runs"] == [demo["run_id"]] and doc["meta"]["selected_by"] == "latest run"


def test_help_has_examples() -> None:
    for command in ("gate", "report"):
        result = CliRunner().invoke(main, [command, "--help"])
        assert result.exit_code == 0 and "Examples:" in result.output and "--lake" in result.output


def test_report_over_a_date_range_and_a_sample(demo: dict[str, Any], tmp_path: Path) -> None:
    from tracevals.lake.sampling import session_sampled

    start = demo["report"]["meta"]["date_from"]
    out = tmp_path / "sample.json"
    args = ["report", "--lake", demo["lake"], "--since", start, "--sample", "0.5", "--seed", "3"]
    result = CliRunner().invoke(main, [*args, "--baseline", "baseline", "--candidate", "candidate", "--out", str(out)])
    assert result.exit_code == 0, result.output
    meta = json.loads(out.read_text())["meta"]
    assert (meta["sample_fraction"], meta["sample_seed"], meta["sample_source"]) == (0.5, 3, "--sample")
    assert meta["sessions_eligible"] == 120  # every session of the two variants starts after `start`
    # the same sessions `tracevals score --sample 0.5 --seed 3` would pick (one session per attempt here)
    runs = CliRunner().invoke(
        main,
        ["sql", "--lake", demo["lake"], "--format", "json", "select session_id from runs where variant <> 'fixed'"],
    )
    expected = sum(session_sampled(r["session_id"], 0.5, 3) for r in json.loads(runs.stdout))
    assert meta["sessions_selected"] == expected and 30 < expected < 90
    late = CliRunner().invoke(main, ["report", "--lake", demo["lake"], "--since", "2100-01-01", "--out", str(out)])
    assert late.exit_code == 1 and "no attempts match" in late.stderr


HOSTILE_AGENT = """
import tracevals
send = tracevals.tool(effect="write", name="send\\x1b[2J\\x1b]0;pwned\\x07_msg\\u202e")(lambda to: {"ok": True})
def run(input, ctx):
    send("a")
    send("a")  # a duplicate side effect, named by the hostile tool name
    return "done"
"""


def test_a_verdict_piped_shows_the_span_values_it_quotes_escaped(tmp_path: Path) -> None:
    """The gate's verdict quotes what the spans said (a tool's name, a task's id): piped into a CI log it printed
    them raw, `\\x1b[2J` (clear the screen) and `\\x1b]0;` (the window's title) included, though a table of the
    same values is `shown` piped or not. Text for reading is `shown` now (`output.echo_prose`); JSON escapes
    them as JSON does."""
    (tmp_path / "hostile_agent.py").write_text(HOSTILE_AGENT)
    (tmp_path / "tasks.jsonl").write_text('{"case_id": "c\\u001b[31m1", "input": "x"}\n')
    lake = str(tmp_path / "lake")
    for variant in ("baseline", "candidate"):
        result = CliRunner().invoke(main, ["run", "--tasks", str(tmp_path / "tasks.jsonl"), "--agent",
                                           f"{tmp_path / 'hostile_agent.py'}:run", "-k", "2", "--variant", variant,
                                           "--run-id", "r1", "--lake", lake, "--resume"])  # fmt: skip
        assert result.exit_code in (0, 1), result.output
    for args in ([], ["--format", "json"]):
        result = CliRunner().invoke(main, ["gate", "--lake", lake, "--run", "r1", "--baseline", "baseline",
                                           "--candidate", "candidate", *args])  # fmt: skip
        assert result.exit_code == 1 and "\x1b" not in result.output and "\x07" not in result.output, args
        assert "send\\u001b[2J\\u001b]0;pwned\\u0007_msg\\u202e#2" in result.output or args, result.output
