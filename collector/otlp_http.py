"""The OTLP/HTTP receiver: `POST /v1/traces` and `/v1/logs`, protobuf or JSON, plain or gzip.

As the OTLP specification asks: the reply has the request's content type; success is 200 with an
Export*ServiceResponse (with `partial_success` when some items were rejected); errors carry a
`google.rpc.Status` body. Only what the client can fix gets a status OTLP exporters do not retry
(400 bad data or framing, 401, 404, 405, 413 past the size limit, 415 an unsupported content type or
encoding, 501 an unsupported transfer coding); whatever is the server's (a full queue, memory, a full
disk, shutting down, a fault of ours) is 503 with `Retry-After`, and 429 when every connection slot is
busy. A client too slow to send its request within `read_timeout` has its connection closed, which
exporters retry as a network error. The request is acknowledged only after `Pipeline.submit`, i.e.
once it is in the fsynced write-ahead log.

Bodies come sized or chunked (`http_body`), each piece charged to the queue as it arrives.

Stdlib `http.server` on purpose: one thread per connection is plenty for SDK exporters, which keep a
connection open and send batches of hundreds of spans, and it adds no dependency.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tracevals.collector.auth import bearer_matches
from tracevals.collector.config import ReceiverSettings
from tracevals.collector.http_body import BodyError, DeadlineReader, Framing, framing, read_body
from tracevals.collector.otlp_decode import (
    LOGS,
    TRACES,
    OTLPDecodeError,
    TooLarge,
    UnsupportedEncoding,
    decode,
    inflate,
)
from tracevals.collector.pipeline import Pipeline, Throttled

_log = logging.getLogger(__name__)
PATHS = {"/v1/traces": ("traces", TRACES), "/v1/logs": ("logs", LOGS)}
PROTOBUF, JSON = "application/x-protobuf", "application/json"
_GRPC_CODE = {400: code_pb2.INVALID_ARGUMENT, 401: code_pb2.UNAUTHENTICATED, 404: code_pb2.NOT_FOUND,
              405: code_pb2.UNIMPLEMENTED, 413: code_pb2.RESOURCE_EXHAUSTED,
              415: code_pb2.INVALID_ARGUMENT, 429: code_pb2.UNAVAILABLE, 501: code_pb2.UNIMPLEMENTED,
              503: code_pb2.UNAVAILABLE}  # fmt: skip
_CHUNK = 256 * 1024  # bytes read at a time while lingering
_LINGER_SECONDS, _LINGER_BYTES = 2.0, 64 * 1024**2  # how long and how much `_linger` reads away at most
_WRITE_TIMEOUT = 30.0  # seconds an answer may take to be sent
# While OTLP/JSON is parsed, bytes held per byte of JSON: the text, its Python objects, the message (measured:
# 200 MiB over the base for 20.7 MiB of JSON; 203 MiB for 18.7 MiB of 45,000 short spans).
_JSON_OVERHEAD = 11
# An answer: status, response message (or None), error text, extra headers.
_Answer = tuple[int, Any, str, dict[str, str]]
_BUSY = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    receiver: OTLPHTTPReceiver
    tls: ssl.SSLContext | None = None

    def process_request(self, request: Any, client_address: Any) -> None:
        # Bound the threads (and so the bodies in memory): a connection past the limit is told to retry.
        if not self.receiver.slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(_BUSY)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # What no handler caught: one line, never socketserver's traceback on stderr (the stack at debug).
        exc = sys.exc_info()[1]
        _log.warning("tracevals collector: otlp http %s: connection dropped: %s: %s", client_address[0],
                     type(exc).__name__, exc)  # fmt: skip
        _log.debug("otlp http %s", client_address, exc_info=True)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            if self.tls is not None:
                # The handshake in this connection's own thread, with a deadline: in the accept loop (as a
                # wrapped listening socket does it) one client that never sends a ClientHello held every other.
                request.settimeout(self.receiver.settings.read_timeout)
                try:
                    request = self.tls.wrap_socket(request, server_side=True)
                except (OSError, ssl.SSLError) as exc:
                    _log.debug("otlp http %s: TLS handshake failed: %s", client_address, exc)
                    with contextlib.suppress(OSError):
                        request.close()
                    return
            super().process_request_thread(request, client_address)
        finally:
            self.receiver.slots.release()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as SDK exporters reuse their connection
    disable_nagle_algorithm = True  # the reply goes out as two writes; don't wait for a delayed ACK
    timeout = 30  # an idle connection frees its slot after this many seconds without a request
    server: _Server
    frame: Framing = Framing(0)
    expects_continue = False
    unread = False  # a body that may still be on its way: read it away before closing (see `finish`)

    def setup(self) -> None:
        super().setup()
        # Every read of a request goes through its deadline (headers, chunk-size lines and body alike).
        self.rfile.close()
        self.reader = DeadlineReader(self.connection, self.server.receiver.settings.read_timeout)
        self.rfile = io.BufferedReader(self.reader, 64 * 1024)

    def handle_one_request(self) -> None:
        self.reader.expect_request(self.timeout)
        self.expects_continue = self.unread = False
        try:
            super().handle_one_request()
        except ConnectionError as exc:  # the client went away (a reset between or inside requests): no answer
            _log.debug("otlp http %s: connection closed by the client: %s", self.client_address, exc)
            self.close_connection = True

    def handle_expect_100(self) -> bool:
        # `100 Continue` only once the headers are accepted (`OTLPHTTPReceiver._export`): a refused request's
        # client then never sends its body.
        self.expects_continue = True
        return True

    def do_POST(self) -> None:
        self.unread = True
        try:
            self.server.receiver.handle(self)
        except (TimeoutError, ConnectionError):
            self.close_connection = True
            self.unread = False  # too slow or gone: nothing to wait for

    def finish(self) -> None:
        if self.close_connection and self.unread:
            _linger(self)
        super().finish()

    def _not_allowed(self) -> None:
        path = urlsplit(self.path).path
        self.close_connection = True
        if path in PATHS:
            reply(self, 405, PROTOBUF, error=f"use POST on {path}", headers={"Allow": "POST"})
        else:
            reply(self, 404, PROTOBUF, error=f"no such endpoint {path}; use /v1/traces or /v1/logs")

    do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = _not_allowed

    _date: tuple[int, str] = (0, "")

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The Date header, formatted once a second (the standard library formats it for every reply)."""
        if timestamp is not None:
            return super().date_time_string(timestamp)
        now = int(time.time())
        cached = _Handler._date
        if cached[0] != now:
            cached = _Handler._date = (now, super().date_time_string(now))
        return cached[1]

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("otlp http %s: " + format, self.address_string(), *args)


def _linger(h: _Handler) -> None:
    """Close a connection whose request body may still be arriving, so that the client reads the answer: a
    socket closed with unread bytes sends a reset, and a client still writing its body then loses the
    answer (and may not retry). Stop writing, read away what comes for a moment, then close."""
    with contextlib.suppress(OSError, TimeoutError):
        h.wfile.flush()
        h.connection.shutdown(socket.SHUT_WR)
        h.reader.deadline = time.monotonic() + _LINGER_SECONDS
        drained = 0
        while drained < _LINGER_BYTES:
            piece = h.rfile.read1(_CHUNK)
            if not piece:
                break
            drained += len(piece)


def reply(
    handler: BaseHTTPRequestHandler,
    status: int,
    content_type: str,
    body: Any = None,
    error: str = "",
    headers: dict[str, str] | None = None,
) -> None:
    """Send `body` (a response message) or, for an error, a google.rpc.Status, in `content_type`."""
    message = body if not error else status_pb2.Status(code=_GRPC_CODE.get(status, code_pb2.UNKNOWN), message=error)
    if content_type == JSON:
        data = json_format.MessageToJson(message, indent=None).encode()
    else:
        data = message.SerializeToString()
    handler.connection.settimeout(_WRITE_TIMEOUT)  # the read deadline may have left little time
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    if handler.close_connection:
        handler.send_header("Connection", "close")
    handler.end_headers()
    handler.wfile.write(data)


class OTLPHTTPReceiver:
    """Serves OTLP/HTTP on `settings.host:port` in a background thread until `stop()`."""

    def __init__(self, settings: ReceiverSettings, pipeline: Pipeline, signals: frozenset[str]) -> None:
        self.settings = settings
        self.pipeline = pipeline
        self.signals = signals
        self.slots = threading.BoundedSemaphore(settings.max_concurrent)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def start(self) -> None:
        server = _Server((self.settings.host, self.settings.port), _Handler, bind_and_activate=True)
        server.receiver = self
        tls = self.settings.tls
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(tls.cert_file, tls.key_file)
            if tls.client_ca_file is not None:
                context.load_verify_locations(tls.client_ca_file)
                context.verify_mode = ssl.CERT_REQUIRED
            server.tls = context
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="tracevals-otlp-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def handle(self, h: _Handler) -> None:
        """Answer one request; every status but 200 says why (`reply`)."""
        media = (h.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        ctype = JSON if media == JSON else PROTOBUF
        try:
            refusal = self._refusal(h, media)
            if refusal is not None:
                h.close_connection = True  # the body is not read: the connection cannot be reused
                status, message, headers = refusal
                return reply(h, status, ctype, error=message, headers=headers)
            status, message, error, headers = self._export(h, ctype, PATHS[urlsplit(h.path).path][1])
            return reply(h, status, ctype, body=message, error=error, headers=headers)
        except (TimeoutError, ConnectionError):
            raise  # the client is too slow or gone: the connection is closed without an answer
        except Exception:  # a fault of ours: never a status the exporter would not retry
            _log.exception("otlp http: failed to handle a request (answered 503)")
            h.close_connection = True
            return reply(h, 503, ctype, error="internal error; retry later", headers=self._retry_after())

    def _refusal(self, h: _Handler, media: str) -> tuple[int, str, dict[str, str]] | None:
        """What the headers alone refuse (before any of the body is read), or None."""
        path = urlsplit(h.path).path
        route = PATHS.get(path)
        if route is None or route[0] not in self.signals:
            what = f"no {route[0]} pipeline is configured" if route else "use /v1/traces or /v1/logs"
            return 404, f"no such endpoint {path}: {what}", {}
        token = self.settings.bearer_token
        if token is not None and not bearer_matches(h.headers.get("Authorization") or "", token):
            return 401, "missing or wrong bearer token", {"WWW-Authenticate": 'Bearer realm="otlp"'}
        if media not in (JSON, PROTOBUF):
            return 415, f"Content-Type {media!r} is not supported; use {PROTOBUF} or {JSON}", {}
        try:
            h.frame = framing(h.headers)
            if h.frame.length is not None and h.frame.length > self.settings.max_request_bytes:
                raise BodyError(413, f"body of {h.frame.length} bytes passes the {self.settings.max_request_bytes}"
                                     "-byte limit")  # fmt: skip
        except BodyError as exc:
            return exc.status, str(exc), {}
        return None

    def _retry_after(self) -> dict[str, str]:
        return {"Retry-After": str(max(1, math.ceil(self.pipeline.admission.retry_after)))}

    def _export(self, h: _Handler, ctype: str, kind: int) -> _Answer:
        """Read, decode and durably submit the body, charged to the queue as it is held; the answer to send
        (once nothing is held any more)."""
        reserved = 0
        admission = self.pipeline.admission

        def charge(nbytes: int) -> None:
            nonlocal reserved
            admission.admit(nbytes, reserved)
            reserved += nbytes

        limit = self.settings.max_request_bytes
        frame = h.frame
        h.close_connection = h.close_connection or frame.close
        try:
            if h.expects_continue:  # the headers passed: now the client may send its body
                h.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            try:
                body = read_body(h.rfile, frame, limit, charge)
            except BodyError as exc:
                h.close_connection = True  # the rest of the body is not read
                return exc.status, None, str(exc), {}
            try:
                data = body
                for coding in (*reversed(frame.codings), h.headers.get("Content-Encoding") or ""):
                    # Charged as it is inflated: a gzip body holds many times its length once decompressed.
                    data = inflate(data, coding, limit, charge)
                del body
                cost = len(data) * _JSON_OVERHEAD if ctype == JSON else 0
                with admission.large(cost, reserved, self.settings.read_timeout) as large:
                    # Parsing JSON holds the text, its objects and the protobuf message at once. A parse that
                    # would take a good part of the queue waits for its turn (one at a time) instead: charged
                    # like the rest, it could never fit beside other requests, and would be refused for ever.
                    if large:
                        reserved = admission.resize(reserved, reserved + cost)
                    elif cost:
                        charge(cost)
                    decoded = decode(kind, data, ctype == JSON)
            except TooLarge as exc:
                return 413, None, str(exc), {}
            except UnsupportedEncoding as exc:
                return 415, None, str(exc), {}
            except OTLPDecodeError as exc:
                return 400, None, str(exc), {}
            del data
            # From here on the decoded size is what is held.
            reserved = admission.resize(reserved, len(decoded.payload))
            try:
                self.pipeline.submit(decoded.kind, decoded.payload, reserved, decoded.accepted)
            except OSError:  # the write-ahead log cannot store it (disk full ...): nothing is acknowledged
                return 503, None, "cannot store data now; retry later", self._retry_after()
            reserved = 0  # the pipeline releases it once the rows are written
        except Throttled as exc:
            h.close_connection = True  # the rest of the body may not be read: the connection cannot be reused
            wait = str(max(1, math.ceil(exc.retry_after)))
            return 503, None, f"{exc}; retry later", {"Retry-After": wait}
        finally:
            if reserved:
                admission.release(reserved)
        return 200, _response(decoded), "", {}


def _response(decoded: Any) -> Any:
    if decoded.kind == TRACES:
        response = ExportTraceServiceResponse()
        if decoded.rejected:
            response.partial_success.rejected_spans = decoded.rejected
            response.partial_success.error_message = decoded.error
        return response
    logs = ExportLogsServiceResponse()
    if decoded.rejected:
        logs.partial_success.rejected_log_records = decoded.rejected
        logs.partial_success.error_message = decoded.error
    return logs
