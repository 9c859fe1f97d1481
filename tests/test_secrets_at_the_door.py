"""Secrets never reach the lake: 35 shapes of credentials, planted through tracevals' own instrumentation
and through a plain OpenTelemetry SDK (spans, span events, log records) sent to a collector running the
shipped `otel-config.yaml`; every string column of every Parquet file is searched afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from opentelemetry import trace
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import tracevals
from tracevals.collector.config import parse_config
from tracevals.collector.service import Collector
from tracevals.lake.redaction import Redactor

ROOT = Path(__file__).resolve().parents[1]

# (the text a user or a tool produced, the secret in it): 35 shapes
SHAPES: list[tuple[str, str]] = [
    ("key sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345", "AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    ("sk-ant-api03-ZyXwVuTsRqPoNmLkJiHgFeDcBa987654", "ZyXwVuTsRqPoNmLkJiHgFeDcBa987654"),
    ("aws AKIAIOSFODNN7EXAMPLQ here", "AKIAIOSFODNN7EXAMPLQ"),
    ("the secret is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("token ghp_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c838347Ae178B4a"),
    ("github_pat_11ABCDEFG0abcdefghijklmnopqrstuvwxyz123456", "11ABCDEFG0abcdefghijklmnopqrstuvwxyz123456"),
    ("glpat-xYz123AbC456dEf789gHi0", "xYz123AbC456dEf789gHi0"),
    ("AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI", "SyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"),
    ("ya29.a0AfH6SMBx3kP9qLmN4oR7sT2uV5wX8yZ", "a0AfH6SMBx3kP9qLmN4oR7sT2uV5wX8yZ"),
    ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp", "1234567890123-AbCdEfGhIjKlMnOp"),
    ("post to https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX", "XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("rk_test_51H8aBcDeFgHiJkLmNoPqRsTu", "51H8aBcDeFgHiJkLmNoPqRsTu"),
    ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejEyMzQ1Ng", "AgEIcHlwaS5vcmcCJGFiY2RlZmdo"),
    ("SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"),
    ("twilio SK0123456789abcdef0123456789abcdef", "SK0123456789abcdef0123456789abcdef"),
    ("dapi0123456789abcdef0123456789abcdef", "dapi0123456789abcdef0123456789abcdef"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpQIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM\n-----END RSA PRIVATE KEY-----",
        "MIIEpQIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM",
    ),
    ("Authorization: Bearer\tabcDEF123456ghiJKL789", "abcDEF123456ghiJKL789"),
    ("Authorization: Bearer  mno345PQR678stu901VWX", "mno345PQR678stu901VWX"),
    ("Authorization: Basic dXNlcjpzdXBlcnNlY3JldDEyMw==", "dXNlcjpzdXBlcnNlY3JldDEyMw=="),
    ("Authorization: token 0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d", "0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d"),
    ("db postgres://admin:Pg-S3cret-99@db.internal:5432/shop", "Pg-S3cret-99"),
    ("see https://bob:HuntEr2Pass@git.example.com/repo.git", "HuntEr2Pass"),
    (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;",
        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA",
    ),
    ("https://acct.blob.core.windows.net/c?sv=2022&sp=r&sig=AbCdEf0123456789GhIjKl%2BmN%3D", "AbCdEf0123456789GhIjKl"),
    ("password=CorrectHorseBattery9", "CorrectHorseBattery9"),
    ('{"api_key": "k3y-Valu3-0000-1111"}', "k3y-Valu3-0000-1111"),
    (json.dumps(json.dumps({"password": "NestedPw!4242"})), "NestedPw!4242"),  # JSON in JSON
    ("client_secret: cs-9f8e7d6c5b4a", "cs-9f8e7d6c5b4a"),
    ("aws_secret_access_key = QwErTyUiOp1234567890AsDfGhJkL", "QwErTyUiOp1234567890AsDfGhJkL"),
    ("refresh_token=rt.9a8b7c6d5e4f3a2b1c0d", "rt.9a8b7c6d5e4f3a2b1c0d"),
]
NOT_SECRETS = [
    "commit 3f9a1c2b4d5e6f708192a3b4c5d6e7f809a1b2c3",  # a git sha (40 lower-case hex)
    "the basic plan for everyone",
    "order ord_1004 shipped 2026-10-21, 129.00 USD",
    "request 123e4567-e89b-12d3-a456-426614174000",
    "https://example.com/docs?page=2",
]


def _strings_in(lake: Path) -> list[str]:
    out = []
    for path in lake.rglob("*.parquet"):
        table = pq.read_table(path)
        for column in table.columns:
            if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
                out += [v for v in column.to_pylist() if v]
            elif pa.types.is_dictionary(column.type):
                out += [str(v) for v in column.to_pylist() if v]
    return out


def _assert_clean(lake: Path) -> None:
    stored = "\n".join(_strings_in(lake))
    assert stored, "nothing was stored"
    left = [secret for _, secret in SHAPES if secret in stored]
    assert not left, f"{len(left)} of {len(SHAPES)} secrets reached the lake: {left}"


def test_the_redactor_removes_every_shape_and_nothing_else() -> None:
    redactor = Redactor()
    for text, secret in SHAPES:
        assert secret not in redactor.redact(text), text
    for text in NOT_SECRETS:
        assert redactor.redact(text) == text


@contextmanager
def _shipped_collector(lake: Path) -> Iterator[Collector]:
    """The collector configured by the repository's otel-config.yaml, on free loopback ports."""
    doc = yaml.safe_load((ROOT / "otel-config.yaml").read_text())
    for proto in doc["receivers"]["otlp"]["protocols"].values():
        proto["endpoint"] = "127.0.0.1:0"
    doc["exporters"]["parquet"]["path"] = str(lake)
    doc["processors"]["memory_limiter"]["limit_mib"] = 65536  # it measures this whole test process
    doc["processors"]["memory_limiter"]["spike_limit_mib"] = 1024
    collector = Collector(parse_config(doc, "otel-config.yaml"))
    collector.start()
    try:
        yield collector
    finally:
        collector.stop()


def test_a_plain_sdk_through_the_shipped_config_stores_no_secret(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    with _shipped_collector(lake) as collector:
        base = f"http://127.0.0.1:{collector.http_port}"
        resource = Resource.create({"service.name": "someone-elses-agent"})
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces")))
        logs = LoggerProvider(resource=resource)
        logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{base}/v1/logs")))
        tracer, logger = provider.get_tracer("other-framework"), logs.get_logger("other-framework")
        for i, (text, _) in enumerate(SHAPES):
            messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}])
            with tracer.start_as_current_span("chat gpt-x") as span:
                span.set_attribute("gen_ai.operation.name", "chat")
                span.set_attribute("gen_ai.input.messages", messages)
                span.add_event("gen_ai.client.inference.operation.details", {"gen_ai.output.messages": messages})
            with tracer.start_as_current_span("execute_tool lookup") as span:
                span.set_attribute("gen_ai.operation.name", "execute_tool")
                span.set_attribute("gen_ai.tool.name", "lookup")
                span.set_attribute("gen_ai.tool.call.arguments", json.dumps({"q": text, "n": i}))
                span.set_attribute("gen_ai.tool.call.result", text)
                span.set_status(trace.Status(trace.StatusCode.ERROR, f"failed: {text}"))
            logger.emit(LogRecord(body={"content": text}, attributes={"event.name": "gen_ai.user.message"}))
        provider.shutdown()
        logs.shutdown()
    _assert_clean(lake)


def test_tracevals_instrumentation_stores_no_secret(tmp_path: Path) -> None:
    lake = tmp_path / "lake"

    @tracevals.tool(effect="read")
    def lookup(query: str) -> str:
        return f"found: {query}"

    telemetry = tracevals.instrument(lake=lake, capture_content=True)
    try:
        with tracevals.session("s-secrets"), tracevals.agent("support"):
            for text, _ in SHAPES:
                lookup(text)
                tracevals.handoff(reason=f"needs a human: {text}", pending=[text])
    finally:
        telemetry.shutdown()
    _assert_clean(lake)
