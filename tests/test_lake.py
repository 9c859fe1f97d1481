"""The embedded lake: tool spans written through the real SDK, read back by DuckDB and the views."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import tracevals
from tracevals.instrumentation.content import set_capture
from tracevals.lake.writer import LakeWriter
from tracevals.queries import LakeError, open_lake
from tracevals.spans.exporters import ParquetSpanExporter


@tracevals.tool(effect="write")
def send_message(customer_id: str, text: str, idempotency_key: str | None = None) -> dict[str, bool]:
    return {"ok": True}


@tracevals.tool(effect="irreversible")
def delete_order(order_id: str) -> dict[str, bool]:
    raise tracevals.ToolError("order is locked", error_type="conflict", status_code=409)


def test_tool_spans_land_in_hive_partitioned_parquet(lake: Path, telemetry: tracevals.Telemetry) -> None:
    with tracevals.session("sess-1"), tracevals.agent("support"):
        send_message(customer_id="cus_001", text="hello", idempotency_key="k1")
        with pytest.raises(tracevals.ToolError):
            delete_order(order_id="ord_1")
    telemetry.force_flush()

    files = list((lake / "spans").rglob("*.parquet"))
    assert files and all(f.parent.name.startswith("hour=") and f.parent.parent.name.startswith("date=") for f in files)
    assert not list(lake.rglob("*.tmp"))
    # duckdb alone reads the files (no tracevals code involved)
    rows = duckdb.sql(
        f"select name, kind, session_id, tool_name, tool_effect, error_type "
        f"from read_parquet('{lake}/spans/**/*.parquet', hive_partitioning = true) order by start_time"
    ).fetchall()
    assert rows == [
        ("invoke_agent support", "agent", "sess-1", None, None, None),
        ("execute_tool send_message", "tool", "sess-1", "send_message", "write", None),
        ("execute_tool delete_order", "tool", "sess-1", "delete_order", "irreversible", "conflict"),
    ]


def test_views_rebuild_tool_calls_in_order(lake: Path, telemetry: tracevals.Telemetry) -> None:
    with tracevals.session("sess-2"), tracevals.agent("support"):
        send_message(customer_id="cus_001", text="a", idempotency_key="k1")
        with pytest.raises(tracevals.ToolError):
            delete_order(order_id="ord_1")
        send_message(customer_id="cus_001", text="b")
    telemetry.force_flush()
    con = open_lake(lake)
    calls = con.execute(
        "select call_index, tool_name, error_type, idempotency_key from tool_calls order by 1"
    ).fetchall()
    assert calls == [
        (1, "send_message", None, "k1"),
        (2, "delete_order", "conflict", None),
        (3, "send_message", None, None),
    ]
    (tools,) = con.execute("select tools from trajectories").fetchone() or (None,)
    assert tools == ["send_message", "delete_order", "send_message"]


def test_duplicate_spans_from_retries_collapse(lake: Path, telemetry: tracevals.Telemetry) -> None:
    with tracevals.session("sess-3"):
        send_message(customer_id="cus_001", text="x")
    telemetry.force_flush()
    # A client retried an export: the same span arrives a second time, in another file.
    (first,) = list((lake / "spans").rglob("*.parquet"))
    table = pq.read_table(first)
    for column in ("start_time", "end_time"):  # nanoseconds as integers, as the writer takes them
        table = table.set_column(table.schema.get_field_index(column), column, table[column].cast("int64"))
    LakeWriter(lake).write_rows(table.to_pylist())
    con = open_lake(lake)
    assert con.execute("select count(*) from raw_spans").fetchone() == (2,)
    assert con.execute("select count(*) from spans").fetchone() == (1,)
    assert con.execute("select count(*) from tool_calls").fetchone() == (1,)


def test_content_is_opt_in(lake: Path, telemetry: tracevals.Telemetry) -> None:
    with tracevals.session("sess-4"):
        send_message(customer_id="cus_001", text="SECRET-MESSAGE-TEXT")
    telemetry.force_flush()
    blobs = b"".join(f.read_bytes() for f in lake.rglob("*.parquet"))
    # zstd-compressed pages could hide the text from a byte grep, so check the decoded rows too
    con = open_lake(lake)
    row = con.execute(
        "select t.tool_args, s.attributes from tool_calls t join spans s on s.span_id = t.span_id"
    ).fetchone()
    assert row is not None
    args, attrs = row
    assert args is None and "SECRET-MESSAGE-TEXT" not in str(attrs) and b"SECRET-MESSAGE-TEXT" not in blobs
    assert "tracevals.tool.args_hash" in json.loads(str(attrs))

    set_capture(True)
    try:
        with tracevals.session("sess-5"):
            send_message(customer_id="cus_001", text="visible when opted in")
    finally:
        set_capture(False)
    telemetry.force_flush()
    con = open_lake(lake)
    captured = con.execute("select tool_args from tool_calls where session_id = 'sess-5'").fetchone()
    assert captured is not None and json.loads(captured[0])["text"] == "visible when opted in"


def test_empty_lake_has_every_view(lake: Path) -> None:
    con = open_lake(lake)
    for view in ("spans", "tool_calls", "trajectories", "runs", "scores", "steps", "model_calls", "handoffs"):
        assert con.execute(f"select count(*) from {view}").fetchone() == (0,)


def test_missing_lake_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LakeError, match="is not a directory"):
        open_lake(tmp_path / "nope")


def test_embedded_writer_keeps_spans_whose_service_name_is_not_text(tmp_path: Path) -> None:
    """A resource whose service.name is a number (against the spec) still lands: the column holds its JSON
    text, the resource attributes the typed value."""
    provider = TracerProvider(resource=Resource({"service.name": 7}))
    provider.add_span_processor(SimpleSpanProcessor(ParquetSpanExporter(tmp_path)))
    with provider.get_tracer("t").start_as_current_span("chat"):
        pass
    provider.shutdown()
    rows = duckdb.sql(
        f"select service_name, resource_attributes from read_parquet('{tmp_path}/spans/**/*.parquet')"
    ).fetchall()
    assert [(r[0], json.loads(r[1])["service.name"]) for r in rows] == [("7", 7)]


def test_a_local_lake_lists_what_pyarrow_lists(tmp_path: Path) -> None:
    """`LocalLake.files` (os.scandir, no pyarrow import) gives what the pyarrow listing every lake has gives:
    files beneath folders, links followed, hidden and non-Parquet files listed (callers filter), folders not."""
    import os

    from tracevals.lake.lake import Lake

    root = tmp_path / "lake"
    (root / "spans" / "date=2026-12-04" / "hour=10").mkdir(parents=True)
    (root / "spans" / "date=2026-12-04" / "hour=10" / "a.parquet").write_bytes(b"x" * 10)
    (root / "spans" / "date=2026-12-04" / "hour=10" / ".tmp-b.parquet").write_bytes(b"y")
    (root / "spans" / "notes.txt").write_text("z")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "c.parquet").write_bytes(b"c" * 3)
    os.symlink(tmp_path / "elsewhere", root / "spans" / "linked")
    os.symlink(tmp_path / "elsewhere" / "c.parquet", root / "spans" / "d.parquet")
    lake = Lake.open(root)

    def seen(infos: list[object]) -> list[tuple[str, str, int]]:
        return sorted((i.path, i.base_name, i.size) for i in infos)  # type: ignore[attr-defined]

    for recursive in (True, False):
        assert seen(lake.files("spans", recursive)) == seen(Lake.files(lake, "spans", recursive)), recursive
    assert lake.files("nothing", True) == [] == Lake.files(lake, "nothing", True)
    assert [i.base_name for i in lake.list_parquet("spans")] == ["d.parquet", "a.parquet", "c.parquet"]  # by path


def test_an_empty_table_has_the_columns_and_types_of_its_files(lake: Path, telemetry: tracevals.Telemetry) -> None:
    """A lake without span files yet reads as a typed empty relation: the same columns, of the same types,
    as the relation over files (`lake.columns` is the one definition of both)."""
    empty = open_lake(lake)
    before = empty.execute("DESCRIBE raw_spans").fetchall()
    with tracevals.session("s-1"):
        send_message("cus_001", "hi")
    telemetry.force_flush()
    after = open_lake(lake).execute("DESCRIBE raw_spans").fetchall()
    assert [(r[0], r[1]) for r in before] == [(r[0], r[1]) for r in after]
    assert empty.execute("SELECT count(*) FROM sessions").fetchall() == [(0,)]


def test_a_lake_that_cannot_be_written_is_said_once_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`instrument(lake=...)` given a path under a file (or a full disk): every batch's export printed a
    15-line traceback into the agent's output. It is one line now, naming the lake and the reason, said once
    for each kind of failure; the agent goes on."""
    import logging

    (tmp_path / "notes.txt").write_text("a file, not a folder")
    lake = tmp_path / "notes.txt" / "lake"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ParquetSpanExporter(lake)))
    with caplog.at_level(logging.DEBUG, logger="tracevals"):
        for i in range(3):
            provider.get_tracer("t").start_span(f"step {i}").end()
    provider.shutdown()
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    (error,) = errors
    assert error.exc_info is None and "\n" not in error.getMessage()
    assert f"could not write 1 spans to {lake}: Not a directory" in error.getMessage()
    assert "give instrument(lake=...) or TRACEVALS_LAKE a folder" in error.getMessage()


@pytest.mark.parametrize(
    ("sampler", "said"),
    [("traceidratio", True), ("parentbased_traceidratio", True), ("parentbased_always_on", False), ("", False)],
)
def test_a_provider_that_samples_traces_is_said_once(tmp_path: Path, sampler: str, said: bool) -> None:
    """`OTEL_TRACES_SAMPLER=traceidratio`: each turn of a session (a trace each) was kept or dropped on its own,
    silently, and the lake held sessions with turns missing, read by the evaluators as what the agent did."""
    import os
    import subprocess
    import sys

    script = "import tracevals\nfor lake in ('a', 'b'):\n    tracevals.instrument(lake=lake)\n"
    env = {**os.environ, "OTEL_TRACES_SAMPLER": sampler, "OTEL_TRACES_SAMPLER_ARG": "0.5"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "samples traces" in line]
    assert len(lines) == (1 if said else 0), done.stderr
    if said:
        assert "TraceIdRatioBased{0.5}" in lines[0] and "session_sampler" in lines[0]
