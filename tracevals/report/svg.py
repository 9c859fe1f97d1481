"""Inline SVG charts for the HTML report: no script, no CDN, so the file opens offline and anywhere.

Each function returns one ``<svg>`` element as text, sized by its content, with a ``<title>`` for
screen readers. Every label passes through ``html.escape``: task ids and variant names are user data.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tracevals.report.formatting import html_text as escape
from tracevals.stats import percentile

__all__ = [
    "PALETTE",
    "IntervalPoint",
    "color_of",
    "day_chart",
    "interval_chart",
    "line_chart",
    "nice_ticks",
    "stacked_bars",
    "strip_chart",
]

# Colour-blind-safe (Okabe-Ito); the first two are baseline and candidate in every chart.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def color_of(index: int) -> str:
    """The palette colour of the index-th variant."""
    return PALETTE[index % len(PALETTE)]


@dataclass(frozen=True)
class IntervalPoint:
    """One variant's rate on one row of an interval chart, with its interval and counts."""

    series: int
    rate: float
    low: float
    high: float
    label: str


def _open(width: float, height: float, title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" {FONT}><title>{escape(title)}</title>'
    )


def _legend(names: Sequence[str], x: float, y: float, dashed_note: str | None = None) -> str:
    parts = []
    for i, name in enumerate(names):
        cx = x + i * 140
        parts.append(
            f'<rect x="{cx:.1f}" y="{y - 9:.1f}" width="12" height="12" fill="{color_of(i)}"/>'
            f'<text x="{cx + 17:.1f}" y="{y + 1:.1f}">{escape(name)}</text>'
        )
    if dashed_note:
        cx = x + len(names) * 140
        parts.append(
            f'<line x1="{cx:.1f}" y1="{y - 3:.1f}" x2="{cx + 22:.1f}" y2="{y - 3:.1f}" stroke="#555" '
            f'stroke-dasharray="5 3" stroke-width="2"/>'
            f'<text x="{cx + 27:.1f}" y="{y + 1:.1f}">{escape(dashed_note)}</text>'
        )
    return "".join(parts)


def _x_axis(left: float, right: float, y: float, ticks: Sequence[tuple[float, str]], label: str) -> str:
    parts = [f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{right:.1f}" y2="{y:.1f}" stroke="#333"/>']
    for x, text in ticks:
        parts.append(
            f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x:.1f}" y2="{y + 4:.1f}" stroke="#333"/>'
            f'<text x="{x:.1f}" y="{y + 16:.1f}" text-anchor="middle">{escape(text)}</text>'
        )
    parts.append(f'<text x="{(left + right) / 2:.1f}" y="{y + 32:.1f}" text-anchor="middle">{escape(label)}</text>')
    return "".join(parts)


def line_chart(
    solid: Mapping[str, Mapping[int, float]],
    dashed: Mapping[str, Mapping[int, float]] | None = None,
    *,
    title: str,
    x_label: str,
    y_label: str,
    dashed_label: str | None = None,
) -> str:
    """Rates in [0, 1] against an integer x (k), one solid line per series and optional dashed twins."""
    width, height, left, right, top, bottom = 560.0, 320.0, 56.0, 540.0, 34.0, 262.0
    xs = sorted({x for series in solid.values() for x in series} | {1})
    x_max = max(xs[-1], 2)

    def px(x: float) -> float:
        return left + (x - 1) / (x_max - 1) * (right - left)

    def py(y: float) -> float:
        return bottom - y * (bottom - top)

    parts = [_open(width, height, title)]
    for i in range(6):  # grid every 0.2
        y = py(i / 5)
        parts.append(
            f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{right:.1f}" y2="{y:.1f}" stroke="#e3e3e3"/>'
            f'<text x="{left - 6:.1f}" y="{y + 4:.1f}" text-anchor="end">{i / 5:.1f}</text>'
        )
    parts.append(
        f'<text transform="translate(14 {(top + bottom) / 2:.1f}) rotate(-90)" text-anchor="middle">'
        f"{escape(y_label)}</text>"
    )
    parts.append(_x_axis(left, right, bottom, [(px(x), str(x)) for x in range(1, x_max + 1)], x_label))
    names = list(solid)
    for group, dash in ((dashed or {}, ' stroke-dasharray="5 3"'), (solid, "")):
        for name, series in group.items():
            ordered = [(k, v) for k, v in sorted(series.items()) if math.isfinite(v)]
            if not ordered:
                continue
            color = color_of(names.index(name) if name in names else len(names))
            path = " ".join(f"{px(k):.1f},{py(v):.1f}" for k, v in ordered)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
            parts += [
                f'<circle cx="{px(k):.1f}" cy="{py(v):.1f}" r="3.5" fill="{color}">'
                f"<title>{escape(name)} k={k}: {v:.3f}</title></circle>"
                for k, v in ordered
            ]
    parts.append(_legend(list(solid), left, 18, dashed_label if dashed else None))
    parts.append("</svg>")
    return "".join(parts)


def interval_chart(rows: Sequence[tuple[str, Sequence[IntervalPoint]]], names: Sequence[str], *, title: str) -> str:
    """One row per label (a task), a dot per series at its rate with its interval as a bar, on [0, 1]."""
    row_h, left, right, top = 22.0, 150.0, 620.0, 40.0
    height = top + row_h * len(rows) + 46
    width = right + 20

    def px(x: float) -> float:
        return left + x * (right - left)

    parts = [_open(width, height, title)]
    for i in range(6):
        x = px(i / 5)
        parts.append(f'<line x1="{x:.1f}" y1="{top - 6:.1f}" x2="{x:.1f}" y2="{height - 40:.1f}" stroke="#e3e3e3"/>')
    for r, (label, points) in enumerate(rows):
        y0 = top + r * row_h
        if r % 2:
            parts.append(f'<rect x="0" y="{y0 - 2:.1f}" width="{width:.0f}" height="{row_h:.0f}" fill="#f6f6f6"/>')
        parts.append(f'<text x="{left - 8:.1f}" y="{y0 + 13:.1f}" text-anchor="end">{escape(label)}</text>')
        for p in points:
            y = y0 + 6 + p.series * (10 / max(1, len(names) - 1))
            color = color_of(p.series)
            parts.append(
                f'<g><title>{escape(p.label)}</title><line x1="{px(p.low):.1f}" y1="{y:.1f}" x2="{px(p.high):.1f}" '
                f'y2="{y:.1f}" stroke="{color}" stroke-width="2"/><circle cx="{px(p.rate):.1f}" cy="{y:.1f}" r="4" '
                f'fill="{color}"/></g>'
            )
    bottom = height - 40
    parts.append(_x_axis(left, right, bottom, [(px(i / 5), f"{i / 5:.1f}") for i in range(6)], "pass rate c/n"))
    parts.append(_legend(names, left, 18))
    parts.append("</svg>")
    return "".join(parts)


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]: a step of 1, 2 or 5 times a power of ten, about `count` ticks
    (500, 1000, 1500 ms, never 535, 1291, 2047)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(1, count - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(lo / step + 1e-9) * step
    ticks = [round(first, 12)]
    while ticks[-1] < hi - step * 1e-9:
        ticks.append(round(first + len(ticks) * step, 12))
    return ticks if len(ticks) > 1 else [ticks[0], round(ticks[0] + step, 12)]


def _tick_text(value: float, ticks: Sequence[float]) -> str:
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    digits = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{value:,.{digits}f}"


def strip_chart(series: Mapping[str, Sequence[float]], *, title: str, x_label: str, digits: int = 0) -> str:
    """Each value a dot on its series' row (the distribution in full), with p50 and p95 marked, on an axis
    of round ticks."""
    values = [v for vs in series.values() for v in vs if math.isfinite(v)]
    ticks = nice_ticks(min(values), max(values)) if values else nice_ticks(0.0, 1.0)
    lo, hi = ticks[0], ticks[-1]
    row_h, left, right, top = 46.0, 110.0, 620.0, 36.0
    height = top + row_h * len(series) + 46
    width = right + 20

    def px(x: float) -> float:
        return left + (x - lo) / (hi - lo) * (right - left)

    parts = [_open(width, height, title)]
    for r, (name, vs) in enumerate(series.items()):
        y0 = top + r * row_h
        color = color_of(r)
        parts.append(f'<text x="{left - 8:.1f}" y="{y0 + 22:.1f}" text-anchor="end">{escape(name)}</text>')
        finite = sorted(v for v in vs if math.isfinite(v))
        for j, v in enumerate(finite):
            # Deterministic jitter (a hash, not a random draw) so the file is the same on every run.
            jitter = int(hashlib.sha256(f"{name}:{j}".encode()).hexdigest()[:4], 16) / 0xFFFF
            parts.append(
                f'<circle cx="{px(v):.1f}" cy="{y0 + 6 + jitter * 26:.1f}" r="2.6" fill="{color}" fill-opacity="0.55"/>'
            )
        for q, dash in ((0.5, ""), (0.95, ' stroke-dasharray="3 2"')):
            if finite:
                v = percentile(finite, q)
                parts.append(
                    f'<line x1="{px(v):.1f}" y1="{y0 + 2:.1f}" x2="{px(v):.1f}" y2="{y0 + 36:.1f}" stroke="#222" '
                    f'stroke-width="2"{dash}><title>{escape(name)} p{int(q * 100)} = {v:.{digits}f}</title></line>'
                )
    marks = [(px(t), _tick_text(t, ticks)) for t in ticks]
    parts.append(_x_axis(left, right, height - 40, marks, f"{x_label} (solid: p50, dashed: p95)"))
    parts.append("</svg>")
    return "".join(parts)


def day_chart(series: Mapping[str, Sequence[tuple[str, float, float, float, str]]], *, title: str) -> str:
    """Rates in [0, 1] day by day, one line per series (an evaluator) over a band of its Wilson interval.
    Each point is (day label, rate, low, high, tooltip); the days are the union of the series', in order."""
    days = sorted({p[0] for points in series.values() for p in points})
    width, height, left, right, top, bottom = 640.0, 300.0, 56.0, 620.0, 40.0, 250.0
    span = max(1, len(days) - 1)

    def px(day: str) -> float:
        return left + (days.index(day) / span if len(days) > 1 else 0.5) * (right - left)

    def py(y: float) -> float:
        return bottom - y * (bottom - top)

    parts = [_open(width, height, title)]
    for i in range(6):
        y = py(i / 5)
        parts.append(
            f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{right:.1f}" y2="{y:.1f}" stroke="#e3e3e3"/>'
            f'<text x="{left - 6:.1f}" y="{y + 4:.1f}" text-anchor="end">{i / 5:.1f}</text>'
        )
    every = max(1, math.ceil(len(days) / 8))  # at most ~8 day labels
    parts.append(_x_axis(left, right, bottom, [(px(d), d[5:]) for d in days[::every]], "day (UTC, MM-DD)"))
    for i, points in enumerate(series.values()):
        color = color_of(i)
        ordered = sorted((p for p in points if math.isfinite(p[1])), key=lambda p: p[0])
        if not ordered:
            continue
        band = [f"{px(d):.1f},{py(hi):.1f}" for d, _, _, hi, _ in ordered]
        band += [f"{px(d):.1f},{py(lo):.1f}" for d, _, lo, _, _ in reversed(ordered)]
        parts.append(f'<polygon points="{" ".join(band)}" fill="{color}" fill-opacity="0.12" stroke="none"/>')
        path = " ".join(f"{px(d):.1f},{py(r):.1f}" for d, r, _, _, _ in ordered)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        parts += [
            f'<circle cx="{px(d):.1f}" cy="{py(r):.1f}" r="3.5" fill="{color}"><title>{escape(tip)}</title></circle>'
            for d, r, _, _, tip in ordered
        ]
    names = list(series)
    for i, name in enumerate(names):  # the legend in rows of four: evaluator names are long
        x, y = left + (i % 4) * 140, 14 + (i // 4) * 14
        parts.append(
            f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="12" height="10" fill="{color_of(i)}"/>'
            f'<text x="{x + 16:.1f}" y="{y:.1f}">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def stacked_bars(
    rows: Sequence[tuple[str, Sequence[int]]], parts_names: Sequence[str], colors: Sequence[str], *, title: str
) -> str:
    """One horizontal bar per row, split into counts (e.g. recovered / escalated / failed), scaled to its total."""
    row_h, left, right, top = 24.0, 190.0, 620.0, 40.0
    height = top + row_h * len(rows) + 20
    width = right + 60
    out = [_open(width, height, title)]
    for i, (name, color) in enumerate(zip(parts_names, colors, strict=True)):
        x = left + i * 130
        out.append(
            f'<rect x="{x:.1f}" y="9" width="12" height="12" fill="{color}"/>'
            f'<text x="{x + 17:.1f}" y="19">{escape(name)}</text>'
        )
    for r, (label, counts) in enumerate(rows):
        y = top + r * row_h
        total = sum(counts)
        out.append(f'<text x="{left - 8:.1f}" y="{y + 13:.1f}" text-anchor="end">{escape(label)}</text>')
        x = left
        for name, count, color in zip(parts_names, counts, colors, strict=True):
            w = (right - left) * count / total if total else 0.0
            if w > 0:
                out.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{row_h - 6:.1f}" fill="{color}">'
                    f"<title>{escape(label)}: {escape(name)} {count}/{total}</title></rect>"
                )
            x += w
        out.append(f'<text x="{right + 6:.1f}" y="{y + 13:.1f}">n={total}</text>')
    out.append("</svg>")
    return "".join(out)
