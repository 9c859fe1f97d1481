"""The UI's charts: the report's own SVG charts (`tracevals.report.svg`, every label escaped there) over
figures of the report's JSON document, so that a chart and the table beside it show the same numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from tracevals.report.formatting import interval, num
from tracevals.report.svg import IntervalPoint, day_chart, interval_chart, line_chart, stacked_bars

__all__ = ["funnel_chart", "pass_hat_k_chart", "production_trend_chart", "task_rates_chart"]

FUNNEL_PARTS = ("succeeded", "failed", "wrong args", "not called")
FUNNEL_COLORS = ("#009E73", "#E69F00", "#CC79A7", "#999999")


def pass_hat_k_chart(doc: Mapping[str, Any]) -> Markup:
    """pass^k (solid) and pass@k (dashed) against k, one line per variant, as the report draws it."""
    solid = {
        name: {int(k): v for k, v in v_["pass_hat_k"].items() if v is not None} for name, v_ in doc["variants"].items()
    }
    dashed = {
        name: {int(k): v for k, v in v_["pass_at_k"].items() if v is not None} for name, v_ in doc["variants"].items()
    }
    return Markup(
        line_chart(solid, dashed, title="pass^k against k", x_label="k (attempts that must all pass)",
                   y_label="rate", dashed_label="pass@k")
    )  # fmt: skip


def task_rates_chart(doc: Mapping[str, Any], baseline: str, candidate: str) -> Markup:
    """Per task, each variant's rate with its Wilson interval, in the comparison's order (regressions first)."""
    tasks = {name: {t["task_id"]: t for t in doc["variants"][name]["tasks"]} for name in (baseline, candidate)}
    rows = []
    for d in doc["comparison"]["deltas"]:
        points = []
        for i, name in enumerate((baseline, candidate)):
            t = tasks[name][d["task_id"]]
            points.append(IntervalPoint(i, t["rate"], t["wilson"][0], t["wilson"][1], f"{name} {d['task_id']}: "
                                        f"{t['c']}/{t['n']}"))  # fmt: skip
        rows.append((d["task_id"], points))
    return Markup(interval_chart(rows, [baseline, candidate], title="per-task pass rate with Wilson interval"))


def funnel_chart(funnel: Sequence[Mapping[str, Any]]) -> Markup:
    """Per expected step, the attempts that reached it split into what became of them."""
    rows = []
    for s in funnel:
        parts = (
            s["succeeded"],
            s["right_args"] - s["succeeded"],
            s["called"] - s["right_args"],
            s["reached"] - s["called"],
        )
        rows.append((f"{s['step']}. {s['tool']}", parts))
    return Markup(stacked_bars(rows, FUNNEL_PARTS, FUNNEL_COLORS, title="per-step funnel: reached → called → "
                               "right arguments → succeeded"))  # fmt: skip


def production_trend_chart(doc: Mapping[str, Any]) -> Markup:
    """Each evaluator's pass rate day by day, over its Wilson band (the production report's chart)."""
    series: dict[str, list[tuple[str, float, float, float, str]]] = {}
    for g in doc["by_day"]:
        if g["day"] is None or g["rate"] is None:
            continue
        lo, hi = g["wilson"]
        tip = f"{g['evaluator']} {g['day']}: {g['passes']}/{g['n']} = {num(g['rate'])} {interval((lo, hi))}"
        series.setdefault(g["evaluator"], []).append((g["day"], g["rate"], lo, hi, tip))
    return Markup(day_chart(series, title="pass rate per day, with Wilson interval")) if series else Markup("")
