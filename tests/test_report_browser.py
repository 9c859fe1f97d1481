"""Acceptance: the demo's HTML report opens in headless Chromium with no console error, and its content,
read from the rendered page, matches the JSON report of the same run.

Chromium is Debian's (`scripts/install-chromium.sh`, run by `make test`). The test skips only when that
browser is genuinely absent, and says so loudly; with TRACEVALS_REQUIRE_CHROMIUM=1 (CI) it fails instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.browser import CHROMIUM, FLAGS
from fixtures.demo_run import shared_demo
from fixtures.requirements import need

from tracevals.cli import main


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_demo(tmp_path_factory)  # built once per test run (the UI's browser test reads it too)


@contextmanager
def opened(path: Path) -> Iterator[tuple[Any, list[str], list[str]]]:
    """`path` in headless Chromium at 1,280 x 900: (the tab, the console errors, the URLs requested)."""
    need("chromium")
    from playwright.sync_api import sync_playwright  # a dev dependency: missing means a broken set-up, not a skip

    problems: list[str] = []
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            tab.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            tab.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            tab.on("request", lambda r: requests.append(r.url))
            tab.goto(path.as_uri(), wait_until="load")
            yield tab, problems, requests
        finally:
            browser.close()


@pytest.fixture(scope="module")
def page(demo_dir: Path) -> Iterator[tuple[Any, list[str], list[str]]]:
    with opened(demo_dir / "report.html") as opened_page:
        yield opened_page


@pytest.fixture(scope="module")
def report(demo_dir: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((demo_dir / "report.json").read_text(encoding="utf-8"))
    return doc


def test_opens_offline_with_no_console_error(page: tuple[Any, list[str], list[str]], demo_dir: Path) -> None:
    tab, problems, requests = page
    assert problems == []
    assert requests == [(demo_dir / "report.html").as_uri()]  # the page itself, nothing else
    assert tab.title().startswith("tracevals report")


def test_summary_matches_the_json_report(page: tuple[Any, list[str], list[str]], report: dict[str, Any]) -> None:
    tab = page[0]
    rows = tab.locator("#summary-table tbody tr")
    assert rows.count() == 2
    for i, name in enumerate(["baseline", "candidate"]):
        v = report["variants"][name]
        cells = rows.nth(i).locator("td").all_inner_texts()
        assert cells[0] == name and cells[1] == str(v["n"]) == "60"
        assert cells[3].startswith(f"{v['pass_at_1']:.3f}")
        assert f"({v['passes']}/{v['n']}) [{v['wilson'][0]:.3f}, {v['wilson'][1]:.3f}]" in cells[4]
        assert cells[6] == f"{v['pass_hat_k'][str(v['k'])]:.3f} (k=3)"
        assert cells[8] == f"{v['worst_task']['task_id']} {v['worst_task']['c']}/{v['worst_task']['n']}"


def test_pass_hat_k_chart_has_a_line_per_variant(
    page: tuple[Any, list[str], list[str]], report: dict[str, Any]
) -> None:
    fig = page[0].locator('figure[data-figure="pass-hat-k"]')
    assert fig.locator("svg polyline:not([stroke-dasharray])").count() == 2  # pass^k, one per variant
    assert fig.locator("svg polyline[stroke-dasharray]").count() == 2  # pass@k
    titles = fig.locator("svg circle title").all_text_contents()
    for name, v in report["variants"].items():
        for k, value in v["pass_hat_k"].items():
            assert f"{name} k={k}: {value:.3f}" in titles
    box = fig.locator("svg").bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 200  # it rendered, at a readable size


def test_regressions_come_first(page: tuple[Any, list[str], list[str]], report: dict[str, Any]) -> None:
    tab = page[0]
    deltas = report["comparison"]["deltas"]
    rows = tab.locator("#deltas tbody tr")
    assert rows.count() == len(deltas) == 20
    assert rows.locator("td:first-child").all_inner_texts() == [d["task_id"] for d in deltas]
    shown = [float(x) for x in rows.locator("td:nth-child(6)").all_inner_texts()]
    assert shown == sorted(shown) and shown == [round(d["delta"], 3) for d in deltas]  # worst first
    classes = [rows.nth(i).get_attribute("class") for i in range(rows.count())]
    assert [c == "regression" for c in classes] == [d["regression"] for d in deltas]
    statement = tab.locator("#regressions .statement").inner_text()
    assert statement == report["comparison"]["statement"] + "."
    # the interval chart lists the tasks in the same order, each with one Wilson bar per variant
    labels = tab.locator('figure[data-figure="task-rates"] svg > text').all_text_contents()
    assert [t for t in labels if t in {d["task_id"] for d in deltas}] == [d["task_id"] for d in deltas]
    assert tab.locator('figure[data-figure="task-rates"] svg g line').count() == 2 * len(deltas)


def test_worst_task_faults_and_gallery(page: tuple[Any, list[str], list[str]], report: dict[str, Any]) -> None:
    tab = page[0]
    for name, v in report["variants"].items():
        text = tab.locator(f'#worst-task p.worst[data-variant="{name}"]').inner_text()
        assert text.startswith(
            f"{name}: {v['worst_task']['task_id']} passed {v['worst_task']['c']}/{v['worst_task']['n']}"
        )
    fault_rows = tab.locator("#fault-table tbody tr td:first-child").all_inner_texts()
    assert sorted(set(fault_rows)) == ["empty", "rate_limit", "timeout"]  # the bundled cases inject these
    assert len(fault_rows) == len(report["fault_outcomes"]) == 6
    cards = tab.locator("#gallery article.failure")
    failed = sum(t["n"] - t["c"] for v in report["variants"].values() for t in v["tasks"])
    assert 0 < cards.count() <= failed + 60
    first = cards.first
    # in each group, regressed tasks lead (the worst regression that has a failed attempt there)
    order = [d["task_id"] for d in report["comparison"]["deltas"] if d["regression"]]
    groups = tab.locator("#gallery details.group")
    for g in range(groups.count()):
        in_group = groups.nth(g).locator("article.failure")
        tasks = [in_group.nth(i).get_attribute("data-task") for i in range(in_group.count())]
        regressed = [t for t in order if t in tasks]
        if regressed:
            assert tasks[0] == regressed[0], (g, tasks)
    assert first.locator(".actual li").count() >= 1 and first.locator(".expected li").count() >= 1
    assert first.locator(".expected h4").first.text_content() == "expected (the case)"


def test_provenance_once_per_variant_and_every_figure_its_n(
    page: tuple[Any, list[str], list[str]], report: dict[str, Any]
) -> None:
    tab = page[0]
    meta = report["meta"]
    figures = tab.locator("figure")
    assert figures.count() >= 9
    for i in range(figures.count()):
        caption = figures.nth(i).locator("figcaption.size").inner_text()
        assert caption.startswith("n = ") or "; " in caption, caption
    rows = tab.locator("#provenance-variants tbody tr")
    assert rows.count() == len(meta["variants"]) == 2  # once per variant, nowhere else
    for i, (name, info) in enumerate(meta["variants"].items()):
        cells = rows.nth(i).locator("td").all_inner_texts()
        assert cells[0] == name and cells[2].startswith(info["commits"][0][:12]) and cells[3] == info["lock_hashes"][0]
        assert cells[4] == f"{info['date_from']} – {info['date_to']}"
    assert "100% of sessions (120 of 120)" in tab.locator("#provenance").inner_text()


def test_gallery_grouped_collapsed_and_the_page_short(
    page: tuple[Any, list[str], list[str]], report: dict[str, Any]
) -> None:
    tab = page[0]
    groups = tab.locator("#gallery details.group")
    assert groups.count() >= 2
    assert all(groups.nth(i).get_attribute("open") is None for i in range(groups.count()))  # closed
    counts = [
        int(groups.nth(i).locator("summary").inner_text().split("— ")[1].split()[0]) for i in range(groups.count())
    ]
    assert counts == sorted(counts, reverse=True)  # the largest group first
    failed = sum(1 for v in report["variants"].values() for t in v["tasks"] for _ in range(t["n"] - t["c"]))
    assert sum(counts) >= failed  # every failed attempt is in a group (hazardous passes too)
    assert tab.locator("#gallery article.failure").first.is_visible() is False
    assert tab.evaluate("document.documentElement.scrollHeight") < 6000
    assert tab.evaluate("document.documentElement.scrollWidth") <= 1280  # nothing wider than the window
    # the summary table fits 1,280 px: no row wraps into more than two lines
    heights = tab.evaluate(
        "[...document.querySelectorAll('#summary-table tr')].map(r => r.getBoundingClientRect().height)"
    )
    assert max(heights) < 2.5 * 19  # a 13 px line is ~19 px tall
    groups.first.locator("summary").click()  # opening a group shows its cards, each with the trace's command
    card = groups.first.locator("article.failure").first
    assert card.is_visible() and "select * from steps where trace_id = " in card.locator("code.cmd").inner_text()
    for table in ("evaluator", "tool", "group"):
        assert tab.locator(f"#failures-{table} tbody tr").count() >= 1


def test_three_properties_steps_and_environment_match_the_json(
    page: tuple[Any, list[str], list[str]], report: dict[str, Any]
) -> None:
    tab = page[0]
    rel = report["reliability"]
    rows = tab.locator("#properties-table tbody tr")
    assert rows.count() == 2
    for i, name in enumerate(["baseline", "candidate"]):
        p = rel["properties"][name]
        cells = rows.nth(i).locator("td").all_inner_texts()
        a, c, s = p["availability"], p["correctness"], p["consistency"]
        assert cells[0] == name
        assert cells[1].startswith(f"{a['rate']:.3f} ({a['available']}/{p['attempts']})")
        assert cells[2].startswith(f"{c['rate']:.3f} ({c['passes']}/{p['attempts']})")
        assert f"({s['consistent_tasks']}/{s['measured_tasks']})" in cells[3]
        assert cells[5] == f"{p['verdicts']['flaky']}/20"
    # the interval chart: one Wilson bar per property and variant
    assert tab.locator('figure[data-figure="properties"] svg g line').count() == 6
    # the steps that fail most: the first row loses the most attempts of all the steps in the JSON
    steps = [(t["variant"], t["task_id"], s) for t in rel["steps"] for s in t["steps"]]
    worst = max(s["reached"] - s["succeeded"] for _, _, s in steps)
    first = tab.locator("#step-table tbody tr").first.locator("td").all_inner_texts()
    assert int(first[4]) - int(first[6]) == worst
    # the environment: both models named, the difference stated as the variable under test
    env_text = tab.locator("#environment").inner_text()
    assert "order-support-baseline → order-support-candidate" in env_text.replace("->", "→") or (
        "order-support-baseline -> order-support-candidate" in env_text
    )
    assert "(under test)" in env_text
    differences = rel["environment_comparison"]["differences"]
    assert {d["key"] for d in differences} == {"models_requested", "models_served"}
    assert all(d["declared"] for d in differences)


def test_the_step_reliability_view_is_the_reports_per_step_table(demo_dir: Path) -> None:
    # the `step_reliability` view holds the per-step rows written when the run was scored: one rule
    # (tracevals.stats.steps) with the report
    tmp_path = demo_dir
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
