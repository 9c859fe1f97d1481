"""The UI as an ASGI application: routes, templates, the guard around them.

`create_app(lake)` opens the lake (one read-only connection, `reader.LakeReader`), starts the background
figures (`figures.Figures`) and returns the Starlette app wrapped in the guard (`guard.Guard`). Pages are
rendered on the server from Jinja2 templates with autoescape on; htmx (shipped in `static/`, no CDN)
refreshes a page's main part while figures are being computed or a run is writing.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tracevals.lake.lake import Lake
from tracevals.report.formatting import interval, num
from tracevals.ui.figures import Figures
from tracevals.ui.guard import Guard
from tracevals.ui.reader import LakeReader
from tracevals.ui.text import inert, pretty

__all__ = ["UI", "create_app", "link", "page_routes"]


def link(*parts: Any, **query: Any) -> str:
    """A URL of the UI: path segments quoted one by one, the query encoded (empty values left out). Span
    values never become links but through here, so a `javascript:` text can only ever be a path segment."""
    path = "/" + "/".join(quote(str(p), safe="") for p in parts)
    kept = {k: v for k, v in query.items() if v not in (None, "")}
    return path + (f"?{urlencode(kept)}" if kept else "")


def _rate(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else num(float(value), digits)


def _ci(pair: Any) -> str:
    if not pair or pair[0] is None or pair[1] is None:
        return "[n/a]"
    return interval((float(pair[0]), float(pair[1])))


def _ms(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{float(value):,.0f} ms" if value >= 10 else f"{float(value):.1f} ms"


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("tracevals.ui", "templates"),
        autoescape=select_autoescape(("html",), default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(inert=inert, pretty=pretty, rate=_rate, ci=_ci, ms=_ms)
    from tracevals.ui import charts

    env.globals.update(link=link, charts=charts)
    return env


@dataclass
class UI:
    """What every page reads: the lake, its connection, its figures, the templates."""

    lake: Lake
    reader: LakeReader
    figures: Figures
    templates: Environment
    token: str

    def state(self) -> str:
        """What an open page has seen of the lake and its figures: when it differs, the page redraws."""
        return f"{self.reader.generation}.{self.figures.version}"

    def page(self, request: Request, template: str, status: int = 200, **values: Any) -> Response:
        """Render `template`. Its main part polls itself (htmx, every 2 s) when `watch` (the default: figures
        pages) or `live` (a run writing; None: while figures are computed); a poll that finds the lake and
        the figures as the page last saw them, and nothing live, gets 204 (htmx swaps nothing)."""
        live = values.pop("live", None)
        live = self.figures.busy if live is None else live
        watch = values.pop("watch", True)
        state = self.state()
        if request.headers.get("hx-request") and not live and request.headers.get("x-tracevals-state") == state:
            return Response(status_code=204)
        html = self.templates.get_template(template).render(
            lake=self.lake, live=live, watch=watch or live, state=state, index_error=self.figures.index_error,
            here=request.url.path + (f"?{request.url.query}" if request.url.query else ""), **values,
        )  # fmt: skip
        return HTMLResponse(html, status_code=status)

    def missing(self, request: Request, what: str) -> Response:
        return self.page(request, "missing.html", status=404, what=what, live=False, watch=False)


def create_app(
    lake: Lake,
    token: str,
    port: int,
    *,
    query_seconds: float | None = None,
    row_cap: int | None = None,
    poll_seconds: float | None = None,
) -> tuple[Guard, UI]:
    """The guarded app for `lake`; the lake is opened in the background once the server starts."""
    from tracevals.ui import pages_runs as runs
    from tracevals.ui import pages_trace as trace

    lake.check()  # a bad lake fails here, in one line, before the server starts
    figures = Figures(lake)
    limits: dict[str, Any] = {}
    if query_seconds is not None:
        limits["query_seconds"] = query_seconds
    if row_cap is not None:
        limits["row_cap"] = row_cap
    reader = LakeReader(lake, poll_seconds=poll_seconds, on_reopen=figures.lake_changed, **limits)
    ui = UI(lake, reader, figures, environment(), token)
    static = StaticFiles(directory=str(resources.files("tracevals.ui").joinpath("static")))
    pages: list[tuple[str, Page, str]] = [  # (path, page, name): every page of the UI
        ("/", runs.runs_page, "runs"),
        ("/runs/{run_id}", runs.run_page, "run"),
        ("/runs/{run_id}/report.json", runs.run_json, "run_json"),
        ("/runs/{run_id}/compare", runs.compare_page, "compare"),
        ("/runs/{run_id}/tasks/{task_id}", runs.task_page, "task"),
        ("/runs/{run_id}/tasks/{task_id}/funnel", runs.funnel_page, "funnel"),
        ("/runs/{run_id}/failures", runs.failures_page, "failures"),
        ("/runs/{run_id}/variance", runs.variance_page, "variance"),
        ("/traces/{trace_id}", trace.trace_page, "trace"),
        ("/production", trace.production_page, "production"),
        ("/sql", trace.sql_page, "sql"),
        ("/sql.csv", trace.sql_csv, "sql_csv"),
        ("/sql.parquet", trace.sql_parquet, "sql_parquet"),
    ]
    routes = [*page_routes(ui, pages), Mount("/static", app=static, name="static")]

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        ui.figures.start(ui.reader.generation)
        ui.reader.start()
        try:
            yield
        finally:
            ui.figures.stop()
            ui.reader.close()

    async def not_found(request: Request, _exc: Exception) -> Response:
        return ui.missing(request, "this page")

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found})
    return Guard(app, token, port), ui


Page = Callable[[UI, Request], Response]


def page_routes(ui: UI, pages: Sequence[tuple[str, Page, str]]) -> list[Route]:
    """A route per (path, page, name): each page is called with `ui` and the request."""

    def endpoint(fn: Page) -> Callable[[Request], Response]:
        return lambda request: fn(ui, request)

    return [Route(path, endpoint(fn), name=name) for path, fn, name in pages]


def query_of(request: Request) -> Mapping[str, str]:
    return {k: v for k, v in request.query_params.items() if k != "token"}


def text(body: str, status: int = 200, media_type: str = "text/plain; charset=utf-8") -> Response:
    return Response(body, status_code=status, media_type=media_type)
