"""The screens that read the lake itself, each bounded: one trace (a lookup of its files), production (the
production report, computed in the background) with a session search (the chosen days' partitions only),
and the read-only SQL sandbox of `tracevals sql`. Every query runs on the UI's one read-only connection,
under its time limit and row cap (`reader.LakeReader`)."""

from __future__ import annotations

import datetime as dt
import io
import re
from typing import Any

import click
import duckdb
import pyarrow.parquet as pq
from starlette.requests import Request
from starlette.responses import Response

from tracevals.lake.paths import LakeError
from tracevals.lake.unreadable import error_line
from tracevals.ui.app import UI, query_of, text
from tracevals.ui.reader import QueryLimit
from tracevals.ui.trace import load_trace

__all__ = ["production_page", "search_sessions", "sql_csv", "sql_page", "sql_parquet", "trace_page"]

_HEX = re.compile(r"[0-9a-f]{1,64}")


def _trace(ui: UI, trace_id: str) -> tuple[Any, str | None]:
    if not _HEX.fullmatch(trace_id):
        return None, f"{trace_id!r} is not a trace id (hex digits)"
    try:
        attempt, verdicts = ui.figures.trajectory(trace_id), ui.figures.verdicts(trace_id)
        return ui.reader.run(lambda con: load_trace(con, trace_id, attempt, verdicts)), None
    except (QueryLimit, duckdb.Error) as exc:
        return None, error_line(exc)


def trace_page(ui: UI, request: Request) -> Response:
    trace_id = request.path_params["trace_id"]
    if not _HEX.fullmatch(trace_id):  # no trace can have it: not found, as an id of no trace is (not a 200)
        return ui.missing(request, f"trace {trace_id} (a trace id is hex digits)")
    view, problem = _trace(ui, trace_id)
    if view is None and problem is None:
        return ui.missing(request, f"trace {trace_id}")
    beside_id = query_of(request).get("beside", "")
    beside, beside_problem = _trace(ui, beside_id) if beside_id else (None, None)
    return ui.page(request, "trace.html", trace=view, problem=problem, beside=beside, beside_problem=beside_problem,
                   beside_id=beside_id, live=False, watch=False)  # fmt: skip


def _day(value: str | None, default: dt.date | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(value) if value else default
    except ValueError:
        return default


def _utc(day: dt.date | None) -> dt.datetime | None:
    return None if day is None else dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc)


_SEARCH = """
WITH hit AS (
    SELECT DISTINCT trace_id FROM raw_spans
    WHERE date >= ? AND date < ? AND {conditions}
)
SELECT coalesce(max(s.session_id), s.trace_id) AS session_id, s.trace_id, min(s.start_time) AS started,
       max(s.service_name) AS service, max(s.run_id) AS run_id,
       list(DISTINCT s.tool_name ORDER BY s.tool_name) FILTER (WHERE s.tool_name IS NOT NULL) AS tools,
       list(DISTINCT s.error_type ORDER BY s.error_type) FILTER (WHERE s.error_type IS NOT NULL) AS errors,
       count(*) AS spans
FROM raw_spans AS s JOIN hit USING (trace_id)
WHERE s.date >= ? AND s.date < ?
GROUP BY s.trace_id
ORDER BY started DESC, s.trace_id
"""


def search_sessions(ui: UI, q: dict[str, str]) -> tuple[Any, str | None]:
    """Traces whose spans match the search (session id, text in any attribute, tool, error type), started
    in the chosen days: only those days' partitions are read, under the time limit and row cap."""
    today = dt.datetime.now(dt.timezone.utc).date()
    since = _day(q.get("since"), today - dt.timedelta(days=6))
    until = _day(q.get("until"), today + dt.timedelta(days=1))
    conditions, params = [], []
    for key, clause in (("session", "session_id = ?"), ("tool", "tool_name = ?"), ("error", "error_type = ?"),
                        ("text", "contains(lower(attributes), lower(?))")):  # fmt: skip
        if q.get(key):
            conditions.append(clause)
            params.append(q[key])
    if not conditions:
        return None, None
    sql = _SEARCH.format(conditions=" AND ".join(conditions))
    try:
        return ui.reader.rows(sql, [since, until, *params, since, until], cap=200), None
    except (QueryLimit, duckdb.Error) as exc:
        return None, error_line(exc)


def production_page(ui: UI, request: Request) -> Response:
    q = dict(query_of(request))
    since, until = _day(q.get("since"), None), _day(q.get("until"), None)
    entry = ui.figures.production(_utc(since), _utc(until))
    found, search_problem = search_sessions(ui, q)
    doc = entry.value.doc if entry.value is not None else {}
    trends = {t["evaluator"]: t for t in doc.get("trends", [])}
    return ui.page(request, "production.html", entry=entry, q=q, found=found, search_problem=search_problem,
                   trends=trends, watch=found is None and search_problem is None,
                   production_traces=ui.figures.index.production_traces,
                   live=entry.value is None and entry.error is None)  # fmt: skip


def _sql_result(ui: UI, query: str) -> tuple[Any, str | None]:
    """The rows of a read-only query, checked exactly as `tracevals sql` checks it (`check_read_only`: it only
    parses), on the UI's sandboxed SQL connection with what `tracevals sql` computes once for it computed once,
    under the time limit and row cap."""
    from tracevals.cli.sql import check_read_only

    try:
        ui.reader.run(lambda con: check_read_only(con, query))
        return ui.reader.rows(query, user_sql=True), None
    except click.ClickException as exc:
        return None, exc.format_message()
    except QueryLimit as exc:
        return None, str(exc)
    except (duckdb.Error, LakeError) as exc:
        return None, f"query failed: {error_line(exc)}"


def sql_page(ui: UI, request: Request) -> Response:
    query = query_of(request).get("q", "").strip()
    result, problem = _sql_result(ui, query) if query else (None, None)
    rows: list[tuple[Any, ...]] = []
    if result is not None:
        from tracevals.cli.shared.output import table_rows

        _, rows = table_rows(result.table)
    return ui.page(request, "sql.html", query=query, result=result, rows=rows, problem=problem,
                   cap=ui.reader.row_cap, seconds=ui.reader.query_seconds, live=False, watch=False)  # fmt: skip


def _download(ui: UI, request: Request, kind: str) -> Response:
    query = query_of(request).get("q", "").strip()
    if not query:
        return text("no query (?q=SELECT ...)\n", 400)
    result, problem = _sql_result(ui, query)
    if result is None:
        return text(f"{problem}\n", 400)
    headers = {"content-disposition": f'attachment; filename="tracevals-query.{kind}"'}
    if kind == "csv":
        from tracevals.cli.shared.output import csv_text, table_rows

        columns, rows = table_rows(result.table)
        return Response(csv_text(columns, rows), media_type="text/csv; charset=utf-8", headers=headers)
    buffer = io.BytesIO()
    pq.write_table(result.table, buffer)
    return Response(buffer.getvalue(), media_type="application/vnd.apache.parquet", headers=headers)


def sql_csv(ui: UI, request: Request) -> Response:
    return _download(ui, request, "csv")


def sql_parquet(ui: UI, request: Request) -> Response:
    return _download(ui, request, "parquet")
