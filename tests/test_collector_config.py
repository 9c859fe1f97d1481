"""`otel-config.yaml` validation, `tracevals collect --validate`, session sampling, truncation, and the
collector's fast row builder against the reference `rows_from_request`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracevals.cli import main
from tracevals.collector.config import CollectorConfigError, load_config, parse_config
from tracevals.collector.conversion.rows import TRUNCATED, logs_table, rows_from_request, spans_table
from tracevals.collector.testing import config_document, otlp_kv
from tracevals.lake.sampling import SessionSampler, session_kept
from tracevals.lake.schema import SPAN_SCHEMA

ROOT = Path(__file__).resolve().parents[1]


def test_the_shipped_example_config_is_valid() -> None:
    config = load_config(ROOT / "otel-config.yaml")
    assert config.http is not None and config.http.host == "127.0.0.1"
    assert config.grpc is not None and config.grpc.host == "127.0.0.1"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("exporters", "parquet", "compresion", "zstd"), "compresion: unknown key; did you mean 'compression'?"),
        (("exporters", "parquet", "compression", "zst"), "exporters.parquet.compression: 'zst' is not one of"),
        (("processors", "batch", "timeout", "soon"), "processors.batch.timeout: 'soon' is not a duration"),
        (("processors", "batch", "send_batch_size", 0), "processors.batch.send_batch_size: 0 is out of range"),
        (("receivers", "otlp", "protocols", "http", "endpoint", "4318"), "is not host:port"),
        (("receivers", "otlp", "protocols", "htp", {}), "protocols.htp: unknown key; did you mean 'http'?"),
        (("exporters", "parquet", "rotation", "max_bytes", "lots"), "parquet.rotation.max_bytes: 'lots' is not a size"),
        (("service", "pipelines", "traces", "processors", ["batch", "memory_limitr"]),
         "traces.processors[1]: 'memory_limitr' is not a defined processor; did you mean 'memory_limiter'?"),
    ],
)  # fmt: skip
def test_a_bad_key_or_value_is_one_error_naming_its_path(tmp_path: Path, edit: tuple[Any, ...], message: str) -> None:
    doc = config_document(tmp_path / "lake")
    *path, key, value = edit
    node = doc
    for part in path:
        if node.get(part) is None:
            node[part] = {}
        node = node[part]
    node[key] = value
    with pytest.raises(CollectorConfigError) as info:
        parse_config(doc)
    assert message in str(info.value)


def test_a_config_without_processors_is_valid() -> None:
    """The smallest config: a receiver, the exporter, a pipeline; no processors section at all."""
    doc = {
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": {"path": "lake"}},
        "service": {"pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
    }
    config = parse_config(doc)
    assert not config.processors and config.memory_limiter is None and config.batch.send_batch_size == 1


def test_validate_command_prints_the_plan_or_one_error_line(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(config_document("lake")))
    result = CliRunner().invoke(main, ["collect", "--config", str(good), "--validate"])
    assert result.exit_code == 0 and "config OK" in result.output and "otlp/http=127.0.0.1:0" in result.output
    doc = config_document("lake")
    doc["exporters"]["parquet"]["compresion"] = "zstd"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(main, ["collect", "--config", str(bad), "--validate"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: {bad}: exporters.parquet.compresion: unknown key; did you mean 'compression'? (known keys: "
        "compression, compression_level, max_attribute_value_bytes, path, rotation, sending_queue, "
        "shutdown_timeout, wal)"
    ]


def test_the_collector_writes_the_lake_every_other_command_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`TRACEVALS_LAKE` names every command's lake; the collector's built-in config (and the shipped file)
    wrote ./lake whatever it said, and `tracevals collect --lake` was refused as no such option. Now the
    built-in config and the shipped file read `${env:TRACEVALS_LAKE:-lake}`, and `--lake` (relative to the
    working directory, like every command's) replaces any config's `exporters.parquet.path`."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRACEVALS_LAKE", str(tmp_path / "from-env"))

    def validated(*args: str) -> dict[str, Any]:
        result = CliRunner().invoke(main, ["collect", *args, "--validate", "--format", "json"])
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.output.splitlines()[-1]))

    assert validated()["lake"] == str(tmp_path / "from-env")  # no config file here: the built-in one
    assert str(load_config(ROOT / "otel-config.yaml").exporter.lake) == str(tmp_path / "from-env")
    assert validated("--lake", "mine")["lake"] == str(tmp_path / "mine")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "c.yaml").write_text(yaml.safe_dump(config_document("theirs")))
    assert validated("--config", "conf/c.yaml")["lake"] == str(tmp_path / "conf" / "theirs")  # the file's folder
    assert validated("--config", "conf/c.yaml", "--lake", "mine")["lake"] == str(tmp_path / "mine")
    monkeypatch.delenv("TRACEVALS_LAKE")
    assert validated()["lake"] == str(tmp_path / "lake")


def test_sampling_keeps_or_drops_whole_sessions_deterministically() -> None:
    sessions = [f"sess-{i}" for i in range(2000)]
    kept = [s for s in sessions if session_kept(s, 25.0, seed=7)]
    assert 400 < len(kept) < 600  # 25% of 2000, give or take chance
    assert kept == [s for s in sessions if session_kept(s, 25.0, seed=7)]  # same seed, same sample
    assert kept != [s for s in sessions if session_kept(s, 25.0, seed=8)]
    sampler = SessionSampler(25.0, seed=7)
    # a span without the session id follows its trace's session once a span of the trace named it
    assert sampler.keep("sess-1", "t1") == session_kept("sess-1", 25.0, 7)
    assert sampler.keep(None, "t1") == session_kept("sess-1", 25.0, 7)
    assert sampler.keep(None, "t-unknown") == session_kept("t-unknown", 25.0, 7)


def _request(attrs: dict[str, Any], status: int = 0, events: int = 0) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    resource.resource.attributes.append(otlp_kv("service.name", "svc"))
    span = resource.scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "execute_tool x"
    span.start_time_unix_nano, span.end_time_unix_nano, span.status.code = 10, 20, status
    span.attributes.extend(otlp_kv(k, v) for k, v in attrs.items())
    for i in range(events):
        event = span.events.add(name="exception" if i == 0 else "e")
        event.attributes.append(otlp_kv("exception.type", "Boom"))
    return request


def test_oversized_values_are_truncated_and_flagged_never_dropped() -> None:
    big = "é" * 50_000  # 100,000 UTF-8 bytes
    table = spans_table(_request({"gen_ai.tool.call.arguments": big, "small": "ok"}), max_value_bytes=1024)
    (attributes,) = table["attributes"].to_pylist()
    attrs = json.loads(attributes)
    assert attrs[TRUNCATED] == ["gen_ai.tool.call.arguments"]
    assert attrs["gen_ai.tool.call.arguments"] == "é" * 512 and attrs["small"] == "ok"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, ["gen_ai.tool.call.arguments"]),
        (["input.value"], ["gen_ai.tool.call.arguments", "input.value"]),
        ("input.value", ["gen_ai.tool.call.arguments", "input.value"]),
        (5, ["5", "gen_ai.tool.call.arguments"]),
        ([1, "x", True], ["1", "gen_ai.tool.call.arguments", "true", "x"]),
    ],
)
def test_a_truncated_flag_the_sender_set_is_merged_whatever_its_type(given: Any, expected: list[str]) -> None:
    """`tracevals.truncated` set by the sender (a list of keys, or a value of another type) is merged with
    what the collector cuts: an integer there once made the span unwritable (dropped after acknowledging)."""
    attrs: dict[str, Any] = {"gen_ai.tool.call.arguments": "x" * 5000}
    if given is not None:
        attrs[TRUNCATED] = given
    request = _request({k: v for k, v in attrs.items() if not isinstance(v, list)})
    if isinstance(given, list):
        value = request.resource_spans[0].scope_spans[0].spans[0].attributes.add(key=TRUNCATED).value
        for item in given:
            value.array_value.values.append(otlp_kv("_", item).value)
    (attributes,) = spans_table(request, max_value_bytes=1024)["attributes"].to_pylist()
    assert json.loads(attributes)[TRUNCATED] == expected


def test_a_log_record_with_a_truncated_flag_of_another_type_is_kept() -> None:
    request = ExportLogsServiceRequest()
    record = request.resource_logs.add().scope_logs.add().log_records.add(time_unix_nano=10)
    record.body.string_value = "y" * 5000
    record.attributes.append(otlp_kv(TRUNCATED, 7))
    (attributes,) = logs_table(request, max_value_bytes=1024)["attributes"].to_pylist()
    assert json.loads(attributes)[TRUNCATED] == ["7", "body"]


_values = st.one_of(st.text(max_size=8), st.integers(-(2**63), 2**63 - 1), st.booleans(), st.floats(allow_nan=False))
_keys = st.sampled_from(
    ["gen_ai.operation.name", "gen_ai.tool.name", "session.id", "openinference.span.kind", "error.type",
     "gen_ai.usage.input_tokens", "llm.model_name", "traceloop.span.kind", "tool.name", "input.value", "x"]
)  # fmt: skip


@settings(max_examples=200, deadline=None, derandomize=True)
@given(attrs=st.dictionaries(_keys, _values, max_size=6), status=st.sampled_from([0, 1, 2]), events=st.integers(0, 2))
def test_fast_builder_equals_the_reference_rows(attrs: dict[str, Any], status: int, events: int) -> None:
    request = _request(attrs, status, events)
    reference = pa.Table.from_pylist(rows_from_request(request), schema=SPAN_SCHEMA)
    assert spans_table(request).equals(reference)


def test_collect_says_what_it_does_as_json_lines_with_format_json(tmp_path: Path) -> None:
    import json
    import signal
    import subprocess
    import sys

    config = tmp_path / "otel-config.yaml"
    config.write_text(yaml.safe_dump(config_document(tmp_path / "lake")))
    checked = CliRunner().invoke(main, ["collect", "--config", str(config), "--validate", "--format", "json"])
    assert checked.exit_code == 0, checked.output
    plan = json.loads(checked.stdout)
    assert plan["event"] == "config_ok" and plan["http"] == "127.0.0.1:0" and plan["lake"] == str(tmp_path / "lake")
    cmd = [sys.executable, "-m", "tracevals", "collect", "--config", str(config), "--format", "json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        listening = json.loads(proc.stdout.readline())
        assert listening["event"] == "listening"
        host, port = listening["http"].rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0  # the port the OS gave, which a script needs
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    stopped = json.loads(out.splitlines()[-1])
    assert stopped == {
        "event": "stopped",
        "spans_accepted": 0,
        "logs_accepted": 0,
        "files_committed": 0,
        "all_written": True,
    }


def test_a_long_value_lands_the_same_through_the_collector_and_the_embedded_writer(tmp_path: Path) -> None:
    """A tool result of 200 KB (a retrieved document, with content capture on): the collector cut it at its
    default `max_attribute_value_bytes` and flagged it, the embedded writer and `tracevals ingest` kept it
    whole, so the same agent's lake, and what an evaluator read in it, depended on how its spans got there.
    All three cut it now, at one default (`tracevals.spans.rows.MAX_VALUE_BYTES`), into the same row."""
    import signal

    from fixtures.faults import CollectorProcess, write_config
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

    from tracevals.queries import open_lake
    from tracevals.spans.exporters import ParquetSpanExporter
    from tracevals.spans.rows import MAX_VALUE_BYTES

    collector = CollectorProcess(write_config(tmp_path / "otel.yaml", tmp_path / "collected"))
    exporters: dict[str, SpanExporter] = {
        "collected": OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", timeout=10),
        "embedded": ParquetSpanExporter(tmp_path / "embedded"),
    }
    document = "retrieved " * 20_000  # 200,000 bytes
    for exporter in exporters.values():
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        with provider.get_tracer("t").start_as_current_span("execute_tool search") as span:
            span.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"})
            span.set_attribute("gen_ai.tool.call.result", document)
        provider.shutdown()
    assert collector.stop(signal.SIGTERM) == 0, collector.log
    # and the same span in an OTLP/JSON file (a span and a log record, each with the long value), ingested
    kv = [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
          {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}},
          {"key": "gen_ai.tool.call.result", "value": {"stringValue": document}}]  # fmt: skip
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "execute_tool search", "kind": 1, "attributes": kv,
            "startTimeUnixNano": "1764900000000000000", "endTimeUnixNano": "1764900000005000000"}  # fmt: skip
    record = {"timeUnixNano": "1764900000001000000", "traceId": "ab" * 16, "spanId": "cd" * 8,
              "body": {"stringValue": document}}  # fmt: skip
    doc = {
        "resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": [span]}]}],
        "resourceLogs": [{"resource": {}, "scopeLogs": [{"scope": {"name": "t"}, "logRecords": [record]}]}],
    }
    (tmp_path / "export.json").write_text(json.dumps(doc), encoding="utf-8")
    for fast in ("1", "0"):  # the fast path and the validating one
        lake = tmp_path / f"ingested-{fast}"
        result = CliRunner().invoke(
            main, ["ingest", "--lake", str(lake), str(tmp_path / "export.json")], env={"TRACEVALS_INGEST_FAST": fast}
        )
        assert result.exit_code == 0, result.output
        (body,) = open_lake(lake).execute("select body from logs").fetchone()  # the body's JSON text
        assert len(json.loads(body).encode()) == MAX_VALUE_BYTES and document.startswith(json.loads(body))
    rows = {}
    for name in (*exporters, "ingested-1", "ingested-0"):
        query = "select tool_result, attributes->>'$.\"tracevals.truncated\"' from spans"
        rows[name] = open_lake(tmp_path / name).execute(query).fetchall()
    assert rows["embedded"] == rows["collected"] == rows["ingested-1"] == rows["ingested-0"]
    [(result, flagged)] = rows["embedded"]
    assert len(result.encode()) == MAX_VALUE_BYTES and document.startswith(result)
    assert json.loads(flagged) == ["gen_ai.tool.call.result"]
