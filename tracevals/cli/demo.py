"""`tracevals demo`: the whole pipeline on the embedded default, against a simulated model.

Two variants (baseline and candidate: two behaviour profiles of the simulated model) run the bundled
20 order-support cases k times each through the reference agent; spans land in DIR/lake; the views
rebuild the trajectories; the evaluators score them; the statistics compare the variants.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import Progress, TaskID

from tracevals.cli.shared.output import echo_prose, format_option, messages, print_rows, progress_bar
from tracevals.demo import tasks_path as bundled_tasks
from tracevals.harness import run_cases
from tracevals.harness.environment import file_digest
from tracevals.instrumentation import instrument
from tracevals.lake.lake import PRICES_FILE, Lake
from tracevals.lake.run_cases import write_run_cases
from tracevals.model.quoting import command_line
from tracevals.model.tasks import load_cases
from tracevals.scoring.runs import score_run

TRY_QUERY = "select * from trajectories limit 5"  # what the demo suggests trying on its lake

VARIANTS = ("baseline", "candidate")
__all__ = ["VARIANTS", "bundled_tasks", "demo"]


def _advance(progress: Progress, bar: TaskID, _result: object) -> None:
    progress.advance(bar)


@click.command()
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="demo-out",
    show_default=True,
    help="Where the lake and the reports go.",
)
@click.option("-k", "k", type=click.IntRange(1, 100), default=5, show_default=True, help="Attempts per case.")
@click.option("--seed", type=int, default=0, show_default=True, help="Base seed of the simulated model.")
@click.option(
    "--concurrency", type=click.IntRange(1, 64), default=8, show_default=True, help="Attempts in flight at once."
)
@click.option(
    "--attribute-variance",
    is_flag=True,
    help="Instead: run the baseline model in a flaky world (tracevals/demo/flaky_world.yaml) live, with the "
    "tools frozen and with tools and model frozen, and say whose the flakiness is.",
)
@format_option()
def demo(out_dir: str, k: int, seed: int, concurrency: int, attribute_variance: bool, fmt: str) -> None:
    """Run the bundled order-support cases k times for two variants and compare them.

    \b
    Examples:
      tracevals demo                       # 20 cases x 5 attempts x 2 variants
      tracevals demo -k 10 --seed 7 --out /tmp/demo
      tracevals demo --format json         # the summary as JSON
      tracevals demo --attribute-variance  # the world's flakiness apart from the model's
    """
    from tracevals.cli.shared.reports import report_from_lake
    from tracevals.queries.selection import Selection
    from tracevals.report import write_report
    from tracevals.report.reliability import lake_rows
    from tracevals.scoring.store import write_step_reliability

    console = messages()
    out = Path(out_dir)
    lake = Lake.open(out / "lake")
    lake.prepare()
    cases = load_cases(bundled_tasks())
    run_id = f"demo-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-s{seed}"
    models = {v: f"order-support-{v}" for v in VARIANTS}
    # The simulated models are priced like a small hosted model, so that the demo's cost figures mean
    # something: as the lake's own price table, which every command that reads this lake uses.
    prices = {model: {"input": 0.15, "output": 0.60} for model in models.values()}
    lake.write_bytes(PRICES_FILE, (json.dumps(prices, indent=1) + "\n").encode())
    write_run_cases(lake, run_id, bundled_tasks().read_bytes(), "bundled order-support cases")
    if attribute_variance:
        _attribute(out, run_id, cases, k, seed, concurrency, models["baseline"], console, fmt)
        return

    started = time.perf_counter()
    _run_variants(lake, run_id, cases, k, seed, concurrency, models, console)
    run_seconds = time.perf_counter() - started

    scored = score_run(lake, run_id, cases)
    trajectories, scores = scored.trajectories, scored.scores
    # The same path as `tracevals report --run`: what the demo prints is what a later report shows.
    meta: dict[str, Any] = {"seed": seed, "cases": len(cases), "tasks_file": "bundled order-support cases"}
    data = report_from_lake(
        lake,
        Selection(runs=(run_id,)),
        None,
        k=k,
        baseline="baseline",
        candidate="candidate",
        meta=meta,
        vary=("model",),  # the two variants are two models: the variable under test
    )
    write_step_reliability(lake, lake_rows(data.reliability, run_id))  # the `step_reliability` view
    paths = {
        "csv": write_report(out / "report.csv", data),
        "markdown": write_report(out / "report.md", data),
        "json": write_report(out / "report.json", data),
        "html": write_report(out / "report.html", data),
    }

    _print_demo(
        data,
        run_id,
        len(cases),
        k,
        fmt,
        lake,
        paths,
        f"{len(trajectories)} attempts in {run_seconds:.1f}s; {len(scores)} scores.",
    )


def _run_variants(
    lake: Lake,
    run_id: str,
    cases: list[Any],
    k: int,
    seed: int,
    concurrency: int,
    models: dict[str, str],
    console: Console,
) -> None:
    """Every case k times for each variant, against the simulated model, into the lake."""
    from tracevals.demo.agent import order_support_agent
    from tracevals.simulator import SimulatedModelServer

    with SimulatedModelServer() as server:
        telemetry = instrument(lake=lake, capture_content=True, service_name="tracevals-demo")
        try:
            with progress_bar(console) as progress:
                for variant in VARIANTS:
                    bar = progress.add_task(f"{variant:>9}", total=len(cases) * k)
                    run_cases(
                        order_support_agent,
                        cases,
                        k=k,
                        run_id=run_id,
                        variant=variant,
                        seed=seed,
                        concurrency=concurrency,
                        settings={"base_url": server.base_url, "model": models[variant]},
                        on_done=functools.partial(_advance, progress, bar),
                        environment={"tasks_sha256": file_digest(bundled_tasks()) or ""},
                    )
        finally:
            telemetry.shutdown()


def _print_demo(
    data: Any, run_id: str, cases: int, k: int, fmt: str, lake: Lake, paths: dict[str, Path], done: str
) -> None:
    """The demo's figures (the report's data) as JSON, CSV or tables, and where its reports are."""
    from tracevals.report import summary_rows
    from tracevals.report.reliability_view import reliability_json
    from tracevals.report.terminal import environment_lines, regression_table, reliability_tables, summary_table

    summaries, comparison = data.summaries, data.comparison
    assert comparison is not None  # both variants ran
    rows = summary_rows(summaries)
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "run_id": run_id,
                    "variants": rows,
                    "regressions": [
                        {
                            "task_id": d.task_id,
                            "baseline_rate": d.baseline_rate,
                            "candidate_rate": d.candidate_rate,
                            "delta": d.delta,
                        }
                        for d in comparison.regressions
                    ],
                    "significance": comparison.statement,
                    "reliability": reliability_json(data.reliability),
                    "lake": str(lake),
                    "reports": {name: str(p) for name, p in paths.items()},
                },
                default=str,
            )
        )
        return
    if fmt == "csv":
        print_rows(list(rows[0]) if rows else [], [list(r.values()) for r in rows], "csv")
        return
    columns, table = summary_table(summaries)
    print_rows(columns, table, "table", title=f"run {run_id}: {cases} cases x {k} attempts per variant")
    for title, head, body in reliability_tables(data.reliability):
        print_rows(head, body, "table", title=title)
    head, regress = regression_table(comparison)
    if regress:
        print_rows(head, regress, "table", title="Regressions (worst first)")
    echo_prose(comparison.statement)
    for line in environment_lines(data.reliability):
        echo_prose(line)
    click.echo(f"\n{done}")
    click.echo(f"lake:    {lake}   (try: {command_line('tracevals', 'sql', '--lake', str(lake), TRY_QUERY)})")
    for name, path in paths.items():
        click.echo(f"{name + ':':<8} {path}")


def flaky_world_path() -> Path:
    """The bundled fault profile of the demo's flaky world."""
    return Path(__file__).resolve().parents[1] / "demo" / "flaky_world.yaml"


def _attribute(
    out: Path, run_id: str, cases: Any, k: int, seed: int, concurrency: int, model: str, console: Console, fmt: str
) -> None:
    """`demo --attribute-variance`: the baseline model in the flaky world, at the three levels."""
    from tracevals.cli.shared.variance import print_attribution, run_attribution, score_attribution
    from tracevals.demo.agent import order_support_agent
    from tracevals.harness.faults import load_fault_profile
    from tracevals.harness.interceptor import RunPlan
    from tracevals.lake.names import under
    from tracevals.simulator import SimulatedModelServer

    if k < 2:
        raise click.ClickException("--attribute-variance compares attempts of one task: use -k 2 or more")
    lake = Lake.open(out / "lake")
    plan = RunPlan(faults=tuple(load_fault_profile(flaky_world_path())))
    environment = {"tasks_sha256": file_digest(bundled_tasks()), "faults": file_digest(flaky_world_path())}
    with SimulatedModelServer() as server:
        telemetry = instrument(lake=lake, capture_content=True, service_name="tracevals-demo")
        try:
            run_attribution(
                order_support_agent, cases, k=k, run_id=run_id, variant="baseline", lake=lake,
                work=under(out / "cassettes", run_id), base=plan, seed=seed, concurrency=concurrency,
                settings={"base_url": server.base_url, "model": model}, done=(), flush=None,
                environment={key: v for key, v in environment.items() if v}, console=console,
            )  # fmt: skip
        finally:
            telemetry.shutdown()
    result = score_attribution(lake, run_id, cases, "baseline", k)
    print_attribution(result, run_id, lake, "baseline", fmt)
