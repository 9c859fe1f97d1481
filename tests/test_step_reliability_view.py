"""The `step_reliability` view holds, for a scored run, the per-step figures the report shows (one rule:
`tracevals.stats.steps`, written when the run is scored), and says which step fails most."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tracevals.cli import main


def test_the_view_is_the_reports_per_step_table(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path), "-k", "2", "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["reliability"]
    expected = sorted(
        (t["variant"], t["task_id"], s["step"], s["tool"], s["reached"], s["right_args"], s["succeeded"])
        for t in report["steps"]
        for s in t["steps"]
    )
    sql = (
        "select variant, task_id, step, tool, reached, right_args, succeeded, lost, rate, product_of_rates "
        "from step_reliability order by variant, task_id, step"
    )
    out = CliRunner().invoke(main, ["sql", "--lake", str(tmp_path / "lake"), "--format", "json", sql])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    rows = doc["rows"] if isinstance(doc, dict) else doc
    got = sorted((r["variant"], r["task_id"], r["step"], r["tool"], r["reached"], r["right_args"], r["succeeded"])
                 for r in rows)  # fmt: skip
    assert got == expected and len(got) > 40
    for r in rows:
        assert r["lost"] == r["reached"] - r["succeeded"]
        assert r["rate"] is None or r["rate"] == r["succeeded"] / r["reached"]
    # the worst step by the view is the worst in the report's table too
    worst = max(rows, key=lambda r: r["lost"])
    assert worst["lost"] == max(s["reached"] - s["succeeded"] for t in report["steps"] for s in t["steps"])
