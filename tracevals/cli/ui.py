"""`tracevals ui`: serve a read-only web UI over a lake on 127.0.0.1."""

from __future__ import annotations

import signal
import socket
import sys
from types import FrameType
from typing import TYPE_CHECKING

import click

from tracevals import env
from tracevals.cli.shared.output import format_option, lake_option, print_rows
from tracevals.model.signals import taken_here

if TYPE_CHECKING:
    from tracevals.lake.lake import Lake


@click.command()
@lake_option("The lake: a directory (holds spans/, scores/) or an s3:// prefix.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    envvar=env.UI_PORT,
    show_default="a free port",
    help="Port on 127.0.0.1 (the UI never binds another address).",
)
@click.option(
    "--query-seconds",
    type=click.FloatRange(0.1),
    default=10.0,
    show_default=True,
    envvar=env.UI_QUERY_SECONDS,
    help="Time limit of one query a page runs (SQL page, session search, a trace's lookup).",
)
@click.option(
    "--row-cap",
    type=click.IntRange(1),
    default=10_000,
    show_default=True,
    envvar=env.UI_ROW_CAP,
    help="Most rows a query returns to a page or a download.",
)
@format_option()
def ui(lake: Lake, port: int, query_seconds: float, row_cap: int, fmt: str) -> None:
    """Serve a read-only web UI over a lake on 127.0.0.1 (runs, tasks, attempts, traces, production, SQL).

    \b
    Prints the URL to open, with a random token (--format json: url, port, lake): the UI answers
    nobody without it, only on 127.0.0.1, only GET. Every figure is the report's (`tracevals report
    --run RUN`), computed in the background when files land; pages update by themselves while a run
    writes. Ctrl-C stops it. See docs/ui.md.
    Examples:
      tracevals ui --lake demo-out/lake
      tracevals ui --lake s3://bucket/lake --port 8765
    """
    try:
        import uvicorn
    except ImportError:
        raise click.ClickException(
            "tracevals ui needs its extra: pip install 'tracevals[ui]' (starlette, uvicorn, jinja2)"
        ) from None
    from tracevals.queries import LakeError
    from tracevals.ui import create_app
    from tracevals.ui.guard import new_token

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        raise click.ClickException(
            f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}; pick another --port"
        ) from None
    sock.listen(64)
    bound = sock.getsockname()[1]
    token = new_token()
    try:
        app, _ui = create_app(lake, token, bound, query_seconds=query_seconds, row_cap=row_cap)
    except LakeError as exc:
        sock.close()
        raise click.ClickException(str(exc)) from None
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    url = f"http://127.0.0.1:{bound}/?token={token}"
    if fmt == "table":
        click.echo(f"tracevals ui: {url}")
    else:
        print_rows(["url", "port", "lake"], [[url, bound, lake]], fmt)
    click.echo(f"tracevals ui: serving {lake} read-only; Ctrl-C stops it", err=True)
    sys.stdout.flush()
    # uvicorn shuts down gently on SIGINT and SIGTERM, then raises the signal again for the command line's
    # handler ("Aborted!"); SIGHUP (the terminal closed) is given the same course, unless it is ignored
    hup = [s for s in taken_here() if s not in (signal.SIGINT, signal.SIGTERM)]
    taken: list[int] = []

    def on_hup(signum: int, frame: FrameType | None) -> None:
        taken.append(signum)
        server.handle_exit(signum, frame)

    previous = {s: signal.signal(s, on_hup) for s in hup}
    try:
        server.run(sockets=[sock])
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if taken:
        signal.raise_signal(taken[0])
