"""`tracevals run --attribute-variance`: run the task set live, with the tools frozen and with tools and
model frozen, then print how much flakiness each level leaves and whose it is (see
`tracevals.harness.variance` for the passes, `tracevals.stats.variance` for the arithmetic)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from tracevals.cli.shared.output import echo_prose, print_rows, progress_bar
from tracevals.cli.shared.reports import report_from_lake
from tracevals.harness.attempts import AgentFn
from tracevals.harness.interceptor import RunPlan
from tracevals.harness.stopping import StopRequest
from tracevals.harness.variance import level_variant, run_levels
from tracevals.model.attempt import AttemptKey
from tracevals.model.case import Case
from tracevals.model.json_text import json_text
from tracevals.model.quoting import command_line
from tracevals.queries.selection import Selection
from tracevals.report.formatting import num
from tracevals.report.reliability import lake_rows
from tracevals.scoring.runs import score_run
from tracevals.scoring.store import write_step_reliability
from tracevals.stats.variance import LEVELS, SOURCE_LABELS, SOURCES, Attribution, LevelFigures, attribute

if TYPE_CHECKING:
    from tracevals.lake.lake import Lake

__all__ = ["attribution_json", "attribution_of", "attribution_rows", "run_attribution", "score_attribution"]


def run_attribution(
    agent: AgentFn,
    cases: Sequence[Case],
    *,
    k: int,
    run_id: str,
    variant: str,
    lake: Lake,
    work: Path,
    base: RunPlan,
    seed: int,
    concurrency: int,
    settings: dict[str, Any],
    done: Sequence[AttemptKey],
    flush: Any,
    environment: Mapping[str, str],
    console: Console,
    stop: StopRequest | None = None,
) -> None:
    """The four passes into the lake (then: `score_attribution`); `stop`: see `harness.stopping`."""
    with progress_bar(console) as progress:
        bars = {level: progress.add_task(f"{level:>12}", total=len(cases) * (1 if level == "reference" else k))
                for level in ("live", "reference", "tools-frozen", "frozen")}  # fmt: skip

        def advanced(level: str, _result: object) -> None:
            progress.advance(bars[level])

        run_levels(
            agent,
            cases,
            k=k,
            run_id=run_id,
            variant=variant,
            work=work,
            base=base,
            seed=seed,
            concurrency=concurrency,
            settings=settings,
            skip=done,
            flush=flush,
            on_done=advanced,
            environment=environment,
            stop=stop,
        )


def score_attribution(lake: Lake, run_id: str, cases: Sequence[Case], variant: str, k: int) -> Attribution:
    """Score the run's attempts, then read the attribution back."""
    score_run(lake, run_id, cases)
    return attribution_of(lake, run_id, variant, k)


def attribution_of(lake: Lake, run_id: str, variant: str, k: int | None = None) -> Attribution:
    """The attribution of a run the four passes wrote (read back from the lake)."""
    from tracevals.queries import open_lake

    data = report_from_lake(lake, Selection(runs=(run_id,)), None, k=k)
    write_step_reliability(lake, lake_rows(data.reliability, run_id))  # the `step_reliability` view
    con = open_lake(lake, views=LIVE_CALLS_VIEWS)  # not every view of a small lake, for one count
    try:
        live_calls = {v: int(n) for v, n in con.execute(LIVE_CALLS_SQL, [run_id]).fetchall()}
    finally:
        con.close()
    return attribute(level_figures(data, variant, live_calls))


def attribution_rows(result: Attribution) -> tuple[list[str], list[list[str]]]:
    columns = ["level", "attempts", "pass@1", "pass^k", "flaky tasks", "flakiness", "consistency", "calls run live"]
    rows = []
    for level in LEVELS:
        f = result.levels[level]
        rows.append(
            [level, str(f.attempts), num(f.pass_at_1), f"{num(f.pass_hat_k)} (k={f.k})", f"{f.flaky_tasks}/{f.tasks}",
             num(f.flakiness), num(f.consistency), "-" if level == "live" else str(f.live_calls)]
        )  # fmt: skip
    return columns, rows


def _source_rows(result: Attribution) -> list[list[str]]:
    rows = []
    for source in SOURCES:
        share = result.share(source)
        rows.append([SOURCE_LABELS[source], num(result.parts[source]), "-" if math.isnan(share) else f"{share:.0%}"])
    return rows


def attribution_json(result: Attribution) -> dict[str, Any]:
    return {
        "levels": {
            level: {
                "attempts": f.attempts, "tasks": f.tasks, "pass_at_1": f.pass_at_1, "pass_hat_k": f.pass_hat_k,
                "k": f.k, "flaky_tasks": f.flaky_tasks, "flakiness": f.flakiness,
                "consistency": None if math.isnan(f.consistency) else f.consistency, "live_calls": f.live_calls,
            }
            for level, f in result.levels.items()
        },
        "sources": {
            s: {"flakiness": result.parts[s], "share": None if math.isnan(result.share(s)) else result.share(s)}
            for s in SOURCES
        },
        "main_source": result.main_source,
        "statement": result.statement,
    }  # fmt: skip


def print_attribution(result: Attribution, run_id: str, lake: Lake, variant: str, fmt: str) -> None:
    if fmt == "json":
        click.echo(json_text({"run_id": run_id, "lake": str(lake), "attribution": attribution_json(result)}))
        return
    columns, rows = attribution_rows(result)
    if fmt == "csv":
        print_rows(columns, rows, "csv")
        return
    print_rows(columns, rows, "table", title=f"run {run_id}: where the variance comes from")
    print_rows(["source", "flakiness it adds", "share"], _source_rows(result), "table", title="flakiness by source")
    echo_prose(result.statement)
    live, frozen = level_variant(variant, "live"), level_variant(variant, "frozen")
    report = ["report", "--lake", str(lake), "--run", run_id, "--baseline", frozen, "--candidate", live]
    click.echo(f"lake: {lake}   ({command_line('tracevals', *report, '--out', 'variance.html')})")


def level_figures(data: Any, variant: str, live_calls: Mapping[str, int]) -> dict[str, LevelFigures]:
    """Each level's figures from a report's data over the run (`report.ReportData`)."""
    out = {}
    for level in LEVELS:
        name = level_variant(variant, level)
        summary = data.summaries.get(name)
        props = data.reliability.properties.get(name) if data.reliability is not None else None
        if summary is None or props is None:
            raise ValueError(f"level {level} has no attempts (variant {name!r} is not in the lake)")
        out[level] = LevelFigures(
            level=level,
            attempts=summary.runs,
            tasks=summary.n_tasks,
            flaky_tasks=props.verdicts.get("flaky", 0),
            flakiness=props.flakiness if props.measured_tasks else 0.0,
            pass_at_1=summary.pass_at_1,
            pass_hat_k=summary.pass_hat_k_headline,
            k=summary.k,
            consistency=props.consistency,
            live_calls=live_calls.get(name, 0),
        )
    return out


LIVE_CALLS_VIEWS = ("spans", "attempts")  # what LIVE_CALLS_SQL reads
LIVE_CALLS_SQL = """
SELECT a.variant, count(*) AS live_calls
FROM spans AS s
JOIN attempts AS a ON a.trace_id = s.trace_id
WHERE a.run_id = ? AND s.replay = 'record' AND s.kind IN ('tool', 'llm')
GROUP BY a.variant
"""
