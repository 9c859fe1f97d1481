"""The lake on object storage: the same spans written to an `s3://` lake (moto's server on 127.0.0.1) and to a
local directory read the same through every command; writers, the collector and compaction commit whole
objects; bad URLs and credentials are one line. See docs/lake.md, "Object storage"."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures.otlp_lakes import DIALECTS, OTLP_DIR
from fixtures.s3 import S3, s3  # noqa: F401  (the fixture)

import tracevals
from tracevals.cli import main
from tracevals.instrumentation.content import set_capture
from tracevals.lake.lake import Lake
from tracevals.lake.paths import LakeError
from tracevals.lake.storage import lake_filesystem
from tracevals.queries.connection import open_lake

QUERIES = (
    "select trace_id, span_id, name, kind, tool_name, date, hour from spans order by trace_id, span_id",
    "select * exclude (source_file) from raw_spans order by trace_id, span_id",
    "select trace_id, span_id, event_name, body from logs order by trace_id, span_id, time",
    "select session_id, task_id, tools from trajectories order by session_id, trace_id",
    "select * from tool_calls order by trace_id, span_id",
    "select count(*) as n, count(distinct source_file) as files from raw_spans",
)


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _rows(lake: str, query: str, *extra: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = json.loads(_cli("sql", "--lake", lake, "--format", "json", *extra, query))
    return rows


def _scored(lake: str) -> list[tuple[object, ...]]:
    rows = json.loads(_cli("score", "--lake", lake, "--no-write", "--format", "json"))
    return sorted(tuple(json.dumps(r.get(k), sort_keys=True) for k in sorted(r) if k != "scored_at") for r in rows)


def _ingest_both(s3: S3, tmp_path: Path) -> tuple[str, str]:  # noqa: F811
    files = [str(OTLP_DIR / f"{d}.json") for d in DIALECTS]
    local, remote = str(tmp_path / "lake"), s3.lake("ingested")
    _cli("ingest", "--lake", local, *files)
    _cli("ingest", "--lake", remote, *files)
    return local, remote


def _all(lake: str, queries: tuple[str, ...] | list[str], **kwargs: object) -> list[list[tuple[object, ...]]]:
    """Every query's rows on one connection (open_lake, as the commands open it)."""
    con = open_lake(lake, **kwargs)  # type: ignore[arg-type]
    return [con.execute(q).fetchall() for q in queries]


def test_ingest_then_sql_score_report_give_the_local_rows(s3: S3, tmp_path: Path) -> None:  # noqa: F811
    local, remote = _ingest_both(s3, tmp_path)
    assert any(k.startswith("ingested/spans/date=") for k in s3.keys(""))
    assert _all(remote, QUERIES) == _all(local, QUERIES)
    assert _rows(remote, QUERIES[3]) == _rows(local, QUERIES[3]) != []  # through the sandboxed `tracevals sql`
    # the partition range as the local lake keeps it, and the hive columns typed alike
    [first] = _rows(local, "select min(date) as d, min(hour) as h from spans")
    since, until = f"{first['d']}T{first['h']:02d}:00:00Z", f"{first['d']}T{first['h']:02d}:30:00Z"
    ranged = "select count(*) as n, typeof(any_value(date)) as t, typeof(any_value(hour)) as h from raw_spans"
    window = ("--since", since, "--until", until)
    assert _rows(remote, ranged, *window) == _rows(local, ranged, *window)
    assert _rows(remote, ranged, *window)[0]["t"] == "DATE"
    # one session's lookup (the span files it names: objects' URLs) and an export of a per-trace view
    from tracevals.queries import session_lookup

    looked = []
    for lake in (local, remote):
        con = open_lake(lake)
        session = con.execute("select min(session_id) from trajectories").fetchall()[0][0]
        looked.append(sorted(map(repr, session_lookup(con, session, "tool_calls").to_pylist())))
    assert looked[0] == looked[1] != []
    exported = []
    for lake, name in ((local, "local"), (remote, "remote")):
        _cli("export", "trajectories", "--lake", lake, "--out", str(tmp_path / f"export-{name}"), "--workers", "1")
        con = open_lake(local)  # any connection reads the files
        query = f"select trace_id, tools from '{tmp_path}/export-{name}/*.parquet' order by trace_id"
        exported.append(con.execute(query).fetchall())
    assert exported[0] == exported[1] != []
    # score writes LAKE/scores/ on both; the stored scores read the same
    _cli("score", "--lake", local, "--format", "json")
    _cli("score", "--lake", remote, "--format", "json")
    assert any(k.startswith("ingested/scores/part-") for k in s3.keys(""))
    scores = "select trace_id, evaluator, passed, score, reason from scores order by trace_id, evaluator"
    assert _rows(remote, scores) == _rows(local, scores) != []
    # the report and the gate over each: the same summary, the same verdict
    outputs = []
    for lake, name in ((local, "local"), (remote, "remote")):
        out = tmp_path / f"{name}.json"
        _cli("report", "--lake", lake, "--since", str(first["d"]), "--out", str(out), "--format", "json")
        outputs.append(_strip_lake(json.loads(out.read_text()), lake))
    assert outputs[0] == outputs[1]
    gates = [
        CliRunner().invoke(main, ["gate", "--lake", lake, "--since", str(first["d"]), "--format", "json"])
        for lake in (local, remote)
    ]
    assert gates[0].exit_code == gates[1].exit_code
    assert _strip_lake(json.loads(gates[0].stdout), local) == _strip_lake(json.loads(gates[1].stdout), remote)


def _strip_lake(value: object, lake: str) -> object:
    """A report without what differs by where or when it ran: the lake's name, the time it was made, the
    clock horizon (the reader's now plus the skew allowance)."""
    if isinstance(value, dict):
        return {k: _strip_lake(v, lake) for k, v in value.items() if k not in ("generated_at", "lake", "horizon")}
    if isinstance(value, list):
        return [_strip_lake(v, lake) for v in value]
    return "LAKE" if value == lake else value


def test_embedded_writer_writes_an_s3_lake(s3: S3, tmp_path: Path) -> None:  # noqa: F811
    @tracevals.tool(effect="read")
    def get_orders(customer_id: str) -> list[str]:
        return [f"order-of-{customer_id}"]

    results = []
    for lake in (str(tmp_path / "lake"), s3.lake("embedded")):
        set_capture(False)
        telemetry = tracevals.instrument(lake=lake, batch=False, capture_content=False)
        try:
            with tracevals.session("conversation-1"), tracevals.agent("support"):
                get_orders("c-1")
                get_orders("c-2")
            tracevals.end_session("conversation-1")
        finally:
            telemetry.shutdown()
            set_capture(None)
        results.append(_rows(lake, "select session_id, tools, tool_call_count, status from trajectories"))
    assert results[0] == results[1] != []
    assert [k for k in s3.keys("embedded/") if not k.startswith("embedded/spans/date=")] == []


def test_a_lake_with_spans_but_no_logs_or_scores(s3: S3, tmp_path: Path) -> None:  # noqa: F811
    from fixtures.otlp_lakes import fixture_doc

    from tracevals.collector.conversion.rows import rows_from_request
    from tracevals.collector.otlp_json import parse_json_traces
    from tracevals.lake.writer import LakeWriter

    remote = s3.lake("spans-only")
    written = LakeWriter(remote).write_rows(rows_from_request(parse_json_traces(fixture_doc("genai_legacy"))))
    assert written and all(str(w).startswith(f"{remote}/spans/date=") for w in written)
    assert s3.keys("") and not any("/logs/" in k or "/scores/" in k for k in s3.keys(""))
    con = open_lake(remote)
    assert con.execute("select count(*) from logs").fetchall() == [(0,)]
    assert con.execute("select count(*) from scores").fetchall() == [(0,)]
    assert con.execute("select count(*) from spans").fetchall()[0][0] > 0
    # one file, but each read of it is requests: a connection for a query copies its rows once (`COPY_RAW_FILES`)
    one = open_lake(remote, views=("tool_calls",))
    tables = {r[0] for r in one.execute("select table_name from duckdb_tables() where temporary").fetchall()}
    assert "raw_spans_snapshot" in tables and one.execute("select count(*) from tool_calls").fetchall()[0][0] > 0
    # a prefix nothing was written to yet: every view, no rows
    empty = open_lake(s3.lake("nothing-yet"))
    assert empty.execute("select count(*) from trajectories").fetchall() == [(0,)]


def test_an_unreadable_object_is_skipped_with_one_warning(s3: S3, tmp_path: Path) -> None:  # noqa: F811
    remote = s3.lake("damaged")
    _cli("ingest", "--lake", remote, str(OTLP_DIR / "genai_current.json"))
    fs, root = lake_filesystem(remote)
    with fs.open_output_stream(f"{root}/spans/date=2026-01-01/hour=00/part-cut.parquet") as out:
        out.write(b"PAR1 cut short")
    result = CliRunner().invoke(main, ["sql", "--lake", remote, "--format", "json", "select count(*) as n from spans"])
    assert result.exit_code == 0, result.output
    assert "skipped 1 unreadable lake files" in result.stderr and "part-cut.parquet" in result.stderr
    strict = CliRunner().invoke(main, ["sql", "--lake", remote, "--strict", "select count(*) from spans"])
    assert strict.exit_code != 0 and "part-cut.parquet" in strict.output


@pytest.mark.parametrize(
    ("lake", "env", "expected"),
    [
        ("nosuch://bucket/lake", {}, "cannot open a nosuch:// URL"),
        ("s3:///lake", {}, "names no bucket"),
        ("s3://no-such-bucket/lake", {}, "bucket 'no-such-bucket' does not exist"),
        ("s3://tracevals-lake/lake", {"AWS_SECRET_ACCESS_KEY": None}, "AWS_SECRET_ACCESS_KEY is not set"),
        ("s3://tracevals-lake/lake", {"AWS_ENDPOINT_URL_S3": "ftp://x"}, "is not an http(s) URL"),
        ("s3://tracevals-lake/lake", {"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9"}, "check AWS_ENDPOINT_URL_S3"),
    ],
)
def test_bad_lake_urls_are_one_line(
    s3: S3,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    lake: str,
    env: dict[str, str | None],
    expected: str,
) -> None:
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name)
        else:
            monkeypatch.setenv(name, value)
    with pytest.raises(LakeError, match=r"^[^\n]*$") as raised:
        open_lake(lake)
    assert expected in str(raised.value)
    assert "testing" not in str(raised.value)  # no secret in a message
    result = CliRunner().invoke(main, ["sql", "--lake", lake, "select 1"])
    assert result.exit_code != 0 and expected in result.output and len(result.output.strip().splitlines()) == 1


def _object_rows(lake: str, table: str = "spans") -> Counter[str]:
    """How many rows each span id has in the committed objects of the lake's `table` (every object opens)."""
    import pyarrow.parquet as pq

    opened = Lake.open(lake)
    fs = opened.filesystem
    rows: Counter[str] = Counter()
    for info in opened.list_parquet(table):
        rows.update(pq.read_table(info.path, columns=["span_id"], filesystem=fs)["span_id"].to_pylist())
    return rows


def test_a_collector_writing_to_s3_killed_mid_stream_loses_no_acknowledged_span(s3: S3, tmp_path: Path) -> None:  # noqa: F811
    import random
    import time

    from fixtures.faults import CollectorProcess, Sender, span_batches, write_config

    lake, wal = s3.lake("collected"), tmp_path / "wal"
    parquet = {"rotation": {"max_age": "300ms", "max_rows": 300}, "shutdown_timeout": "5s", "wal": {"dir": str(wal)}}
    config = write_config(tmp_path / "collector.yaml", lake, {"exporters": {"parquet": parquet}})  # type: ignore[arg-type]
    rng = random.Random(11)
    log: list[str] = []
    collector = CollectorProcess(config, log=log)
    sender = Sender(span_batches(400, 20), collector.http_port, threads=2).start()
    kills = 0
    for _ in range(3):
        time.sleep(rng.uniform(0.4, 1.0))
        collector.kill()  # SIGKILL: acknowledged spans are in the local log, some files staged or uploaded
        kills += 1
        collector = CollectorProcess(config, log=log)
        sender.port = collector.http_port
    sender.wait(120)
    collector.terminate()
    rows = _object_rows(lake)
    assert sender.acknowledged, "".join(log)
    assert sender.acknowledged - set(rows) == set(), "".join(log)  # nothing acknowledged is lost
    assert max(rows.values()) == 1  # and nothing written twice (the commit journal, uploads to the same key)
    assert len(sender.acknowledged) > 2000 and kills == 3
    # the log and the staging folder are empty after the SIGTERM; the bucket holds committed Parquet only
    assert not list(wal.glob("wal-*.log")) and not list((wal / "staging").rglob("*.tmp"))
    keys = s3.keys("collected/")
    assert keys and all(k.endswith(".parquet") and "/." not in k and k.startswith("collected/spans/") for k in keys)


def test_collector_config_with_an_s3_path_needs_a_local_wal_dir(s3: S3, tmp_path: Path) -> None:  # noqa: F811
    from tracevals.collector.config import CollectorConfigError
    from tracevals.collector.testing import local_config

    with pytest.raises(
        CollectorConfigError, match=r"exporters\.parquet\.wal\.dir: required when path is an object-store URL"
    ):
        local_config(s3.lake("c"))
    config = local_config(s3.lake("c"), {"exporters": {"parquet": {"wal": {"dir": str(tmp_path / "wal")}}}})
    assert config.exporter.lake.local_folder is None and config.exporter.wal_path == tmp_path / "wal"
    with pytest.raises(CollectorConfigError, match=r"cannot open a nosuch:// URL"):
        local_config("nosuch://x/y", {"exporters": {"parquet": {"wal": {"dir": str(tmp_path / "wal")}}}})


def test_compact_on_s3_keeps_every_row_and_a_reader_in_the_gap_counts_once(
    s3: S3,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRACEVALS_COMPACT_RETENTION", "0")  # deleted at once; the retention: test_lake_retention.py
    files = [str(OTLP_DIR / f"{d}.json") for d in DIALECTS]
    lake = s3.lake("compacted")
    for path in files:  # one ingest a file: several files an hour
        _cli("ingest", "--lake", lake, path)
    counts = "select count(*) as spans, count(distinct trace_id) as traces from spans"
    every = "select * exclude (source_file) from raw_spans order by trace_id, span_id"
    checks = (counts, QUERIES[3], QUERIES[4])
    views = _all(lake, checks)
    [before_rows], before_keys = _all(lake, [every]), s3.keys("compacted/spans/")
    assert len(before_keys) > 2
    fs, _ = lake_filesystem(lake)
    originals = {k: fs.open_input_stream(f"{s3.bucket}/{k}").read() for k in before_keys}
    through_views = _scored(lake)
    out = _cli("compact", "--lake", lake, "--min-age", "0", "--format", "json")
    # the merged hours' derived frames, read back from the object store by `score`, give the same verdicts
    assert any(k.startswith("compacted/derived/batch/") for k in s3.keys("")), out
    assert _scored(lake) == through_views != []
    after_keys = s3.keys("compacted/spans/")
    assert len(after_keys) < len(before_keys) and set(after_keys).isdisjoint(before_keys), out
    assert _all(lake, [every]) == [before_rows]  # every row kept, as it was
    # the gap between the merged file's PUT and the deletion of its inputs (a crash there): both are visible
    for key, data in originals.items():
        with fs.open_output_stream(f"{s3.bucket}/{key}") as sink:
            sink.write(data)
    assert _all(lake, checks) == views  # the views count each span once
    again = json.loads(_cli("compact", "--lake", lake, "--min-age", "0", "--format", "json"))
    assert sum(p["leftovers"] for p in again) == len(before_keys)  # the next run deletes the leftovers first
    assert s3.keys("compacted/spans/") == after_keys and _all(lake, [every]) == [before_rows]


def test_a_harness_run_on_s3_keeps_its_cases_and_scores(s3: S3, tmp_path: Path) -> None:  # noqa: F811
    import os
    import subprocess
    import sys

    (tmp_path / "my_agent.py").write_text("def agent(text, ctx):\n    return f'the answer to {text} is 42'\n")
    cases = [{"case_id": f"t{i}", "input": f"q{i}", "success_criteria": {"must_include": ["42"]}} for i in (1, 2)]
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    lake = s3.lake("harness")
    command = [sys.executable, "-m", "tracevals", "run", "--tasks", "cases.jsonl", "--agent", "my_agent:agent"]
    result = subprocess.run(
        [*command, "--lake", lake, "-k", "2", "--run-id", "r1", "--format", "json", "--concurrency", "1"],
        cwd=tmp_path,
        env={**os.environ, "TRACEVALS_COMPACT_RETENTION": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip  (the merged files deleted at once: the retention for readers is test_lake_retention.py's)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr, result.stderr  # the merge of the run's files (a compaction) too
    assert json.loads(result.stdout)["variants"][0]["pass_at_1"] == 1.0
    keys = s3.keys("harness/")
    assert any(k.startswith("harness/run_cases/") for k in keys) and any("/scores/" in k for k in keys)
    spans = [k for k in keys if k.startswith("harness/spans/") and k.endswith(".parquet")]
    assert len(spans) == 1  # the 4 attempts' files merged into one
    assert not (tmp_path / "s3:").exists()  # nothing written to a local folder named after the URL
    # score and report read the run's kept cases back from the bucket (no --tasks)
    report = tmp_path / "report.json"
    _cli("report", "--lake", lake, "--run", "r1", "--out", str(report), "--format", "json")
    assert json.loads(report.read_text())


def test_an_s3_outage_holds_commits_not_acknowledgements(s3: S3, tmp_path: Path) -> None:  # noqa: F811
    import time

    from fixtures.faults import span_batches, span_ids, until
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    from tracevals.collector.testing import running_collector

    lake, wal = s3.lake("outage"), tmp_path / "wal"
    parquet = {"rotation": {"max_age": "200ms"}, "wal": {"dir": str(wal)}}
    overrides = {"exporters": {"parquet": parquet}, "processors": {"batch": {"timeout": "50ms"}}}
    batches = span_batches(30, 10)
    acknowledged: set[str] = set()
    with running_collector(lake, overrides) as collector:
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", timeout=10)
        for batch in batches[:10]:
            assert exporter.export(batch) is SpanExportResult.SUCCESS
            acknowledged |= span_ids(batch)
        assert until(lambda: set(_object_rows(lake)) >= acknowledged, 20)
        with s3.outage():
            for batch in batches[10:]:  # acknowledged into the local log while the store is away
                assert exporter.export(batch) is SpanExportResult.SUCCESS
                acknowledged |= span_ids(batch)
            time.sleep(1.0)  # rotations come and fail: the files wait in staging/, the log keeps their records
            assert list((wal / "staging").rglob("*.tmp")) and list(wal.glob("wal-*.log"))
        assert collector.pipeline.flush(60)  # the store is back: the held commit goes through
        exporter.shutdown()
    rows = _object_rows(lake)
    assert acknowledged - set(rows) == set() and len(acknowledged) == 300
    assert not list((wal / "staging").rglob("*.tmp"))


def test_score_follow_on_an_s3_lake_is_one_line(s3: S3) -> None:  # noqa: F811
    result = CliRunner().invoke(main, ["score", "--lake", s3.lake("lake"), "--follow"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1, result.output
    assert "Traceback" not in result.output
