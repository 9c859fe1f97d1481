"""`tracevals report` and `gate` on a lake the collector filled with production traffic, no harness run.

Real parts throughout: an agent of another framework (plain OTel SDK spans, tests/fixtures/production_traffic.py)
exports over OTLP/HTTP to the real collector on loopback; the report and the gate read the Parquet it wrote.
Every figure checked below is computed by hand from what the fixture sends.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.production_traffic import CRASHED, RETRIED_400, SESSIONS_PER_DAY, Traffic, send_production_traffic

from tracevals.cli import main
from tracevals.collector.testing import running_collector
from tracevals.stats.production import fell_p_value

# The night is yesterday, whole: the fixture stamps its sessions from 10:00 UTC on, and a session that starts
# after the reader's clock (plus the skew allowance) is in no window (tracevals.lake.clock): today's would be
# future-dated whenever this runs before 10:30 UTC.
TODAY = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=1)


@pytest.fixture(scope="module")
def prod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Traffic]]:
    lake = tmp_path_factory.mktemp("production") / "lake"
    with running_collector(lake) as collector:
        traffic = send_production_traffic(f"http://127.0.0.1:{collector.http_port}", TODAY)
    assert not (lake / "run_cases").exists()  # nothing but the collector wrote this lake
    yield lake, traffic


def _report(lake: Path, out: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["report", "--lake", str(lake), "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    assert "the lake holds no harness run: reporting its production sessions" in result.stderr
    return json.loads(out.read_text()) if out.suffix == ".json" else {}


def _hand_p(night_fail: int, night_n: int, before_n: int) -> float:
    """P(X <= night_n - night_fail) when every failure of the whole range fell on the night: with no
    failure before, the night's count is the least it can be, so the tail is one hypergeometric term."""
    total, passes = night_n + before_n, night_n + before_n - night_fail
    return math.comb(passes, night_n - night_fail) * math.comb(night_fail, night_fail) / math.comb(total, night_n)


def test_the_production_report_by_hand(prod: tuple[Path, Traffic], tmp_path: Path) -> None:
    lake, traffic = prod
    doc = _report(lake, tmp_path / "week.json")  # no --since: the last 7 days
    assert doc["schema"] == "tracevals.production_report/1"
    assert doc["days"] == [d.isoformat() for d in traffic.days]
    assert doc["sessions"] == 2 * 3 * SESSIONS_PER_DAY == 60
    assert doc["meta"]["selected_by"] == "the last 7 days (default)"
    assert doc["meta"]["services"] == ["billing-api", "shop-api"]
    assert set(doc["evaluators"]) == {"retry_discipline", "session_completeness"}  # the generic ones apply
    # session completeness: every trace; the 3 crashed ones (root lost) fail
    sc = doc["evaluators"]["session_completeness"]
    assert (sc["passes"], sc["n"]) == (60 - len(CRASHED), 60)
    # retry discipline: every trace with a tool call (the crashed ones executed none); 6 retried a 400
    rd = doc["evaluators"]["retry_discipline"]
    assert (rd["passes"], rd["n"]) == (57 - len(RETRIED_400), 57)
    trends = {t["evaluator"]: t for t in doc["trends"]}
    night_rd = trends["retry_discipline"]
    assert night_rd["night"] == traffic.night.isoformat() and night_rd["before_days"] == 2
    assert (night_rd["night_rate"]["passes"], night_rd["night_rate"]["n"]) == (17 - 6, 17)
    assert (night_rd["before"]["passes"], night_rd["before"]["n"]) == (40, 40)
    assert night_rd["p_value"] == pytest.approx(_hand_p(6, 17, 40), rel=1e-9) and night_rd["significant"]
    night_sc = trends["session_completeness"]
    assert night_sc["p_value"] == pytest.approx(_hand_p(3, 20, 40), rel=1e-9) and night_sc["significant"]
    # per service / agent: billing's refunds agent lost 6 of 30 on retries; the crashed shop traces lost
    # their root span, and with it the only span naming the agent
    groups = {(g["evaluator"], g["service"], g["agent"]): (g["passes"], g["n"]) for g in doc["by_group"]}
    assert groups[("retry_discipline", "billing-api", "refunds")] == (24, 30)
    assert groups[("retry_discipline", "shop-api", "support")] == (27, 27)
    assert groups[("session_completeness", "shop-api", "unknown")] == (0, 3)
    days = {(g["evaluator"], g["day"]): (g["passes"], g["n"]) for g in doc["by_day"]}
    assert days[("retry_discipline", traffic.days[0].isoformat())] == (20, 20)
    assert days[("retry_discipline", traffic.night.isoformat())] == (11, 17)
    low, high = next(
        g["wilson"] for g in doc["by_day"] if g["evaluator"] == "retry_discipline" and g["day"] == str(traffic.night)
    )
    assert low < 11 / 17 < high
    # the worst sessions are the night's, with their reasons; failures by kind and by tool
    worst = {w["session_id"]: w for w in doc["worst_sessions"]}
    retried = {f"billing-api-{traffic.night}-{i:02d}" for i in RETRIED_400}
    crashed = {f"shop-api-{traffic.night}-{i:02d}" for i in CRASHED}
    assert set(worst) == retried | crashed
    assert all("retried a non-retryable error" in " ".join(worst[s]["reasons"]) for s in retried)
    kinds = {(k["evaluator"], k["kind"]): k["sessions"] for k in doc["failure_kinds"]}
    assert kinds[("retry_discipline", "non retryable retried")] == 6
    assert kinds[("session_completeness", "root missing")] == 3
    tools = {t["tool"]: t for t in doc["tools"]}
    assert (tools["refund_order"]["failed"], tools["refund_order"]["calls"]) == (6, 30 + 6)
    assert tools["refund_order"]["error_types"] == {"invalid_request": 6}
    # the same figures once a nightly job has stored the scores: read, not computed again
    scored = CliRunner().invoke(main, ["score", "--lake", str(lake), "--since", str(traffic.days[0])])
    assert scored.exit_code == 0, scored.output
    again = _report(lake, tmp_path / "again.json", "--since", str(traffic.days[0]))
    assert again["meta"]["scores_stored"] == 117 and again["meta"]["scores_computed"] == 0
    assert again["evaluators"] == doc["evaluators"] and again["trends"] == doc["trends"]
    # Markdown and CSV carry the same rates
    _report(lake, tmp_path / "week.md")
    md = (tmp_path / "week.md").read_text()
    assert "| retry_discipline | 0.895 (51/57)" in md and "**fell significantly**" in md
    _report(lake, tmp_path / "week.csv")
    rows = (tmp_path / "week.csv").read_text().splitlines()
    assert rows[0] == "evaluator,service,agent,day,passes,n,rate,wilson_low,wilson_high"
    assert any(r.startswith(f"retry_discipline,*,*,{traffic.night},11,17,") for r in rows)


def test_the_gate_fails_the_night_whose_rate_fell(prod: tuple[Path, Traffic]) -> None:
    lake, traffic = prod
    failed = CliRunner().invoke(main, ["gate", "--lake", str(lake), "--format", "json"])
    assert failed.exit_code == 1, failed.output
    doc = json.loads(failed.stdout)
    assert doc["passed"] is False and doc["night"] == traffic.night.isoformat()
    checks = {c["check"]: c for c in doc["checks"]}
    assert not checks["significant_fall:retry_discipline"]["passed"]
    assert checks["significant_fall:retry_discipline"]["value"] == pytest.approx(fell_p_value(11, 17, 40, 40))
    assert not checks["significant_fall:session_completeness"]["passed"]
    assert f"--until {traffic.night + dt.timedelta(days=1)}" in doc["next"]  # the night included
    # the night before was as good as the day before it: the gate passes it
    earlier = CliRunner().invoke(main, ["gate", "--lake", str(lake), "--until", str(traffic.night)])
    assert earlier.exit_code == 0, earlier.output
    assert earlier.stdout.startswith(f"PASS: the night of {traffic.days[1]} against the days before")
    # thresholds: a drop of 0.15 is within 0.2 once the significance check is off
    lenient = CliRunner().invoke(
        main,
        ["gate", "--lake", str(lake), "--evaluator", "session_completeness", "--max-drop", "0.2",
         "--ignore-significant-regression"],
    )  # fmt: skip
    assert lenient.exit_code == 0, lenient.output
    strict = CliRunner().invoke(main, ["gate", "--lake", str(lake), "--min-rate", "0.9", "--format", "csv"])
    assert strict.exit_code == 1
    assert "min_rate:retry_discipline,False,0.9," in strict.stdout
    for args, message in (
        (["--evaluator", "nope"], "evaluator nope scored nothing here; scored: retry_discipline, session_completeness"),
        (["--baseline", "a", "--candidate", "b"], "a production gate judges the night against the days before"),
        (["--since", "2001-01-01", "--until", "2001-01-02"], "no production sessions start from 2001-01-01"),
    ):
        bad = CliRunner().invoke(main, ["gate", "--lake", str(lake), *args])
        assert bad.exit_code == 1 and message in bad.stderr, bad.output
        assert bad.stderr.strip().splitlines()[-1].startswith("Error: ")


def test_the_production_html_in_chromium(prod: tuple[Path, Traffic], tmp_path: Path) -> None:
    from test_report_browser import opened

    lake, traffic = prod
    out = tmp_path / "week.html"
    _report(lake, out)
    with opened(out) as (tab, problems, requests):
        assert problems == [] and requests == [out.as_uri()]
        rows = tab.locator("#evaluator-table tbody tr")
        assert rows.count() == 2
        first = rows.nth(0).locator("td").all_inner_texts()
        assert first[0] == "retry_discipline" and first[2].startswith("0.647 (11/17)")
        assert rows.nth(0).get_attribute("class") == "fell" and first[-1] == "fell significantly"
        chart = tab.locator('figure[data-figure="trend"] svg')
        assert chart.locator("polyline").count() == 2 and chart.locator("polygon").count() == 2  # line + band
        titles = chart.locator("circle title").all_text_contents()
        assert f"retry_discipline {traffic.night}: 11/17 = 0.647 [0.413, 0.827]" in titles
        groups = tab.locator("#worst details.group")
        assert groups.count() == 2
        assert all(groups.nth(i).get_attribute("open") is None for i in range(groups.count()))
        assert tab.evaluate("document.documentElement.scrollHeight") < 6000
        assert tab.evaluate("document.documentElement.scrollWidth") <= 1280
        tab.screenshot(path=str(tmp_path / "production-closed.png"), full_page=True)
        groups.first.locator("summary").click()
        card = groups.first.locator("article.failure").first
        assert card.is_visible() and "select * from steps where trace_id" in card.inner_text()
