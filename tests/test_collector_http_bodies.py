"""How the OTLP/HTTP receiver reads a request's body, on minimal requests over raw sockets and real
clients (curl, requests, http.client): chunked bodies (JSON, protobuf, gzip) land like sized ones, on one
kept-alive connection; a chunked body is charged as it arrives and refused at the size limit with an answer
the client reads; framing it cannot read for sure is a 4xx naming why; a client trickling its body is cut
off at `read_timeout` without holding the queue; a fault of the collector's own is a 503 the exporter
retries, never a status on which it drops the data."""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import requests
from fixtures.faults import until
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracevals.collector import otlp_http
from tracevals.collector.service import Collector
from tracevals.collector.testing import running_collector

PROTOBUF, JSON = "application/x-protobuf", "application/json"


def request(names: list[str], as_json: bool = False) -> bytes:
    """An OTLP trace request with one span per name (ids from the name), as protobuf or OTLP/JSON."""
    message = ExportTraceServiceRequest()
    scope = message.resource_spans.add().scope_spans.add()
    for name in names:
        digest = hashlib.sha256(name.encode()).digest()
        scope.spans.add(name=name, trace_id=digest[:16], span_id=digest[16:24])
    if not as_json:
        return message.SerializeToString()
    spans = [
        {"traceId": s.trace_id.hex(), "spanId": s.span_id.hex(), "name": s.name}
        for s in message.resource_spans[0].scope_spans[0].spans
    ]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def chunked(body: bytes, size: int = 7, extension: bytes = b"", trailer: bytes = b"") -> bytes:
    """`body` in the chunked transfer coding, in chunks of `size` bytes."""
    out = b"".join(b"%x%s\r\n%s\r\n" % (len(body[i : i + size]), extension, body[i : i + size]) for i in
                   range(0, len(body), size))  # fmt: skip
    return out + b"0\r\n" + trailer + b"\r\n"


def raw(port: int, head: str, body: bytes = b"", read: bool = True) -> tuple[int, dict[str, str], bytes]:
    """Send `head` (request line and headers, without the blank line) and `body` as given; the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n\r\n" + body)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


def head(ctype: str = PROTOBUF, **headers: str) -> str:
    lines = ["POST /v1/traces HTTP/1.1", "Host: x", f"Content-Type: {ctype}"]
    return "\n".join(lines + [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()])


def landed(collector: Collector, *names: str) -> list[str]:
    """Which of these span names are in the lake once everything received is written (once each, in order)."""
    assert collector.pipeline.flush()
    lake = collector.config.exporter.lake.root
    rows = duckdb.execute(
        f"SELECT name FROM read_parquet('{lake}/spans/**/*.parquet') WHERE list_contains(?, name) ORDER BY name",
        [list(names)],
    ).fetchall()
    return [name for (name,) in rows]


def error_message(body: bytes, ctype: str = PROTOBUF) -> str:
    if ctype == JSON:
        return str(json.loads(body)["message"])
    return status_pb2.Status.FromString(body).message


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    """One collector for the module (each test sends spans of its own names)."""
    limits = {"receivers": {"otlp": {"protocols": {"http": {"max_request_body_size": "64KiB", "read_timeout": "3s"}}}}}
    with running_collector(tmp_path_factory.mktemp("bodies") / "lake", limits) as c:
        yield c


@pytest.mark.parametrize(
    ("what", "ctype", "encoding"),
    [("json", JSON, ""), ("protobuf", PROTOBUF, ""), ("json-gzip", JSON, "gzip"), ("protobuf-gzip", PROTOBUF, "gzip")],
)
def test_a_chunked_body_lands_like_a_sized_one(collector: Collector, what: str, ctype: str, encoding: str) -> None:
    """It was a 411 Length Required, which OTLP exporters do not retry: Node's lost every span."""
    body = request([f"{what} a", f"{what} b"], as_json=ctype == JSON)
    body = gzip.compress(body) if encoding else body
    extra = {"Content_Encoding": encoding} if encoding else {}
    # small chunks, a chunk extension and a trailer field: all of them framing, none of them data
    framed = chunked(body, 5, extension=b";note=x", trailer=b"X-Checksum: 1\r\n")
    status, headers, answer = raw(collector.http_port or 0, head(ctype, Transfer_Encoding="chunked", **extra), framed)
    assert (status, headers["content-type"]) == (200, ctype), answer
    assert landed(collector, f"{what} a", f"{what} b") == [f"{what} a", f"{what} b"]


def test_one_kept_alive_connection_carries_chunked_sized_and_empty_bodies(collector: Collector) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=10)
    bodies = [
        (iter([request(["k1"])]), {}),  # an iterable body: http.client sends it chunked
        (request(["k2"], as_json=True), {}),  # a bytes body: sized
        (iter([gzip.compress(request(["k3"]))[:9], gzip.compress(request(["k3"]))[9:]]), {"Content-Encoding": "gzip"}),
        (b"", {}),  # Content-Length: 0, an empty (valid) protobuf request
        (iter([request(["k4"])]), {}),
    ]
    sockets = set()
    for body, headers in bodies:
        ctype = JSON if isinstance(body, bytes) and body.startswith(b"{") else PROTOBUF
        conn.request(
            "POST", "/v1/traces", body, {"Content-Type": ctype, **headers}, encode_chunked=not isinstance(body, bytes)
        )
        response = conn.getresponse()
        assert (response.status, response.getheader("Connection")) == (200, None), response.read()
        response.read()
        sockets.add(id(conn.sock))
    assert len(sockets) == 1  # never closed in between
    conn.close()
    assert landed(collector, "k1", "k2", "k3", "k4") == ["k1", "k2", "k3", "k4"]


def test_a_request_without_length_or_chunks_has_an_empty_body(collector: Collector) -> None:
    """RFC 9112 6.3: neither header means no body (it was a 411)."""
    status, _, answer = raw(collector.http_port or 0, head())
    assert status == 200, answer
    status, _, answer = raw(collector.http_port or 0, head(JSON))
    assert (status, "not JSON" in error_message(answer, JSON)) == (400, True)


def test_a_chunked_body_past_the_limit_is_413_read_by_the_client_and_holds_nothing(collector: Collector) -> None:
    """The chunks are counted as they arrive; at the 64 KiB limit the answer is a 413 (no exporter retries a
    body that cannot fit), sent while the client still writes: it reads the 413, not a reset."""
    big = request([f"span {i:05d} " + "x" * 200 for i in range(2000)])  # ~460 KiB
    assert len(big) > 4 * 64 * 1024
    response, answer = post_chunked(collector.http_port or 0, big, 4096)
    assert (response.status, response.getheader("Connection")) == (413, "close")
    assert "passes the 65536-byte limit" in error_message(answer)
    assert collector.pipeline.admission.reserved == 0  # nothing left charged to the queue
    assert raw(collector.http_port or 0, head(Transfer_Encoding="chunked"), chunked(request(["after"])))[0] == 200
    assert landed(collector, "after") == ["after"]


@pytest.mark.parametrize(
    ("headers", "body", "status", "message"),
    [
        ({"Transfer_Encoding": "chunked"}, b"zz\r\nabc\r\n0\r\n\r\n", 400, "bad chunk size line"),
        ({"Transfer_Encoding": "chunked"}, b"-1\r\nabc\r\n0\r\n\r\n", 400, "bad chunk size line"),
        ({"Transfer_Encoding": "chunked"}, b"2\r\nabc\r\n0\r\n\r\n", 400, "longer than its size line"),
        ({"Transfer_Encoding": "chunked"}, b"1" * 5000 + b"\r\n", 400, "line passes 4096 bytes"),
        ({"Transfer_Encoding": "chunked"}, b"ffffffffffffffffff\r\n", 400, "bad chunk size line"),
        ({"Transfer_Encoding": "gzip"}, b"", 400, "does not end in chunked"),
        ({"Transfer_Encoding": "br, chunked"}, b"0\r\n\r\n", 501, "'br' is not supported"),
        ({"Content_Length": "1_0"}, b"0123456789", 400, "is not a number of bytes"),
        ({"Content_Length": "+10"}, b"0123456789", 400, "is not a number of bytes"),
        ({"Content_Length": "10, 12"}, b"0123456789", 400, "is not a number of bytes"),
        ({"Content_Length": str(10**6)}, b"", 413, "passes the 65536-byte limit"),
    ],
)
def test_framing_that_cannot_be_read_for_sure_is_refused_naming_why(
    collector: Collector, headers: dict[str, str], body: bytes, status: int, message: str
) -> None:
    got, reply_headers, answer = raw(collector.http_port or 0, head(**headers), body)
    assert (got, reply_headers.get("connection")) == (status, "close")
    assert message in error_message(answer)
    assert collector.pipeline.admission.reserved == 0


def test_gzip_as_a_transfer_coding_and_both_framings_are_read_by_the_chunks(collector: Collector) -> None:
    port = collector.http_port or 0
    body = chunked(gzip.compress(request(["te-gzip"])))
    assert raw(port, head(Transfer_Encoding="gzip, chunked"), body)[0] == 200
    # both: the chunks decide (RFC 9112 6.1), and the connection is closed after the answer
    status, headers, _ = raw(port, head(Transfer_Encoding="chunked", Content_Length="3"), chunked(request(["both"])))
    assert (status, headers.get("connection")) == (200, "close")
    assert landed(collector, "both", "te-gzip") == ["both", "te-gzip"]


def test_expect_100_continue_comes_only_once_the_headers_pass(collector: Collector) -> None:
    """A refused request gets its final answer at once, so its client never sends the body."""
    port = collector.http_port or 0
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall((head(Content_Length=str(10**6), Expect="100-continue") + "\n\n").replace("\n", "\r\n").encode())
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.status == 413
    body = request(["continued"])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            (head(Content_Length=str(len(body)), Expect="100-continue") + "\n\n").replace("\n", "\r\n").encode()
        )
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.status == 200


def test_strangers_senders_curl_and_requests_with_chunked_bodies(collector: Collector, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    file = tmp_path / "body.json"
    file.write_bytes(request(["curl"], as_json=True))
    # curl sends `Expect: 100-continue` with a chunked upload, then the body
    curl = subprocess.run(
        ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "-H", "Content-Type: application/json",
         "-H", "Transfer-Encoding: chunked", "--data-binary", f"@{file}", url],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert curl.stdout.splitlines()[-1] == "200", curl.stdout + curl.stderr
    body = request(["requests"])
    answer = requests.post(url, data=(body[i : i + 3] for i in range(0, len(body), 3)),
                           headers={"Content-Type": PROTOBUF}, timeout=10)  # fmt: skip
    assert (answer.status_code, answer.request.headers.get("Transfer-Encoding")) == (200, "chunked")
    assert landed(collector, "curl", "requests") == ["curl", "requests"]


@pytest.mark.parametrize("part", ["chunked body", "headers"])
def test_a_slow_loris_is_cut_off_and_never_holds_the_queue(collector: Collector, part: str) -> None:
    """One byte a second (here every 0.2 s) of a chunked body, chunk-size lines included, or of the headers:
    the connection is closed at `read_timeout` (3 s) from the request's first byte, having charged no more
    than it sent, while other clients are served; nothing of it is left charged. (Headers used to get a
    fresh 30 s for every byte.)"""
    port = collector.http_port or 0
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    start = (head(Transfer_Encoding="chunked") + "\n\n").replace("\n", "\r\n").encode()
    trickle = b"0000000" + b"100\r\n" + b"z" * 256 + b"\r\n0\r\n\r\n"  # a padded size line, then the data
    if part == "headers":
        start, trickle = b"", start + trickle
    sock.sendall(start)
    sent, closed, held, served = 0, False, [], []
    started = time.monotonic()
    for byte in trickle:
        try:
            sock.sendall(bytes([byte]))
        except OSError:  # reset: the server closed it
            closed = True
            break
        sent += 1
        if sent == 3:  # another client, meanwhile, is served and its rows written
            served.append(raw(port, head(Transfer_Encoding="chunked"), chunked(request([f"other {part}"])))[0])
            assert collector.pipeline.flush()
        held.append(collector.pipeline.admission.reserved)
        sock.settimeout(0.2)
        try:
            if sock.recv(1) == b"":
                closed = True
                break
        except TimeoutError:
            pass
        except OSError:
            closed = True
            break
    elapsed = time.monotonic() - started
    sock.close()
    assert closed and sent < len(trickle), f"{sent} bytes sent in {elapsed:.1f} s, never cut off"
    assert served == [200]
    assert max(held) <= sent
    assert collector.pipeline.admission.reserved == 0
    assert landed(collector, f"other {part}") == [f"other {part}"]


def test_a_fault_of_the_collectors_own_is_a_503_the_exporter_retries(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unexpected exception used to end the connection with no answer or, as a 5xx, be a status OTLP
    exporters do not retry; a fault of ours is not the data's, so the data is asked again."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(otlp_http, "decode", broken)
    for body, headers in ((request(["x"]), {}), (chunked(request(["y"])), {"Transfer_Encoding": "chunked"})):
        if not headers:
            headers = {"Content_Length": str(len(body))}
        status, reply_headers, answer = raw(collector.http_port or 0, head(**headers), body)
        assert (status, reply_headers["retry-after"]) == (503, "1")
        assert "retry later" in error_message(answer)
    assert collector.pipeline.admission.reserved == 0


def test_a_chunked_body_past_a_full_queue_is_a_503_with_retry_after(tmp_path: Path) -> None:
    """The queue counts chunks as they arrive: while another body holds most of it, a chunked request is
    refused with 503 + Retry-After (which exporters retry), read by a client still writing; later it fits."""
    limits = {"exporters": {"parquet": {"sending_queue": {"queue_size": "4KiB"}}}}
    with running_collector(tmp_path / "lake", limits) as collector:
        port = collector.http_port or 0
        with socket.create_connection(("127.0.0.1", port), timeout=10) as holder:
            holder.sendall((head(Transfer_Encoding="chunked") + "\n\n").replace("\n", "\r\n").encode())
            holder.sendall(b"2000\r\n" + b"h" * 3000)  # 3,000 of a chunk of 8,192 bytes, then nothing
            assert until(lambda: collector.pipeline.admission.reserved == 3000, 10, 0.02)
            body = request([f"queued {i:04d}" for i in range(100)])  # ~5 KiB
            response, answer = post_chunked(port, body, 512)
            assert (response.status, response.getheader("Retry-After")) == (503, "1")
            assert "sending queue is full" in error_message(answer)
        assert until(lambda: collector.pipeline.admission.reserved == 0, 10, 0.02)  # the holder went away: nothing held
        assert raw(port, head(Transfer_Encoding="chunked"), chunked(body, 512))[0] == 200


def post_chunked(port: int, body: bytes, size: int) -> tuple[http.client.HTTPResponse, bytes]:
    """`body` POSTed to /v1/traces as the http client sends a stream: chunked, `size` bytes a chunk; the
    response and its body, read while the connection is still open."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        pieces = (body[i : i + size] for i in range(0, len(body), size))
        conn.request("POST", "/v1/traces", pieces, {"Content-Type": PROTOBUF}, encode_chunked=True)
        response = conn.getresponse()
        return response, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("cut", ["POST /v1/tra", "POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Ty"])
def test_a_client_that_resets_mid_request_leaves_no_traceback(
    collector: Collector, capfd: pytest.CaptureFixture[str], cut: str
) -> None:
    """A connection reset by the client inside its request line or headers (an exporter killed, a proxy that
    gave up) is the client's business: no traceback on the collector's stderr, and the next request is served."""
    import struct

    sock = socket.create_connection(("127.0.0.1", collector.http_port), timeout=10)
    sock.sendall(cut.encode())
    time.sleep(0.2)  # the collector is waiting inside the line for the rest
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
    sock.close()
    time.sleep(0.2)
    status, _, _ = raw(collector.http_port, head(**{"Content-Length": str(len(request(["after-reset"])))}),
                       request(["after-reset"]))  # fmt: skip
    assert status == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ConnectionResetError" not in err, err


def _snappy_framed(data: bytes) -> bytes:
    """`data` in snappy's framing format (what github.com/golang/snappy's writer sends): the stream identifier,
    then one compressed chunk (its checksum field zero: the receiver does not check it) and one plain chunk."""
    import pyarrow as pa

    half = len(data) // 2
    block = pa.compress(data[:half], codec="snappy", asbytes=True)
    chunks = [(0x00, block), (0xFE, b"\0" * 3), (0x01, data[half:])]  # compressed, padding, uncompressed
    out = b"\xff\x06\x00\x00sNaPpY"
    for kind, payload in chunks:
        payload = payload if kind == 0xFE else b"\0\0\0\0" + payload
        out += bytes([kind]) + len(payload).to_bytes(3, "little") + payload
    return out


def test_the_collectors_other_compressions_are_read(collector: Collector) -> None:
    """The OpenTelemetry Collector's HTTP exporter offers zstd, lz4 and snappy besides gzip (`compression: zstd`
    in a gateway forwarding to tracevals): each was a 415 ("use gzip or none"), which the exporter does not
    retry, every batch dropped. Each is read now, as the Collector's own receiver reads it, to the same limit."""
    import pyarrow as pa

    port = collector.http_port or 0
    bodies = {
        "zstd": pa.compress(request(["zstd"]), codec="zstd", asbytes=True),
        "lz4": pa.compress(request(["lz4"]), codec="lz4", asbytes=True),
        "snappy": _snappy_framed(request(["snappy"])),
        "SNAPPY": pa.compress(request(["snappy-block"]), codec="snappy", asbytes=True),  # one raw block
        "x-snappy-framed": _snappy_framed(request(["x-snappy-framed"])),
    }
    for coding, body in bodies.items():
        status, _, answer = raw(port, head(Content_Encoding=coding, Content_Length=str(len(body))), body)
        assert status == 200, (coding, answer)
    names = ["lz4", "snappy", "snappy-block", "x-snappy-framed", "zstd"]
    assert landed(collector, *names) == names
    bomb = pa.compress(b"\0" * (64 * 1024 + 1), codec="zstd", asbytes=True)  # past the module collector's limit
    status, _, answer = raw(port, head(Content_Encoding="zstd", Content_Length=str(len(bomb))), bomb)
    assert status == 413 and b"limit" in answer
    broken = bodies["zstd"][:-3]
    status, _, answer = raw(port, head(Content_Encoding="zstd", Content_Length=str(len(broken))), broken)
    assert status == 400 and b"not valid zstd" in answer
    status, _, answer = raw(port, head(Content_Encoding="br", Content_Length="3"), b"abc")
    assert status == 415 and b"use gzip, zstd, lz4, snappy, deflate or none" in answer
