"""Acceptance: Node.js's real OTLP exporters deliver every span and log record to `tracevals collect`
started with the shipped `otel-config.yaml` (its endpoints on free loopback ports, its lake in a temporary
folder; nothing else changed); DuckDB counts them in the lake.

Over HTTP the Node exporters always send `Transfer-Encoding: chunked` bodies (JSON or protobuf, gzip or
not): the collector used to answer them `411 Length Required`, which the exporter does not retry, so a
TypeScript service lost every span with no error on the collector's side. The packages are pinned in
tests/node/package-lock.json and installed by `make test` (scripts/install-node-exporters.sh); without them
this test skips, and fails in CI (TRACEVALS_REQUIRE_NODE=1).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from fixtures.faults import CollectorProcess
from fixtures.node_exporters import send

pytestmark = pytest.mark.needs("node")
ROOT = Path(__file__).resolve().parents[1]
COUNT = 20  # items a sender sends: three exports of up to 8, over one kept-alive connection
CASES = [
    ("http-json", "none"),
    ("http-json", "gzip"),
    ("http-proto", "none"),
    ("http-proto", "gzip"),
    ("grpc", "none"),
    ("grpc", "gzip"),
    ("logs-http-json", "gzip"),
    ("logs-http-proto", "none"),
]


@pytest.fixture(scope="module")
def delivered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    """Every sender run to its end (all at once, one node process) against one collector, which is then
    stopped (SIGTERM commits)."""
    workdir = tmp_path_factory.mktemp("node-exporters")
    doc = yaml.safe_load((ROOT / "otel-config.yaml").read_text())
    for protocol in ("grpc", "http"):
        doc["receivers"]["otlp"]["protocols"][protocol]["endpoint"] = "127.0.0.1:0"
    doc["exporters"]["parquet"]["path"] = str(workdir / "lake")
    config = workdir / "otel-config.yaml"
    config.write_text(yaml.safe_dump(doc))
    collector = CollectorProcess(config)
    try:
        urls = {
            "http-json": f"http://127.0.0.1:{collector.http_port}/v1/traces",
            "http-proto": f"http://127.0.0.1:{collector.http_port}/v1/traces",
            "grpc": f"http://127.0.0.1:{collector.grpc_port}",
            "logs-http-json": f"http://127.0.0.1:{collector.http_port}/v1/logs",
            "logs-http-proto": f"http://127.0.0.1:{collector.http_port}/v1/logs",
        }
        results = send(
            [{"exporter": e, "url": urls[e], "compression": c, "spans": COUNT, "service": f"{e}-{c}"} for e, c in CASES]
        )
    finally:
        code = collector.stop(signal.SIGTERM)
    assert code == 0, "".join(collector.log)
    return workdir / "lake", results


@pytest.mark.parametrize(("exporter", "compression"), CASES)
def test_every_item_a_node_exporter_sends_lands_in_the_lake(
    delivered: tuple[Path, dict[str, dict[str, Any]]], exporter: str, compression: str
) -> None:
    lake, results = delivered
    service = f"{exporter}-{compression}"
    result = results[service]
    exports = result["results"]
    assert [e["code"] for e in exports] == [0] * len(exports), result  # 0: ExportResultCode.SUCCESS
    assert sum(e["items"] for e in exports) == COUNT and len(exports) >= 2, result
    if exporter.startswith("logs-"):
        rows = duckdb.execute(
            f"SELECT body, attributes FROM read_parquet('{lake}/logs/**/*.parquet', hive_partitioning = true) "
            "WHERE service_name = ?",
            [service],
        ).fetchall()
        landed = sorted(body for body, _ in rows)
        assert landed == sorted(f'"{text}"' for text in result["sent"])  # bodies are JSON values
    else:
        rows = duckdb.execute(
            f"SELECT trace_id || ':' || span_id, name, attributes FROM read_parquet('{lake}/spans/**/*.parquet', "
            "hive_partitioning = true) WHERE service_name = ?",
            [service],
        ).fetchall()
        assert sorted(key for key, _, _ in rows) == sorted(result["sent"])
        assert sorted(name for _, name, _ in rows) == sorted(f"chat step {i}" for i in range(COUNT))
    # a string the application cut inside a surrogate pair (send.cjs's CUT): every exporter's request gets in
    # (a lone surrogate escaped in JSON was a 400, the batch dropped), the character read as U+FFFD by all
    assert {json.loads(attributes)["text.cut"] for *_, attributes in rows} == {"tool said \ufffd"}
