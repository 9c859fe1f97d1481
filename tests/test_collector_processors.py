"""A collector processor is one module and one row of `PROCESSORS`: a processor declared here (its name, its
settings, a filter and a transform) and added to the table is accepted by the config, validated with the
config's own errors, and run by a real collector on the signals whose pipelines list it, in their order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tracevals.collector.config import CollectorConfigError, parse_config
from tracevals.collector.config_schema import Key, record, string, strings
from tracevals.collector.processors import PROCESSORS, Hooks, Processor
from tracevals.collector.testing import config_document, running_collector


@dataclass(frozen=True)
class DropSettings:
    sessions: tuple[str, ...]


@dataclass(frozen=True)
class TagSettings:
    tag: str


def _drop(settings: DropSettings) -> Hooks:
    return Hooks(keep=lambda session_id, trace_id: session_id not in settings.sessions)


def _tag(settings: TagSettings) -> Hooks:
    def transform(signal: str, table: pa.Table) -> pa.Table:
        column = "name" if signal == "traces" else "scope_name"
        index = table.schema.get_field_index(column)
        tagged = pc.binary_join_element_wise(pc.fill_null(table[column], ""), settings.tag, "")
        return table.set_column(index, table.schema.field(index), tagged)

    return Hooks(transform=transform)


def _tag_processor(name: str) -> Processor[TagSettings]:
    return Processor(name, record(TagSettings, {"tag": Key(string, required=True)}), _tag)


@pytest.fixture
def added(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Three processors as a new module would declare them, each one row of the table."""
    drop = Processor("drop_sessions", record(DropSettings, {"sessions": Key(strings, ())}), _drop)
    for processor in (drop, _tag_processor("tag_a"), _tag_processor("tag_b")):
        monkeypatch.setitem(PROCESSORS, processor.name, processor)
    yield


def _document(lake: Path, traces: list[str], logs: list[str]) -> dict[str, Any]:
    return config_document(
        lake,
        {
            "processors": {
                "drop_sessions": {"sessions": ["s-dropped"]},
                "tag_a": {"tag": "+a"},
                "tag_b": {"tag": "+b"},
            },
            "service": {
                "pipelines": {
                    "traces": {"receivers": ["otlp"], "processors": traces, "exporters": ["parquet"]},
                    "logs": {"receivers": ["otlp"], "processors": logs, "exporters": ["parquet"]},
                }
            },
        },
    )


def test_a_new_processor_runs_where_its_pipelines_list_it_in_their_order(added: None, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    overrides = _document(lake, ["memory_limiter", "drop_sessions", "tag_a", "tag_b", "batch"], ["tag_b", "tag_a"])
    with running_collector(lake, overrides) as collector:
        base = f"http://127.0.0.1:{collector.http_port}"
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces")))
        logs = LoggerProvider()
        logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{base}/v1/logs")))
        tracer = provider.get_tracer("t")
        for session in ("s-kept", "s-dropped", "s-other"):
            with tracer.start_as_current_span(f"chat {session}") as span:
                span.set_attribute("gen_ai.conversation.id", session)
        logs.get_logger("t").emit(LogRecord(body="hello", attributes={"event.name": "gen_ai.user.message"}))
        provider.shutdown()
        logs.shutdown()
        assert collector.pipeline.flush()
    spans = duckdb.execute(f"SELECT name FROM '{lake}/spans/**/*.parquet' ORDER BY name").fetchall()
    assert spans == [("chat s-kept+a+b",), ("chat s-other+a+b",)]  # filtered, then tagged a, then b
    records = duckdb.execute(f"SELECT scope_name FROM '{lake}/logs/**/*.parquet'").fetchall()
    assert records == [("t+b+a",)]  # the logs pipeline lists them the other way round


def test_a_new_processor_s_settings_are_checked_like_every_other_key(added: None, tmp_path: Path) -> None:
    doc = _document(tmp_path / "lake", ["drop_sessions"], [])
    doc["processors"]["drop_sessions"] = {"sesions": ["x"]}
    with pytest.raises(CollectorConfigError) as info:
        parse_config(doc)
    assert (
        str(info.value)
        == "processors.drop_sessions.sesions: unknown key; did you mean 'sessions'? (known keys: sessions)"
    )
    doc = _document(tmp_path / "lake", ["tag_a"], [])
    doc["processors"]["tag_a"] = {}
    with pytest.raises(CollectorConfigError, match=r"^processors\.tag_a\.tag: required$"):
        parse_config(doc)
    doc = _document(tmp_path / "lake", ["tag_c"], [])
    with pytest.raises(CollectorConfigError, match=r"traces\.processors\[0\]: 'tag_c' is not a defined processor"):
        parse_config(doc)
    config = parse_config(_document(tmp_path / "lake", ["tag_a"], ["memory_limiter"]))
    assert config.pipelines == {"traces": ("tag_a",), "logs": ("memory_limiter",)}
    assert dict(config.processors) == {"tag_a": TagSettings("+a")}  # what no pipeline lists is not built


def test_without_the_row_the_name_is_unknown(tmp_path: Path) -> None:
    doc = _document(tmp_path / "lake", [], [])
    with pytest.raises(CollectorConfigError, match=r"^processors\.drop_sessions: unknown key"):
        parse_config(doc)
