"""`tracevals ui` without a browser: the guard (token, Host, GET only, headers) against the real server, the
SQL page's sandbox (the one of `tracevals sql`), every query's time limit and row cap, the reopen when
files land, and span values as inert text. The browser walk is tests/test_ui_browser.py."""

from __future__ import annotations

import http.client
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import duckdb
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from fixtures.faults import stop_with
from fixtures.lake_rows import span_row
from fixtures.otlp_lakes import DIALECTS, ingest_fixture
from fixtures.s3 import S3, s3  # noqa: F401  (the fixture)
from fixtures.ui_server import Served, serve

from tracevals import env
from tracevals.cli import main
from tracevals.lake.lake import Lake
from tracevals.lake.redaction import Redactor
from tracevals.lake.writer import LakeWriter
from tracevals.ui.reader import LakeReader, QueryLimit
from tracevals.ui.text import inert

TRACE = "ab" * 16


def _spans(trace: str, run: str | None = None) -> list[dict[str, object]]:
    root = span_row(trace, "1" * 16, None, "agent", 0, 50, run_id=run, task_id="t1" if run else None,
                    attempt=1 if run else None, variant="v" if run else None, service_name="svc")  # fmt: skip
    tool = span_row(trace, "2" * 16, "1" * 16, "tool", 10, 5, tool_name="get_orders", tool_args='{"id": 1}')
    return [root, tool]


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lake = tmp_path_factory.mktemp("ui-small") / "lake"
    LakeWriter(lake).write_rows(_spans(TRACE))
    return lake


@pytest.fixture(scope="module")
def served(small_lake: Path) -> Iterator[Served]:
    with serve(small_lake, "--row-cap", "3") as s:
        yield s


def _get(s: Served, path: str, *, host: str | None = None, cookie: str | None = None, method: str = "GET"):
    con = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    headers = {"Host": host if host is not None else f"127.0.0.1:{s.port}"}
    if cookie:
        headers["Cookie"] = cookie
    con.request(method, path, headers=headers)
    response = con.getresponse()
    body = response.read()
    con.close()
    return response, body


def _cookie(s: Served) -> str:
    response, _ = _get(s, f"/?token={s.token}")
    assert response.status == 303 and response.getheader("location") == "/"
    cookie = response.getheader("set-cookie") or ""
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    return cookie.split(";")[0]


def test_a_request_without_the_token_is_refused(served: Served) -> None:
    for path in ("/", "/sql?q=select+1", "/static/htmx.min.js", "/traces/" + TRACE):
        response, body = _get(served, path)
        assert response.status == 403, path
        assert b"no token" in body
    response, _ = _get(served, "/?token=not-the-token")
    assert response.status == 403
    response, body = _get(served, "/", cookie=f"tracevals_ui_{served.port}=guessed")
    assert response.status == 403


def test_a_foreign_host_and_a_post_are_refused(served: Served) -> None:
    cookie = _cookie(served)
    for host in ("evil.example:80", f"evil.example:{served.port}", "127.0.0.1:1", ""):
        response, body = _get(served, "/", host=host, cookie=cookie)
        assert response.status == 403 and b"Host" in body, host
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        response, body = _get(served, "/", cookie=cookie, method=method)
        assert response.status == 405 and b"read-only" in body, method
    # with the token, through a name the machine gives 127.0.0.1 itself, it answers
    response, _ = _get(served, "/", host=f"localhost:{served.port}", cookie=cookie)
    assert response.status == 200


def test_every_answer_carries_a_strict_policy(served: Served) -> None:
    cookie = _cookie(served)
    for path in ("/", "/static/ui.css", "/no/such/page"):
        response, _ = _get(served, path, cookie=cookie)
        csp = response.getheader("content-security-policy") or ""
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "'unsafe" not in csp, path
        assert response.getheader("x-content-type-options") == "nosniff"
        assert response.getheader("x-frame-options") == "DENY"
    response, body = _get(served, "/no/such/page", cookie=cookie)
    assert response.status == 404 and b"Not found" in body
    # an id no trace can have is not found either (it was a page saying so, with 200), its text escaped
    for bad in ("zz", "%3Cscript%3Ealert(1)", "a" * 65):
        response, body = _get(served, "/traces/" + bad, cookie=cookie)
        assert response.status == 404 and b"a trace id is hex digits" in body and b"<script>" not in body, bad


def test_the_sql_page_is_the_sql_commands_sandbox(served: Served, small_lake: Path) -> None:
    cookie = _cookie(served)
    refused = {
        f"copy (select 1) to '{small_lake}/x.csv'": "only SELECT queries may run over a lake",
        "attach 'x.db' as x": "only SELECT queries may run over a lake",
        "select * from read_csv('/etc/passwd')": "query failed",
    }
    for query, message in refused.items():
        response, body = _get(served, f"/sql?q={quote(query)}", cookie=cookie)
        assert response.status == 200
        assert message in body.decode(), query
        cli = CliRunner().invoke(main, ["sql", "--lake", str(small_lake), query])
        assert cli.exit_code == 1 and message in cli.output  # the same check said the same thing
    assert not (small_lake / "x.csv").exists()
    # the row cap (3 here): the page says more were left unread, the downloads hold 3 rows
    query = "select * from range(10) as r(n)"
    response, body = _get(served, f"/sql?q={quote(query)}", cookie=cookie)
    assert "3 rows (more left unread" in body.decode()
    response, body = _get(served, f"/sql.csv?q={quote(query)}", cookie=cookie)
    assert response.status == 200 and body.decode().splitlines() == ["n", "0", "1", "2"]
    assert "attachment" in (response.getheader("content-disposition") or "")
    response, body = _get(served, f"/sql.parquet?q={quote(query)}", cookie=cookie)
    assert pq.read_table(io.BytesIO(body)).column("n").to_pylist() == [0, 1, 2]
    response, body = _get(served, f"/sql.csv?q={quote('copy (select 1) to ' + repr('/tmp/x'))}", cookie=cookie)
    assert response.status == 400 and b"only SELECT" in body


def test_every_query_has_a_time_limit_and_a_row_cap(small_lake: Path) -> None:
    reader = LakeReader(Lake.open(small_lake), query_seconds=0.5, row_cap=5, poll_seconds=3600)
    reader.start()
    try:
        assert reader.rows("select 1 as one", seconds=120).table.num_rows == 1  # opened (in the background)
        with pytest.raises(QueryLimit, match=r"time limit of 0\.5 s"):
            reader.rows("select count(*) from range(1000000000000) a, range(1000) b")
        rows = reader.rows("select * from range(1000000)")  # read batch by batch: not a million rows
        assert rows.table.num_rows == 5 and rows.truncated
        assert reader.rows("select 1 as one").table.to_pylist() == [{"one": 1}]  # usable after the interrupt
    finally:
        reader.close()


def test_the_sql_page_computes_what_tracevals_sql_computes_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SQL page's connection is kept until the lake changes (a small lake's snapshot serves every query); on a
    lake larger than a snapshot it is read live, and what `tracevals sql` computes once at open for a query is
    computed once around it (`query_views_computed`), then dropped: read live, a `sessions` query planned
    `span_facts` at each of the 19 places beneath it (on the 10^6-span bench lake the page's 10 s limit stopped
    `select terminal_state, count(*) from sessions group by 1`). The rows are the command's; the computing counts
    in the time limit."""
    lake = tmp_path / "lake"
    for dialect in DIALECTS[:4]:
        ingest_fixture(lake, dialect)
    monkeypatch.setenv(env.SNAPSHOT_MB, "0")  # a lake larger than a snapshot
    reader = LakeReader(Lake.open(lake), poll_seconds=3600)
    reader.start()
    try:
        query = "select session_id, turn_count, tool_call_count, terminal_state from sessions order by 1"

        def computed(con: duckdb.DuckDBPyConnection) -> set[str]:
            rows = con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
            return {r[0] for r in rows if r[0].startswith("tv_q_")}

        with reader.connection(120, user_sql=True, query=query) as con:
            assert computed(con) == {"tv_q_span_facts", "tv_q_attempts"}  # not the lake's rows (`spans`)
        page = reader.rows(query, seconds=120, user_sql=True).table.to_pylist()
        cli = CliRunner().invoke(main, ["sql", "--lake", str(lake), "--format", "json", query])
        assert cli.exit_code == 0 and page == json.loads(cli.output) and len(page) >= 4
        with reader.connection(120, user_sql=True, query="select count(*) from spans") as con:
            assert computed(con) == set()  # dropped after each query; `spans` reads nothing twice
        with pytest.raises(QueryLimit, match=r"time limit of 0\.01 s"):
            reader.rows(query, seconds=0.01, user_sql=True)
        assert reader.rows(query, seconds=120, user_sql=True).table.to_pylist() == page  # usable after
    finally:
        reader.close()


def test_the_connection_reopens_when_files_land(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    LakeWriter(lake).write_rows(_spans(TRACE))
    seen: list[int] = []
    reader = LakeReader(Lake.open(lake), poll_seconds=3600, on_reopen=seen.append)
    reader.start()
    try:
        count = "select count(*) as n from spans"
        assert reader.rows(count).table.to_pylist() == [{"n": 2}]
        assert reader.refresh() is False  # nothing landed: no reopen
        LakeWriter(lake).write_rows(_spans("cd" * 16, run="r1"))
        assert reader.refresh() is True and seen == [2] and reader.generation == 2
        assert reader.rows(count).table.to_pylist() == [{"n": 4}]
    finally:
        reader.close()


def test_span_values_are_inert_text() -> None:
    html = str(inert('<script>alert("x")</script><a href="javascript:alert(1)">x</a>'))
    assert "<script" not in html and "<a " not in html
    assert "&lt;script&gt;" in html and "javascript:alert(1)" in html  # shown, as text
    rtl = str(inert("refund \u202eredro\u202c done\u200b\ufeff"))
    assert "\u202e" not in rtl and "\u200b" not in rtl and "\ufeff" not in rtl
    assert "U+202E" in rtl and "U+200B" in rtl and "U+FEFF" in rtl
    assert rtl.startswith("<bdi>")  # the value's direction isolated from the page's
    big = str(inert("x" * 1_000_000))
    assert len(big) < 3_000 and "998,000 more characters not shown" in big
    secret = Redactor().redact('{"api_key": "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"}')
    marked = str(inert(secret))
    assert "sk-proj" not in marked and '<mark class="redacted"' in marked  # the redactor's own marker


def test_a_bad_lake_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["ui", "--lake", str(tmp_path / "nothing-here")])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert json.dumps(result.output)  # one printable line


def test_an_object_storage_lake(s3: S3) -> None:  # noqa: F811  (the fixture)
    lake = s3.lake("ui-lake")
    LakeWriter(lake).write_rows(_spans(TRACE, run="r1"))
    with serve(lake) as served:
        cookie = _cookie(served)
        deadline = time.monotonic() + 180
        response, body = _get(served, f"/traces/{TRACE}", cookie=cookie)
        while b"still opening" in body and time.monotonic() < deadline:  # the lake opens in the background
            response, body = _get(served, f"/traces/{TRACE}", cookie=cookie)
        assert response.status == 200 and b"get_orders" in body and b"call #1" in body
        response, body = _get(served, f"/sql?q={quote('select count(*) as n from spans')}", cookie=cookie)
        assert response.status == 200 and "<td><bdi>2</bdi></td>" in body.decode()
        response, body = _get(served, "/", cookie=cookie)
        assert response.status == 200 and b'data-run="r1"' in body


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGHUP"])
def test_a_stopping_signal_ends_the_ui_in_one_line(small_lake: Path, stop: str) -> None:
    """SIGTERM and SIGHUP (the terminal closed) stop the server gently, as Ctrl-C does: one line, exit 128 + the
    signal. uvicorn takes SIGINT and SIGTERM itself; SIGHUP reached the command line's handler inside
    uvicorn's loop, which printed two tracebacks."""
    import signal
    import subprocess
    import sys

    def dispositions() -> None:  # as a terminal leaves them, whatever started the test run
        signal.signal(signal.Signals[stop], signal.SIG_DFL)

    command = [sys.executable, "-m", "tracevals", "ui", "--lake", str(small_lake), "--port", "0"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=dispositions
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip().removeprefix("tracevals ui: ")
        port = int(url.split(":")[2].split("/")[0])
        for _ in range(600):  # until uvicorn's loop answers: the signal must land inside it
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                connection.request("GET", "/")
                connection.getresponse().read()
                connection.close()
                break
            except OSError:
                time.sleep(0.1)
    except BaseException:
        process.kill()
        process.wait()
        raise
    stop_with(process, stop)


def test_a_trace_thousands_of_spans_deep_is_shown(tmp_path: Path) -> None:
    """A chain of spans, each beneath the last (a recursive agent, a framework that nests every step): the
    trace page walked the tree by recursion, and past Python's recursion limit answered with an error."""
    trace, depth = "cd" * 16, 3000
    rows = [
        span_row(trace, f"{i + 1:016x}", f"{i:016x}" if i else None, "agent", i, depth - i, name=f"step-{i}")
        for i in range(depth)
    ]
    lake = tmp_path / "lake"
    LakeWriter(lake).write_rows(rows)
    with serve(lake) as s:
        response, body = _get(s, f"/traces/{trace}", cookie=_cookie(s))
    assert response.status == 200, body[-300:]
    page = body.decode()
    assert f"step-{depth - 1}<" in page  # the deepest span is on the page
