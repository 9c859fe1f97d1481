"""The report built from hand-made trajectories and scores, written in every format; the HTML checked as text.

(The rendered page is checked in a real browser in test_report_browser.py.)
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tracevals.evaluators.failures import RECOVERED, SILENT_FAILURE
from tracevals.model.case import Case, ExpectedCall
from tracevals.model.findings import findings_json
from tracevals.model.score import Score
from tracevals.model.trajectory import ToolCall, Trajectory
from tracevals.report import ReportData, build_report, render_html, report_format, write_report
from tracevals.stats import DO_NOT_SHIP

META: dict[str, Any] = {
    "runs": ["run-7"],
    "commits": ["c0ffee1234567890"],
    "lock_hashes": ["requirements.lock:feedbeef"],
    "date_from": "2026-11-29T10:00:00+00:00",
    "date_to": "2026-11-29T11:00:00+00:00",
    "sample_fraction": 0.25,
    "sessions_selected": 3,
    "sessions_eligible": 12,
}
CASES = {
    "look<up>": Case("look<up>", "find it", expected_steps=(ExpectedCall("get_orders"),), must_include=("ok",)),
    "send": Case(
        "send",
        "send it",
        expected_steps=(ExpectedCall("send_message"),),
        faults=({"tool": "send_message", "call": 1, "type": "429"},),
    ),
}


def attempt(variant: str, task: str, n: int, calls: list[ToolCall], output: str = "ok") -> Trajectory:
    return Trajectory(
        trace_id=f"{variant}-{task}-{n}",
        tool_calls=tuple(calls),
        run_id="run-7",
        task_id=task,
        attempt=n,
        variant=variant,
        output=output,
        start_ms=1000.0 * n,
        end_ms=1000.0 * n + 100.0 * (n + 1),
    )


def verdict(t: Trajectory, passed: bool, reason: str = "ok") -> Score:
    return Score("task_success", 1, passed, float(passed), reason, trace_id=t.trace_id)


def fault(t: Trajectory, outcome: str) -> Score:
    """The injection evaluator's verdict on the 429 at send_message#1, as findings (what the report reads)."""
    evidence = {"fault": "rate_limit", "outcome": outcome}
    if outcome == "recovered":
        found = RECOVERED(
            "fault rate_limit at send_message#1 -> recovered", step=1, call="send_message#1", evidence=evidence
        )
    else:
        text = "claimed success: send_message#1 failed (rate_limit) and was never done, yet the answer says it was"
        found = SILENT_FAILURE(text, step=1, call="send_message#1", evidence=evidence)
    details = {"findings": findings_json([found])}
    return Score("injection", 3, not found.fails, 1.0 - found.fails, found.message, details, trace_id=t.trace_id)


@pytest.fixture()
def data() -> ReportData:
    read = ToolCall("get_orders", {"customer_id": "c1"}, effect="read")
    sent = ToolCall("send_message", {"text": "hi"}, effect="write")
    limited = ToolCall("send_message", {"text": "hi"}, error_type="rate_limit", effect="write")
    ts = [attempt("baseline", "look<up>", i, [read]) for i in (1, 2)]
    ts += [attempt("baseline", "send", i, [limited, sent]) for i in (1, 2)]
    ts += [attempt("candidate", "look<up>", 1, [read]), attempt("candidate", "look<up>", 2, [read], "wrong")]
    # claimed success: the send failed and was never done, but the answer says it was
    ts += [attempt("candidate", "send", i, [limited], "Message sent") for i in (1, 2)]
    scores = [verdict(t, t.output != "wrong", "missing 'ok'" if t.output == "wrong" else "ok") for t in ts]
    scores += [fault(t, "recovered" if t.variant == "baseline" else "failed_claiming_success") for t in ts
               if t.task_id == "send"]  # fmt: skip
    return build_report(ts, scores, CASES, META, k=2)


def test_build_report_figures(data: ReportData) -> None:
    base, cand = data.summaries["baseline"], data.summaries["candidate"]
    # a silent failure is a hazard, and a hazard fails its attempt: the candidate's sends both failed
    assert (base.runs, base.passes, cand.passes) == (4, 4, 1)
    assert data.comparison is not None and [d.task_id for d in data.comparison.regressions] == ["send", "look<up>"]
    assert cand.category("send") is not None and cand.category("send").category == DO_NOT_SHIP  # type: ignore[union-attr]
    faults = {(f.variant, f.fault): (f.n, f.recovered, f.failed) for f in data.faults}
    # the candidate's "recoveries" claimed a send that never happened: failed, not recovered
    assert faults == {("baseline", "rate_limit"): (2, 2, 0), ("candidate", "rate_limit"): (2, 0, 2)}
    # the gallery: the regressions' failed attempts first (the worst one's first), beside the case's steps
    # and a passing attempt
    assert [(f.task_id, f.attempt) for f in data.failures] == [("send", 1), ("send", 2), ("look<up>", 2)]
    lookup = data.failures[2]
    assert lookup.expected == ("get_orders",) and lookup.reference is not None
    assert lookup.reasons == ("task_success: missing 'ok'",)
    hazards = data.failures[:2]
    assert all(f.hazards[0].startswith("claimed success: send_message#1") for f in hazards)
    assert hazards[0].kinds == ("hazard: silent failure", "injection: silent failure") and hazards[0].group == (
        "hazard: silent failure"
    )


def test_html_is_self_contained_and_escaped(data: ReportData) -> None:
    page = render_html(data)
    assert "<script" not in page.lower()
    # the only URL is the SVG namespace, which is never fetched
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}
    assert "default-src 'none'" in page
    assert "look<up>" not in page and "look&lt;up&gt;" in page
    for section in (
        "summary",
        "pass-hat-k",
        "regressions",
        "worst-task",
        "categories",
        "faults",
        "distributions",
        "gallery",
    ):
        assert f'<section id="{section}">' in page


def test_provenance_is_stated_once_and_every_figure_its_n(data: ReportData) -> None:
    page = render_html(data)
    figures = re.findall(r"<figure data-figure=\"([^\"]+)\">(.*?)</figure>", page, flags=re.S)
    names = [name for name, _ in figures]
    assert {"summary", "pass-hat-k", "task-rates", "deltas", "worst-task", "faults", "latency", "gallery"} <= set(names)
    for name, body in figures:
        caption = re.search(r'<figcaption class="size">(.*?)</figcaption>', body, flags=re.S)
        assert caption is not None and "n = " in caption.group(1), name
        assert "c0ffee123456" not in body, name  # the provenance is the header's, not repeated per figure
    header = page[: page.index("</header>")]
    assert header.count("c0ffee123456") == len(data.meta.get("variants") or {"all": 1})  # once per variant
    assert "requirements.lock:feedbeef" in header and "2026-11-29T10:00:00+00:00 – 2026-11-29T11:00:00+00:00" in header
    assert "25% of sessions (3 of 12)" in header
    # every attempt cost 0 here: no axis of zeros, a sentence instead
    assert "cost" not in names and "No cost: " in page


@pytest.mark.parametrize("suffix", [".html", ".md", ".csv", ".json"])
def test_write_report_by_suffix(tmp_path: Path, data: ReportData, suffix: str) -> None:
    path = write_report(tmp_path / f"r{suffix}", data)
    text = path.read_text(encoding="utf-8")
    if suffix == ".json":
        doc = json.loads(text)
        cand = doc["variants"]["candidate"]
        assert cand["pass_hat_k"] == pytest.approx({"1": 0.25, "2": 0.0})  # (1/2 + 0) / 2, (0 + 0) / 2
        assert cand["categories"] == {"canary": 1, "do_not_ship": 1}
        send = {t["task_id"]: t for t in cand["tasks"]}["send"]
        assert send["category"] == "do_not_ship" and send["hazards"] == {"silent_failure": 2}
        assert doc["fault_outcomes"][1] == {
            "variant": "candidate",
            "fault": "rate_limit",
            "n": 2,
            "recovered": 0,
            "escalated": 0,
            "failed": 2,
            "failed_silently": 2,
            "unknown": 0,
            "recovered_wilson": pytest.approx([0.0, 0.6576], abs=5e-5),
        }
    elif suffix == ".csv":
        rows = {r["variant"]: r for r in csv.DictReader(text.splitlines())}
        assert rows["candidate"]["tasks_do_not_ship"] == "1" and rows["baseline"]["tasks_do_not_ship"] == "0"
    elif suffix == ".md":
        assert "## Release categories" in text and "## Fault outcomes" in text
        assert "| rate_limit | candidate | 2 | 0/2 [0.000, 0.658] | 0/2 | 2/2 (2) | 0/2 |" in text
    else:
        assert text.startswith("<!doctype html>")


def test_report_format_rejects_unknown_suffix() -> None:
    assert report_format("x/Report.HTML") == "html"
    with pytest.raises(ValueError, match="use one of the suffixes"):
        report_format("report.txt")
