"""`tracevals collect`: the OTLP collector (gRPC and HTTP in, a durable Parquet lake out)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType

import click

from tracevals import env
from tracevals.collector.config import CollectorConfig, ConfigError, load_config, parse_config
from tracevals.collector.cpus import CpuError, check, parse_cpus, pin

DEFAULT_CONFIG = "otel-config.yaml"
_DEFAULTS = {
    "receivers": {"otlp": {"protocols": {"grpc": None, "http": None}}},
    "processors": {"memory_limiter": None, "batch": None},
    "exporters": {"parquet": {"path": "lake"}},
    "service": {
        "pipelines": {
            signal: {"receivers": ["otlp"], "processors": ["memory_limiter", "batch"], "exporters": ["parquet"]}
            for signal in ("traces", "logs")
        }
    },
}


def _load(config: str | None) -> CollectorConfig:
    try:
        if config is None and not Path(DEFAULT_CONFIG).is_file():
            return parse_config(_DEFAULTS, "<built-in defaults>")
        return load_config(config or DEFAULT_CONFIG)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _describe(config: CollectorConfig, grpc_port: int | None = None, http_port: int | None = None) -> str:
    parts = []
    if config.grpc:
        parts.append(f"otlp/grpc={config.grpc.host}:{grpc_port if grpc_port is not None else config.grpc.port}")
    if config.http:
        parts.append(f"otlp/http={config.http.host}:{http_port if http_port is not None else config.http.port}")
    return f"{' '.join(parts)} signals={','.join(sorted(config.signals))} lake={config.exporter.path}"


@click.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    envvar=env.COLLECTOR_CONFIG,
    help=f"Collector config in the OTel Collector format [default: ./{DEFAULT_CONFIG} if present, else built-in].",
)
@click.option("--validate", is_flag=True, help="Check the config, print what it would run, and exit.")
@click.option(
    "--cpus",
    metavar="LIST",
    help="Run on these CPUs only, as taskset writes them (0, 0-3, 0,2); Linux. One collector process per core, "
    "each pinned to its own, is the efficient deployment (see docs/collector.md).",
)
def collect(config_path: str | None, validate: bool, cpus: str | None) -> None:
    """Receive OTLP traces and logs (gRPC and HTTP) and write them into a Parquet lake.

    \b
    A request is acknowledged once it is in the fsynced write-ahead log (LAKE/_wal/);
    SIGTERM or Ctrl-C stops the receivers and commits everything. See docs/collector.md.
    Examples:
      tracevals collect --config otel-config.yaml
      tracevals collect --config otel-config.yaml --validate
      tracevals collect --config otel-config.yaml --cpus 2
      OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python my_agent.py
    """
    config = _load(config_path)
    try:
        chosen = parse_cpus(cpus) if cpus is not None else None
        if validate:
            if chosen is not None:
                check(chosen)
            click.echo(f"config OK ({config.source}): {_describe(config)}")
            return
        if chosen is not None:
            pin(chosen)  # checks the list, then pins, before the collector starts its threads
    except CpuError as exc:
        raise click.ClickException(str(exc)) from None
    from tracevals.collector.service import Collector  # imported here: --validate stays fast

    collector = Collector(config)
    for warning in collector.warnings():
        click.echo(f"tracevals collect: warning: {warning}", err=True)
    try:
        collector.start()
    except OSError as exc:
        raise click.ClickException(f"cannot start the collector: {exc}") from None
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    stats = collector.pipeline.stats
    if stats.replayed_records:
        click.echo(f"tracevals collect: recovered {stats.replayed_records} requests from the write-ahead log", err=True)
    click.echo(f"tracevals collect: listening {_describe(config, collector.grpc_port, collector.http_port)}", err=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        collector.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo(
        f"tracevals collect: stopped; {stats.spans_accepted} spans and {stats.logs_accepted} log records "
        f"accepted, {collector.pipeline.sink.files_committed} files committed",
        err=True,
    )
