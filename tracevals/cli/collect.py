"""`tracevals collect`: the OTLP collector (gRPC and HTTP in, a durable Parquet lake out)."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import click

from tracevals import env
from tracevals.cli.shared.output import echo, file_option, format_option, print_rows
from tracevals.collector.config import CollectorConfig, CollectorConfigError, load_config, parse_config
from tracevals.collector.cpus import CpuError, check, parse_cpus, pin
from tracevals.lake.paths import LakeError
from tracevals.model.json_text import json_text
from tracevals.model.signals import taken_here

DEFAULT_CONFIG = "otel-config.yaml"
_DEFAULTS = {
    "receivers": {"otlp": {"protocols": {"grpc": None, "http": None}}},
    "processors": {"memory_limiter": None, "batch": None},
    "exporters": {"parquet": {"path": f"${{env:{env.LAKE}:-lake}}"}},  # as every other command's --lake
    "service": {
        "pipelines": {
            signal: {"receivers": ["otlp"], "processors": ["memory_limiter", "batch"], "exporters": ["parquet"]}
            for signal in ("traces", "logs")
        }
    },
}


def _load(config: str | None, lake: str | None = None) -> CollectorConfig:
    try:
        if config is None and not Path(DEFAULT_CONFIG).is_file():
            return parse_config(_DEFAULTS, "<built-in defaults>", lake=lake)
        return load_config(config or DEFAULT_CONFIG, lake)
    except CollectorConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _describe(config: CollectorConfig, grpc_port: int | None = None, http_port: int | None = None) -> str:
    parts = []
    if config.grpc:
        parts.append(f"otlp/grpc={config.grpc.host}:{grpc_port if grpc_port is not None else config.grpc.port}")
    if config.http:
        parts.append(f"otlp/http={config.http.host}:{http_port if http_port is not None else config.http.port}")
    return f"{' '.join(parts)} signals={','.join(sorted(config.signals))} lake={config.exporter.lake}"


@click.command()
@file_option(
    "--config",
    "config_path",
    f"Collector config in the OTel Collector format [default: ./{DEFAULT_CONFIG} if present, else built-in].",
    envvar=env.COLLECTOR_CONFIG,
    exists=False,
)
@click.option(
    "--lake",
    metavar="LAKE",
    help="The lake to write, in place of the config's exporters.parquet.path (a folder, or s3://bucket/prefix). "
    f"Without a config file the lake is ${env.LAKE}, else ./lake, as for every other command.",
)
@click.option("--validate", is_flag=True, help="Check the config, print what it would run, and exit.")
@click.option(
    "--cpus",
    metavar="LIST",
    help="Run on these CPUs only, as taskset writes them (0, 0-3, 0,2); Linux. One collector process per core, "
    "each pinned to its own, is the efficient deployment (see docs/collector.md).",
)
@format_option()
def collect(config_path: str | None, lake: str | None, validate: bool, cpus: str | None, fmt: str) -> None:
    """Receive OTLP traces and logs (gRPC and HTTP) and write them into a Parquet lake.

    \b
    A request is acknowledged once it is in the fsynced write-ahead log (LAKE/_wal/);
    SIGTERM or Ctrl-C stops the receivers and commits everything. See docs/collector.md.
    Examples:
      tracevals collect --config otel-config.yaml
      tracevals collect --config otel-config.yaml --validate
      tracevals collect --lake /data/lake   # the built-in config (loopback ports), this lake
      tracevals collect --config otel-config.yaml --cpus 2
      tracevals collect --format json   # listening / stopped as JSON lines on stdout (ports, counts)
      OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python my_agent.py
    """
    config = _load(config_path, lake)
    try:
        chosen = parse_cpus(cpus) if cpus is not None else None
        if validate:
            if chosen is not None:
                check(chosen)
            ok = {"event": "config_ok", **_fields(config)}
            _say(fmt, ok, f"config OK ({config.source}): {_describe(config)}", err=False)
            return
        if chosen is not None:
            pin(chosen)  # checks the list, then pins, before the collector starts its threads
    except CpuError as exc:
        raise click.ClickException(str(exc)) from None
    from tracevals.collector.admission import fewer_malloc_arenas
    from tracevals.collector.service import Collector  # imported here: --validate stays fast

    fewer_malloc_arenas()  # this process is the collector's own: before any of its threads
    collector = Collector(config)
    for warning in collector.warnings():
        echo(f"tracevals collect: warning: {warning}", err=True)
    try:
        collector.start()
    except (OSError, LakeError) as exc:
        raise click.ClickException(f"cannot start the collector: {exc}") from None
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in taken_here()}  # Ctrl-C, SIGTERM, SIGHUP
    stats = collector.pipeline.stats
    if collector.pipeline.segments_to_replay:
        click.echo(
            f"tracevals collect: writing {collector.pipeline.segments_to_replay} segment(s) of the previous run's "
            "write-ahead log to Parquet, while receiving",
            err=True,
        )
    listening = {"event": "listening", **_fields(config, collector.grpc_port, collector.http_port)}
    _say(fmt, listening, f"tracevals collect: listening {_describe(config, collector.grpc_port, collector.http_port)}")
    finished = True
    try:
        while not stop.wait(0.5):
            pass
    finally:
        finished = collector.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    stopped = {
        "event": "stopped",
        "spans_accepted": stats.spans_accepted,
        "logs_accepted": stats.logs_accepted,
        "files_committed": collector.pipeline.sink.files_committed,
        "all_written": finished,
    }
    left = "" if finished else "; the rest stays in the write-ahead log and the next start writes it"
    _say(
        fmt,
        stopped,
        f"tracevals collect: stopped; {stats.spans_accepted} spans and {stats.logs_accepted} log records "
        f"accepted, {collector.pipeline.sink.files_committed} files committed{left}",
    )


def _say(fmt: str, record: dict[str, Any], text: str, err: bool = True) -> None:
    """What the collector tells its operator: a line of text on stderr, or (`--format json|csv`) the same
    facts as data on stdout, one JSON object (or CSV row with its header) per event, flushed at once."""
    if fmt == "json":
        click.echo(json_text(record))
    elif fmt == "csv":
        print_rows(list(record), [list(record.values())], "csv")
    else:
        click.echo(text, err=err)
    sys.stdout.flush()


def _fields(config: Any, grpc_port: int | None = None, http_port: int | None = None) -> dict[str, Any]:
    def address(receiver: Any, port: int | None) -> str | None:
        return None if receiver is None else f"{receiver.host}:{port if port is not None else receiver.port}"

    return {
        "config": str(config.source),
        "grpc": address(config.grpc, grpc_port),
        "http": address(config.http, http_port),
        "signals": ",".join(sorted(config.signals)),
        "lake": str(config.exporter.lake),
    }
