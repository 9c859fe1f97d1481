"""A collector on free loopback ports with a temporary lake: for tests, benchmarks and examples.

with running_collector(tmp_path / "lake") as collector:
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces")
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tracevals.collector.config import CollectorConfig, parse_config
from tracevals.collector.service import Collector


def config_document(path: str | Path, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An `otel-config.yaml` document on ports 0 (free ones) writing into the lake at `path` (the config's
    `exporters.parquet.path`, as a user writes it); `overrides` merge in."""
    doc: dict[str, Any] = {
        "receivers": {
            "otlp": {"protocols": {"grpc": {"endpoint": "127.0.0.1:0"}, "http": {"endpoint": "127.0.0.1:0"}}}
        },
        # The memory limiter measures this whole process; an in-process collector shares it with its
        # host (a test run, a benchmark), whose own memory must not make the collector refuse data.
        "processors": {
            "memory_limiter": {"limit_mib": 65536, "spike_limit_mib": 1024},
            "batch": {"send_batch_size": 8192, "timeout": "200ms"},
        },
        "exporters": {"parquet": {"path": str(path)}},
        "service": {
            "pipelines": {
                s: {"receivers": ["otlp"], "processors": ["memory_limiter", "batch"], "exporters": ["parquet"]}
                for s in ("traces", "logs")
            }
        },
    }
    return _merge(doc, overrides or {})


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def local_config(path: str | Path, overrides: Mapping[str, Any] | None = None) -> CollectorConfig:
    return parse_config(config_document(path, overrides), "<local>")


@contextmanager
def running_collector(path: str | Path, overrides: Mapping[str, Any] | None = None) -> Iterator[Collector]:
    """A started collector (see `config_document`), stopped — and so flushed — on exit."""
    collector = Collector(local_config(path, overrides))
    collector.start()
    try:
        yield collector
    finally:
        collector.stop()
