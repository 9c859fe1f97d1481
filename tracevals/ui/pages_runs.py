"""The screens of harness runs: every run, one run, two variants compared, a task's k attempts, the
failures of a run, where a run's variance comes from. Every figure is read from the run's report
(`figures.RunFigures`: its JSON document and its data), never computed here."""

from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from tracevals.model.json_text import json_text
from tracevals.ui.app import UI, query_of, text
from tracevals.ui.attempts import task_view
from tracevals.ui.figures import Entry, RunRow

__all__ = [
    "compare_page",
    "failures_page",
    "funnel_page",
    "run_json",
    "run_page",
    "runs_page",
    "task_page",
    "variance_page",
]


def _date(value: str | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(value) if value else None
    except ValueError:
        return None


def _kept(row: RunRow, variant: str, commit: str, since: dt.date | None, until: dt.date | None) -> bool:
    day = row.started.date() if row.started is not None else None
    return (
        (not variant or variant in row.variants)
        and (not commit or any(c.startswith(commit) for c in row.commits))
        and (since is None or (day is not None and day >= since))
        and (until is None or (day is not None and day < until))
    )


def runs_page(ui: UI, request: Request) -> Response:
    q = query_of(request)
    variant, commit = q.get("variant", ""), q.get("commit", "")
    since, until = _date(q.get("since")), _date(q.get("until"))
    index = ui.figures.index
    rows = []
    for row in index.runs:
        if not _kept(row, variant, commit, since, until):
            continue
        entry = ui.figures.run(row.run_id)
        rows.append((row, entry))
    production = ui.figures.production() if index.production_traces else None
    return ui.page(
        request, "runs.html", rows=rows, production=production, production_traces=index.production_traces,
        variants=sorted({v for r in index.runs for v in r.variants}),
        commits=sorted({c for r in index.runs for c in r.commits}),
        filters={"variant": variant, "commit": commit, "since": q.get("since", ""), "until": q.get("until", "")},
        ready=ui.figures.index_ready.is_set(),
    )  # fmt: skip


def _run_entry(ui: UI, run_id: str) -> Entry | None:
    return ui.figures.run(run_id)


def _recent(row: RunRow | None) -> bool:
    """A run whose last attempt ended in the last 30 seconds may still be writing: its pages poll for more."""
    if row is None or row.ended is None:
        return False
    return (dt.datetime.now(dt.timezone.utc) - row.ended).total_seconds() < 30


def run_page(ui: UI, request: Request) -> Response:
    run_id = request.path_params["run_id"]
    entry = _run_entry(ui, run_id)
    if entry is None:
        return ui.missing(request, f"run {run_id}")
    row = ui.figures.run_row(run_id)
    extra = _run_tables(entry.value.doc) if entry.value is not None else {}
    return ui.page(request, "run.html", run_id=run_id, row=row, entry=entry, live=_recent(row) or None, **extra)


def _run_tables(doc: dict[str, Any], worst: int = 12) -> dict[str, Any]:
    """The run page's tables, laid out from the JSON report: tasks by variant, each task's stability
    class, the steps that lose the most attempts (with where attempts first diverged)."""
    rel = doc.get("reliability") or {}
    task_rows = {name: {t["task_id"]: t for t in v["tasks"]} for name, v in doc["variants"].items()}
    consistency = {name: {t["task_id"]: t for t in p["tasks"]} for name, p in (rel.get("properties") or {}).items()}
    for name in doc["variants"]:
        consistency.setdefault(name, {})
    steps = []
    for t in rel.get("steps") or []:
        diverged = {d["step"]: d["attempts"] for d in t["first_divergence"]}
        for s in t["steps"]:
            steps.append(({**t, "first_divergence_at": diverged}, s))
    steps.sort(key=lambda ts: (-(ts[1]["reached"] - ts[1]["succeeded"]), ts[0]["task_id"], ts[1]["step"]))
    return {
        "tasks": sorted({task for rows in task_rows.values() for task in rows}),
        "task_rows": task_rows,
        "consistency": consistency,
        "worst_steps": [ts for ts in steps if ts[1]["reached"] > ts[1]["succeeded"]][:worst],
    }


def run_json(ui: UI, request: Request) -> Response:
    run_id = request.path_params["run_id"]
    entry = _run_entry(ui, run_id)
    if entry is None or entry.value is None:
        return text(f"no report of run {run_id} yet\n", 404)
    body = json_text(entry.value.doc, indent=2) + "\n"
    return text(body, media_type="application/json")


def compare_page(ui: UI, request: Request) -> Response:
    run_id = request.path_params["run_id"]
    row = ui.figures.run_row(run_id)
    if row is None:
        return ui.missing(request, f"run {run_id}")
    q = query_of(request)
    baseline, candidate = q.get("baseline", ""), q.get("candidate", "")
    vary = tuple(v.strip() for v in q.get("vary", "").split(",") if v.strip())
    problem = None
    entry = ui.figures.run(run_id)
    if baseline and candidate:
        if baseline == candidate or {baseline, candidate} - set(row.variants):
            problem = f"pick two different variants of this run ({', '.join(row.variants)})"
        else:
            entry = ui.figures.compare(run_id, baseline, candidate, vary)
    tasks: dict[str, dict[str, Any]] = {}
    doc = entry.value.doc if entry is not None and entry.value is not None else {}
    cmp = doc.get("comparison")
    if cmp:
        tasks = {name: {t["task_id"]: t for t in doc["variants"][name]["tasks"]}
                 for name in (cmp["baseline"], cmp["candidate"])}  # fmt: skip
    return ui.page(request, "compare.html", run_id=run_id, row=row, entry=entry, problem=problem, vary=", ".join(vary),
                   baseline=baseline or (cmp or {}).get("baseline", ""),
                   candidate=candidate or (cmp or {}).get("candidate", ""),
                   base_tasks=tasks.get((cmp or {}).get("baseline", ""), {}),
                   cand_tasks=tasks.get((cmp or {}).get("candidate", ""), {}))  # fmt: skip


def task_page(ui: UI, request: Request, template: str = "task.html") -> Response:
    run_id, task_id = request.path_params["run_id"], request.path_params["task_id"]
    entry = _run_entry(ui, run_id)
    if entry is None:
        return ui.missing(request, f"run {run_id}")
    variant = query_of(request).get("variant", "")
    view = None
    if entry.value is not None:
        doc = entry.value.doc
        variants = [v for v in doc["variants"] if any(t["task_id"] == task_id for t in doc["variants"][v]["tasks"])]
        if not variants:
            return ui.missing(request, f"task {task_id} in run {run_id}")
        variant = variant if variant in variants else variants[0]
        view = task_view(entry.value, variant, task_id)
    return ui.page(request, template, run_id=run_id, task_id=task_id, variant=variant, entry=entry, view=view,
                   live=_recent(ui.figures.run_row(run_id)) or None)  # fmt: skip


def funnel_page(ui: UI, request: Request) -> Response:
    """A task's per-step funnel alone (a deep link; what the task page shows under its attempts)."""
    return task_page(ui, request, "funnel.html")


def _failure_groups(figures: Any, evaluator: str, kind: str, variant: str) -> list[tuple[str, str, list[Any]]]:
    """The run's failed attempts (the report's gallery: every failed or hazardous attempt) by evaluator and
    finding kind; an attempt with several kinds is in each of their groups."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for f in figures.data.failures:
        if variant and f.variant != variant:
            continue
        for label in f.kinds or ("failed: failed",):
            head, _, rest = label.partition(": ")
            if (evaluator and head != evaluator) or (kind and rest != kind):
                continue
            groups.setdefault((head, rest), []).append(f)
    return sorted(((e, k, fs) for (e, k), fs in groups.items()), key=lambda g: (-len(g[2]), g[0], g[1]))


def failures_page(ui: UI, request: Request) -> Response:
    run_id = request.path_params["run_id"]
    entry = _run_entry(ui, run_id)
    if entry is None:
        return ui.missing(request, f"run {run_id}")
    q = query_of(request)
    evaluator, kind, variant = q.get("evaluator", ""), q.get("kind", ""), q.get("variant", "")
    groups: list[tuple[str, str, list[Any]]] = []
    choices: list[tuple[str, str]] = []
    if entry.value is not None:
        groups = _failure_groups(entry.value, evaluator, kind, variant)
        choices = sorted({(e, k) for e, k, _ in _failure_groups(entry.value, "", "", "")})
    return ui.page(request, "failures.html", run_id=run_id, entry=entry, groups=groups, choices=choices,
                   filters={"evaluator": evaluator, "kind": kind, "variant": variant})  # fmt: skip


def variance_page(ui: UI, request: Request) -> Response:
    run_id = request.path_params["run_id"]
    entry = _run_entry(ui, run_id)
    if entry is None:
        return ui.missing(request, f"run {run_id}")
    return ui.page(request, "variance.html", run_id=run_id, entry=entry)
