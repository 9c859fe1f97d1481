"""Reports over :mod:`tracevals.stats` figures: CSV, JSON, Markdown and a self-contained HTML page.

The writers only lay out figures; every number comes from ``tracevals.stats`` (through
:func:`build_report`) so the formats can never disagree. Missing values (NaN, e.g. no latency
recorded) are written as empty CSV cells, JSON ``null`` and ``n/a`` elsewhere, never as the invalid
JSON token ``NaN``. Files are written to a temporary name and renamed, so a reader never sees half a
report.

>>> data = build_report(trajectories, scores, cases, meta)      # doctest: +SKIP
>>> write_report("report.html", data)                           # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracevals.report.csv_summary import CSV_COLUMNS, summary_rows, write_csv
from tracevals.report.data import FailedAttempt, ReportData, build_report, pick_pair
from tracevals.report.formatting import PathArg
from tracevals.report.html import render_html, write_html
from tracevals.report.json_report import JSON_SCHEMA, to_json_dict, write_json, write_json_doc
from tracevals.report.markdown import render_markdown, write_markdown
from tracevals.report.reliability_view import reliability_json

__all__ = [
    "CSV_COLUMNS",
    "JSON_SCHEMA",
    "REPORT_FORMATS",
    "FailedAttempt",
    "ReportData",
    "build_report",
    "pick_pair",
    "render_html",
    "render_markdown",
    "report_format",
    "report_json",
    "summary_rows",
    "to_json_dict",
    "write_csv",
    "write_html",
    "write_json",
    "write_markdown",
    "write_report",
]

#: File suffix -> format name, for `tracevals report --out FILE`.
REPORT_FORMATS = {".html": "html", ".htm": "html", ".md": "markdown", ".csv": "csv", ".json": "json"}


def report_format(path: PathArg) -> str:
    """The format a path's suffix asks for; ValueError naming the valid suffixes otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in REPORT_FORMATS:
        valid = ", ".join(sorted(REPORT_FORMATS))
        raise ValueError(f"cannot tell the report format from {str(path)!r}: use one of the suffixes {valid}")
    return REPORT_FORMATS[suffix]


def report_json(data: ReportData) -> dict[str, Any]:
    """The JSON report of `data` as plain data (what `write_report` writes to a .json file)."""
    return to_json_dict(
        data.summaries, data.comparison, data.meta, data.faults, reliability_json(data.reliability), data.outcomes
    )


def write_report(path: PathArg, data: ReportData) -> Path:
    """Write `data` in the format the suffix of `path` names (.html .md .csv .json); returns the path."""
    fmt = report_format(path)
    if fmt == "html":
        return write_html(path, data)
    if fmt == "csv":
        return write_csv(path, data.summaries)
    if fmt == "json":
        return write_json_doc(path, report_json(data))
    return write_markdown(path, data.summaries, data.comparison, data.meta, data.faults, data.reliability)
