"""Acceptance: `tracevals ui` walked in Debian's Chromium, on the demo's lake and on a production lake written
by the real collector: every screen with no console error and no request beyond 127.0.0.1, each figure
equal to the report's JSON of the same lake, the k-attempt view highlighting the divergence the
`step_reliability` view records, a hostile span rendered as inert text, a run's new attempts appearing
on an open page, the back button and a narrow screen. One browser for the module; the demo's output is
the one the HTML report's test reads (`fixtures.demo_run`)."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from fixtures.browser import CHROMIUM, FLAGS, require_chromium
from fixtures.demo_run import shared_demo
from fixtures.production_traffic import send_production_traffic
from fixtures.ui_server import Served, serve
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode

from tracevals.cli import main
from tracevals.collector.testing import running_collector
from tracevals.lake.writer import write_table_atomically

TODAY = dt.datetime.now(dt.timezone.utc).date()
WAIT = 120_000  # ms: the figures are computed in the background (seconds on these lakes)
HOSTILE = '<script>alert("name")</script>'
BIG = 1_000_000


class Tab:
    """One page of the module's browser, with what went wrong on it and every URL it requested."""

    def __init__(self, browser: Any, served: Served, width: int = 1280) -> None:
        self.served = served
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        page = self.page
        page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("requestfailed", lambda r: None if "ERR_ABORTED" in (r.failure or "") else
                self.problems.append(f"request failed: {r.url} {r.failure}"))  # fmt: skip
        page.goto(served.url)  # the printed URL: its token becomes the cookie

    def open(self, path: str, ready: str | None = None) -> Any:
        response = self.page.goto(self.served.base + path)
        assert response is not None and response.status == 200, path
        if ready:
            self.page.wait_for_selector(ready, timeout=WAIT)
        return self.page

    def clean(self) -> None:
        """No console error, no failed request, no dialog, nothing requested beyond the UI itself."""
        assert self.problems == [] and self.dialogs == []
        outside = [u for u in self.requests if not (u.startswith(self.served.base + "/") or u.startswith("data:"))]
        assert outside == []


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require_chromium("THE UI ACCEPTANCE TEST")
    from playwright.sync_api import sync_playwright  # a dev dependency: missing means a broken set-up, not a skip

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = shared_demo(tmp_path_factory)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return {"lake": out / "lake", "report": report, "run": report["meta"]["runs"][0]}


@pytest.fixture(scope="module")
def demo_ui(demo: dict[str, Any], browser: Any) -> Iterator[Tab]:
    with serve(demo["lake"]) as served:
        tab = Tab(browser, served)
        yield tab
        tab.page.close()


def _sql(lake: Path, query: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["sql", "--lake", str(lake), "--format", "json", query])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def _rate(v: float) -> str:
    return f"{v:.3f}"


def _wilson(pair: list[float]) -> str:
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def test_runs_and_run_figures_equal_the_report_json(demo: dict[str, Any], demo_ui: Tab) -> None:
    report, run = demo["report"], demo["run"]
    page = demo_ui.open("/", ready=f'#runs-table tr[data-run="{run}"] td[data-figure="pass_at_1"]')
    props = report["reliability"]["properties"]
    for name, v in report["variants"].items():
        row = page.locator(f'#runs-table tr[data-run="{run}"][data-variant="{name}"]')
        assert row.locator('td[data-figure="pass_at_1"]').inner_text() == (
            f"{_rate(v['pass_at_1'])} ({v['passes']}/{v['n']}) {_wilson(v['wilson'])}"
        )
        assert row.locator('td[data-figure="pass_hat_k"]').inner_text() == (
            f"{_rate(v['pass_hat_k'][str(v['k'])])} (k={v['k']})"
        )
        c = props[name]["consistency"]
        assert row.locator('td[data-figure="consistency"]').inner_text() == (
            f"{_rate(c['rate'])} ({c['consistent_tasks']}/{c['measured_tasks']} tasks)"
        )
        hazards = row.locator('td[data-figure="hazards"]').inner_text()
        assert all(f"{h} {n}" in hazards for h, n in v["hazard_attempts"].items())
    page.locator(f'a[href="/runs/{run}"]').first.click()
    page.wait_for_selector("#summary-table")
    for name, v in report["variants"].items():
        row = page.locator(f'#summary-table tr[data-variant="{name}"]')
        assert row.locator('td[data-figure="worst_task"]').inner_text() == (
            f"{v['worst_task']['task_id']} {v['worst_task']['c']}/{v['worst_task']['n']}"
        )
        assert row.locator('td[data-figure="first_success_rate"]').inner_text() == _rate(v["first_success_rate"])
        assert row.locator('td[data-figure="flaky"]').inner_text() == (
            f"{props[name]['verdicts']['flaky']}/{len(props[name]['tasks'])}"
        )
    titles = page.locator('figure[data-figure="pass-hat-k"] svg circle title').all_text_contents()
    for name, v in report["variants"].items():
        for k, value in v["pass_hat_k"].items():
            assert f"{name} k={k}: {value:.3f}" in titles
    # every task's c/n, per variant, as the JSON has it
    for name, v in report["variants"].items():
        column = list(report["variants"]).index(name) + 2
        shown = page.locator(f"#tasks-table tbody tr td:nth-child({column}) a").all_inner_texts()
        assert shown == [f"{t['c']}/{t['n']}" for t in sorted(v["tasks"], key=lambda t: t["task_id"])]
    demo_ui.clean()


def test_compare_regressions_first_with_the_sign_test(demo: dict[str, Any], demo_ui: Tab) -> None:
    cmp = demo["report"]["comparison"]
    page = demo_ui.open(f"/runs/{demo['run']}/compare", ready="#deltas")
    assert page.locator("#deltas tbody tr").locator("td:first-child").all_inner_texts() == [
        d["task_id"] for d in cmp["deltas"]
    ]
    shown = page.locator('#deltas td[data-figure="delta"]').all_inner_texts()
    assert shown == [f"{d['delta']:+.3f}" for d in cmp["deltas"]]
    classes = page.locator("#deltas tbody tr").evaluate_all("rows => rows.map(r => r.className)")
    assert [c == "regression" for c in classes] == [d["regression"] for d in cmp["deltas"]]
    assert cmp["statement"] in page.locator("#statement").inner_text()
    # the model is what the demo varies: named as under test once the page is told so
    page = demo_ui.open(f"/runs/{demo['run']}/compare?baseline=baseline&candidate=candidate&vary=model",
                        ready="#environment")  # fmt: skip
    env_text = page.locator("#environment").inner_text()
    assert env_text.count("(under test)") == 2 and "not named under test" not in env_text
    demo_ui.clean()


def test_k_attempts_highlight_the_divergence_step_reliability_records(demo: dict[str, Any], demo_ui: Tab) -> None:
    run = demo["run"]
    rows = _sql(demo["lake"], f"select * from step_reliability where run_id = '{run}' order by variant, task_id, step")
    diverging = sorted({(r["variant"], r["task_id"]) for r in rows if r["diverged_here"]})
    assert len(diverging) >= 3  # the demo's agents leave the path: the check below checks something
    for variant, task in diverging:
        page = demo_ui.open(f"/runs/{run}/tasks/{task}?variant={variant}", ready="#attempts-table")
        mine = [r for r in rows if r["variant"] == variant and r["task_id"] == task]
        for r in mine:
            cells = page.locator(f'#attempts-table td.cell.diverged[data-position="{r["step"]}"]')
            assert cells.count() == r["diverged_here"], (variant, task, r["step"])
            funnel = page.locator(f'#funnel-table tr[data-step="{r["step"]}"] td').all_inner_texts()
            assert [int(x) for x in funnel[2:6]] == [r["reached"], r["called"], r["right_args"], r["succeeded"]]
        attempts = page.locator("#attempts-table tbody tr[data-attempt]")
        assert attempts.count() == mine[0]["attempts"]
        # after the first divergence an attempt's calls are greyed, before it they are on the path
        for i in range(attempts.count()):
            at = attempts.nth(i).get_attribute("data-diverged")
            for cell in attempts.nth(i).locator("td.cell[data-position]").all():
                position, state = int(cell.get_attribute("data-position") or 0), cell.get_attribute("class") or ""
                expected = "on-path" if not at or position < int(at) else "diverged" if position == int(at) else "after"
                assert expected in state.split()
    consistency = {t["task_id"]: t for t in demo["report"]["reliability"]["properties"][variant]["tasks"]}
    summary = page.locator("#task-summary").inner_text()
    assert consistency[task]["verdict"].replace("_", " ") in summary
    assert f"{consistency[task]['output_classes']} result class" in summary
    demo_ui.clean()


def test_failures_open_a_trace_beside_a_passing_attempt(demo: dict[str, Any], demo_ui: Tab) -> None:
    run = demo["run"]
    page = demo_ui.open(f"/runs/{run}/failures", ready="details.group")
    groups = page.locator("details.group")
    assert groups.count() >= 3
    first = groups.first.locator("a.open").first
    failing = first.evaluate("a => a.closest('tr').dataset.trace")
    first.click()
    page.wait_for_selector("section.trace")
    panels = page.locator("section.trace")
    assert panels.count() == 2 and panels.first.get_attribute("data-trace") == failing
    assert page.locator("section.trace").first.locator(".verdicts .fail").count() >= 1
    assert page.locator("section.trace").nth(1).locator(".verdicts .fail").count() == 0  # it passed every check
    # a finding sits on the call it blames: `name#position` is that span's call number
    for finding in page.locator("section.trace").first.locator("details.spanrow .finding").all():
        span = finding.locator("xpath=ancestor::details[contains(@class, 'spanrow')][1]")
        call = finding.inner_text().split(" at ")[1].split(":")[0]
        assert f"call #{call.split('#')[1]}" in span.locator(":scope > summary").inner_text()
    page.go_back()
    page.wait_for_selector("details.group")
    assert page.url.endswith(f"/runs/{run}/failures")  # the back button returns to the list
    demo_ui.clean()


def test_variance_sql_and_a_narrow_screen(demo: dict[str, Any], demo_ui: Tab, browser: Any) -> None:
    run = demo["run"]
    page = demo_ui.open(f"/runs/{run}/variance", ready="h1")
    # the run's report may still be computing (this test run alone): the page updates by itself
    page.locator("main", has_text="no variance attribution").wait_for(timeout=WAIT)
    assert "no variance attribution" in page.locator("main").inner_text()  # the demo runs no frozen levels
    page = demo_ui.open(
        "/sql?q=" + "select variant, count(*) as n from runs group by 1 order by 1", ready="#sql-result"
    )
    expected = _sql(demo["lake"], "select variant, count(*) as n from runs group by 1 order by 1")
    shown = page.locator("#sql-result tbody tr").evaluate_all("rows => rows.map(r => r.innerText.split('\\t'))")
    assert shown == [[r["variant"], str(r["n"])] for r in expected]
    page = demo_ui.open("/production", ready="h1")
    assert "No production traffic" in page.locator("main").inner_text()
    demo_ui.clean()
    narrow = Tab(browser, demo_ui.served, width=390)
    try:
        for path in ("/", f"/runs/{run}", f"/runs/{run}/tasks/clear_02?variant=baseline", f"/runs/{run}/compare"):
            narrow.open(path, ready="h1")
            width = narrow.page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, (path, width)  # wide tables scroll inside the page, the page does not
        narrow.clean()
    finally:
        narrow.page.close()


def _hostile_trace(endpoint: str) -> str:
    """One trace of everything a span value can hold against a page, sent over OTLP/HTTP."""
    provider = TracerProvider(resource=Resource.create({"service.name": "<b>hostile</b>-svc"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    tracer = provider.get_tracer("hostile")
    session = 'sess-"><script>alert("session")</script>'
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "<img src=x onerror=alert(1)>"}
    root = tracer.start_span(HOSTILE, attributes={**attributes, "gen_ai.conversation.id": session})
    ctx = trace.set_span_in_context(root)
    tool = tracer.start_span(
        "execute_tool <svg onload=alert(2)>",
        context=ctx,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "<svg onload=alert(3)>",
            "gen_ai.tool.call.arguments": json.dumps({"url": "javascript:alert(4)", "rtl": "refund \u202eredro\u202c"}),
            "gen_ai.conversation.id": session,
            "link.url": "javascript:alert(document.cookie)",
            "big": "A" * BIG,
            "rtl": "\u202eevil\u202c \u05e9\u05dc\u05d5\u05dd",
            "zero_width": "ad\u200bmin\u200d\ufeff",
        },
    )
    tool.add_event("<iframe src=javascript:alert(5)>", {"payload": "</dd></dl><script>alert(6)</script>"})
    tool.set_status(Status(StatusCode.ERROR, '<a href="javascript:alert(7)">click</a>'))
    tool.end()
    root.end()
    trace_id = format(root.get_span_context().trace_id, "032x")
    provider.force_flush()
    provider.shutdown()
    return trace_id


@pytest.fixture(scope="module")
def production(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[dict[str, Any]]:
    lake = tmp_path_factory.mktemp("ui-production") / "lake"
    # a collector that keeps a 1 MB attribute whole (its default cuts values at 64 KB): the page must cut it
    with running_collector(lake, {"exporters": {"parquet": {"max_attribute_value_bytes": 2 * BIG}}}) as collector:
        endpoint = f"http://127.0.0.1:{collector.http_port}"
        send_production_traffic(endpoint, TODAY - dt.timedelta(days=1))  # its night at 10:00 UTC: past at any hour
        hostile = _hostile_trace(endpoint)
    assert not (lake / "run_cases").exists()  # nothing but the collector wrote this lake
    with serve(lake) as served:
        tab = Tab(browser, served)
        yield {"lake": lake, "tab": tab, "hostile": hostile}
        tab.page.close()


def test_production_screen_equals_the_production_report_and_gate(production: dict[str, Any], tmp_path: Path) -> None:
    lake, tab = production["lake"], production["tab"]
    out = tmp_path / "week.json"
    result = CliRunner().invoke(main, ["report", "--lake", str(lake), "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    gate = CliRunner().invoke(main, ["gate", "--lake", str(lake), "--format", "json"])
    verdict = json.loads(gate.stdout)
    page = tab.open("/", ready="#production-days")
    assert "No harness run" in page.locator("main").inner_text()
    shown = page.locator("#production-days tbody tr").evaluate_all("rows => rows.map(r => r.innerText.split('\\t'))")
    assert sum(int(r[2]) for r in shown) == doc["sessions"]
    page = tab.open("/production", ready="#gate-verdict")
    assert page.locator("#gate-verdict").inner_text().startswith("PASS" if verdict["passed"] else "FAIL")
    assert not verdict["passed"]  # the night's 400s retried at once: the fixture's fall is significant
    checks = page.locator("#gate-checks li").all_inner_texts()
    assert sorted(c["check"] for c in verdict["checks"]) == sorted(c.split(":")[0].split(" ", 1)[1] + ":" +
                                                                   c.split(":")[1] for c in checks)  # fmt: skip
    for name, r in doc["evaluators"].items():
        cell = page.locator(f'#evaluator-table tr[data-evaluator="{name}"] td[data-figure="rate"]').inner_text()
        assert cell == f"{_rate(r['rate'])} ({r['passes']}/{r['n']}) {_wilson(r['wilson'])}"
    # the search: a session by its tool and error type, then its trace
    page = tab.open("/production?tool=refund_order&error=invalid_request", ready="#search-results")
    found = page.locator("#search-results tbody tr")
    assert found.count() == 6  # RETRIED_400: six billing sessions of the night
    found.first.locator("a.mono").click()
    page.wait_for_selector("section.trace")
    assert page.locator("details.spanrow.span-error").count() >= 1
    # the verdict the production report counted (computed then: no score job ran here), its finding on the
    # call it blames: the retry of the 400, the second call of refund_order
    assert page.locator('.verdicts li[data-evaluator="retry_discipline"] .fail').count() == 1
    finding = page.locator('.finding[data-finding="non_retryable_retried"]')
    assert finding.count() == 1
    span = finding.locator("xpath=ancestor::details[contains(@class, 'spanrow')][1]")
    assert "call #2" in span.locator(":scope > summary").inner_text()
    tab.clean()


def test_a_hostile_span_renders_as_inert_text(production: dict[str, Any]) -> None:
    tab = production["tab"]
    page = tab.open(f"/traces/{production['hostile']}", ready="section.trace")
    page.locator("details").evaluate_all("ds => ds.forEach(d => d.open = true)")  # everything shown
    assert page.locator("script").count() == 1  # htmx's own, nothing from a span
    assert page.locator("main img, main iframe, main svg [onload], main [onerror]").count() == 0
    hrefs = page.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert all(h.startswith(("/", "#")) for h in hrefs), hrefs  # no span value became a link
    text = page.locator("main").inner_text()
    assert HOSTILE in text and "<svg onload=alert(3)>" in text and "javascript:alert(document.cookie)" in text
    assert '<a href="javascript:alert(7)">click</a>' in text and "</dd></dl><script>alert(6)</script>" in text
    assert "U+202E" in text and "U+200B" in text and "U+FEFF" in text and "\u202e" not in text
    assert "\u05e9\u05dc\u05d5\u05dd" in text  # right-to-left text shown, isolated
    assert f"{BIG - 2_000:,} more characters not shown" in text
    assert len(page.content()) < 300_000  # the 1 MB value is not in the page
    time.sleep(0.5)
    tab.clean()  # and no script ran: no dialog, no console error, no request elsewhere
    page = tab.open("/production?text=" + "alert(", ready="#search-results")
    assert page.locator("script").count() == 1 and HOSTILE.replace('"', "") not in page.content()
    tab.clean()


def test_new_attempts_appear_on_an_open_page(demo: dict[str, Any], production: dict[str, Any]) -> None:
    tab, lake = production["tab"], production["lake"]  # its last test: the lake may change now
    page = tab.open("/", ready="#production-days")
    assert page.locator("#runs-table").count() == 0  # no harness run yet
    page.evaluate("window.tracevalsMarker = 1")  # gone if the page reloads
    # the demo's run under another run id and other trace ids: new attempts landing in the lake
    spans = pa.concat_tables([pq.read_table(p) for p in sorted((demo["lake"] / "spans").rglob("*.parquet"))])
    spans = spans.set_column(spans.schema.get_field_index("run_id"), "run_id",
                             pa.array(["live-run"] * spans.num_rows, pa.string()))  # fmt: skip
    traces = pc.binary_join_element_wise("f", pc.utf8_slice_codeunits(spans["trace_id"], 1), "")
    spans = spans.set_column(spans.schema.get_field_index("trace_id"), "trace_id", traces)
    write_table_atomically(spans, lake / "spans" / f"date={TODAY}" / "hour=00")
    page.wait_for_selector('#runs-table tr[data-run="live-run"]', timeout=WAIT)
    assert page.evaluate("window.tracevalsMarker") == 1  # it appeared on the open page, no reload
    tab.clean()
