"""`SimulatedModelServer`: the simulated model behind a real HTTP endpoint, in a background thread.

It is a stand-in for a provider, not a mock: clients talk to it over sockets with their ordinary SDK
(`openai.OpenAI(base_url=server.base_url)`), so the client's own request building, error mapping and
the instrumentation around it run exactly as they would against the real thing.

    with SimulatedModelServer(latency_ms=5) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sim", max_retries=0)

Routes are a table from (method, path) to a handler and the error format of its wire protocol: OpenAI
chat completions and Responses under `base_url`, Anthropic messages and Gemini's `generateContent` under
`root_url`. A handler
returns a JSON object, or an `EventStream` for `stream: true`, sent as chunked server-sent events.

    anthropic.Anthropic(base_url=server.root_url, api_key="sim", max_retries=0)
    genai.Client(api_key="sim", http_options=types.HttpOptions(base_url=server.root_url))
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from tracevals.simulator import anthropic_messages, gemini, openai_chat, openai_responses
from tracevals.simulator.engine import SimulatedModel
from tracevals.simulator.errors import SimulatorError
from tracevals.simulator.profiles import ProfileRegistry
from tracevals.simulator.sse import EventStream

_log = logging.getLogger(__name__)
MAX_BODY_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class Route:
    handler: Callable[[SimulatedModel, bytes], dict[str, Any] | EventStream]
    render_error: Callable[[SimulatorError], dict[str, Any]]


@dataclass(frozen=True)
class PatternRoute:
    """A route whose path names something (Gemini's `models/{model}:generateContent`): its handler also takes
    the path's match and the query string."""

    method: str
    path: re.Pattern[str]
    handler: Callable[[SimulatedModel, bytes, re.Match[str], str], dict[str, Any] | EventStream]
    render_error: Callable[[SimulatorError], dict[str, Any]]


ROUTES: dict[tuple[str, str], Route] = {
    ("POST", "/v1/chat/completions"): Route(openai_chat.handle_chat, openai_chat.render_error),
    ("POST", "/v1/responses"): Route(openai_responses.handle_responses, openai_chat.render_error),
    ("POST", "/v1/messages"): Route(anthropic_messages.handle_messages, anthropic_messages.render_error),
    ("GET", "/v1/models"): Route(openai_chat.handle_models, openai_chat.render_error),
}
PATTERN_ROUTES = (PatternRoute("POST", gemini.PATH, gemini.handle, gemini.render_error),)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # a client that keeps a connection open must not keep the process alive
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], model: SimulatedModel) -> None:
        self.model = model
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keep-alive, as SDK clients pool connections; every response sets Content-Length.
    protocol_version = "HTTP/1.1"
    timeout = 60  # an idle kept-alive connection frees its thread after this many seconds
    # Headers and body go out as two writes; with Nagle's algorithm on, the body would wait for the
    # client's delayed ACK (~40 ms a response on Linux), a latency no real provider adds.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):
            # A client that closes a stream early (or its pool) may reset the connection: not an error.
            self.close_connection = True

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        body = self._read_body()
        route: Route | PatternRoute | None = ROUTES.get((method, path))
        match = None
        for pattern in PATTERN_ROUTES if route is None else ():
            match = pattern.path.match(path)
            if match is not None and pattern.method == method:
                route = pattern
                break
        if route is None:
            named = {r.method for r in PATTERN_ROUTES if r.path.match(path)}
            allowed = sorted({m for m, p in ROUTES if p == path} | named)
            status = 405 if allowed else 404
            what = f"use {' or '.join(allowed)}" if allowed else "no such endpoint"
            error = SimulatorError(f"Invalid URL ({method} {path}): {what}.", status=status)
            self._send(status, openai_chat.render_error(error))
            return
        try:
            if body is None:
                raise SimulatorError("Missing, invalid or too large Content-Length.", status=413)
            if isinstance(route, PatternRoute):
                assert match is not None
                payload = route.handler(self.server.model, body, match, url.query)
            else:
                payload = route.handler(self.server.model, body)
        except SimulatorError as exc:
            self._send(exc.status, route.render_error(exc))
            return
        except Exception as exc:  # a profile bug must come back as a 500, not a dropped connection
            _log.exception("simulated model failed on %s %s", method, path)
            error = SimulatorError(f"The simulated model failed: {exc!r}", status=500, error_type="server_error")
            self._send(500, route.render_error(error))
            return
        if isinstance(payload, EventStream):
            self._send_events(payload)
        else:
            self._send(200, payload)

    def _read_body(self) -> bytes | None:
        """The request body; None when its length is unusable (the connection is then closed, since
        an unread body would be taken for the next request)."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:
            self.close_connection = True
            return None
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, stream: EventStream) -> None:
        # Chunked transfer encoding keeps the connection reusable without knowing the length up front.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in stream.chunks():
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: its right
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("%s " + format, self.address_string(), *args)


class SimulatedModelServer:
    """An OpenAI-, Anthropic- and Gemini-compatible model server on `host:port` (port 0: a free one), run in a
    daemon thread.

    `latency_ms` is added to every response (think of it as the network); each profile may add its own.
    `registry` defaults to the module-wide one that `register_profile()` fills.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        latency_ms: float = 0.0,
        registry: ProfileRegistry | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.model = SimulatedModel(registry, latency_ms)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """`http://host:port/v1`, the `base_url` an OpenAI client takes."""
        if self._httpd is None:
            raise RuntimeError("the simulated model server is not running; call start() first")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """`http://host:port`, the `base_url` an Anthropic client takes (it appends `/v1/messages`), and a
        `google-genai` client's (`/v1beta/models/...`)."""
        return self.base_url.removesuffix("/v1")

    @property
    def running(self) -> bool:
        return self._httpd is not None

    def start(self) -> SimulatedModelServer:
        if self._httpd is not None:
            return self
        self._httpd = _HTTPServer((self.host, self.port), self.model)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},  # stop() returns within this
            name=f"simulated-model-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> SimulatedModelServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
