"""`otel-config.yaml`: the collector's configuration, in the OpenTelemetry Collector's format.

Keys are the OTel Collector's where one exists (`receivers.otlp.protocols.grpc.endpoint`,
`processors.memory_limiter.limit_mib`, `processors.batch.send_batch_size`, `extensions.bearertokenauth`,
`service.pipelines`), so a config can move to a Collector fleet later with few edits. tracevals' own
pieces are the `session_sampler` and `redaction` processors (components of `collector/processors/`, whose
table says which processors exist and how their settings read) and the `parquet` exporter. An unknown key
or a bad value is one `CollectorConfigError` naming its path, e.g. `exporters.parquet.compresion: unknown
key; did you mean 'compression'?`. See docs/collector.md for every key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tracevals.collector.config_schema import (
    CollectorConfigError,
    Key,
    choice,
    duration,
    endpoint,
    expand_env,
    integer,
    names,
    section,
    size,
    string,
)
from tracevals.collector.processors import PROCESSORS
from tracevals.lake.lake import Lake
from tracevals.spans.rows import MAX_VALUE_BYTES

__all__ = [
    "Batch",
    "CollectorConfig",
    "CollectorConfigError",
    "MemoryLimiter",
    "ParquetExporter",
    "ReceiverSettings",
    "TLSSettings",
    "load_config",
    "parse_config",
]

COMPRESSIONS = ("none", "snappy", "gzip", "brotli", "lz4", "zstd")
SIGNALS = ("traces", "logs")


@dataclass(frozen=True)
class TLSSettings:
    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None  # set: clients must present a certificate it signed (mTLS)


@dataclass(frozen=True)
class ReceiverSettings:
    """One protocol (grpc or http) of the OTLP receiver."""

    host: str
    port: int
    max_request_bytes: int  # decompressed; past it: HTTP 413 / gRPC RESOURCE_EXHAUSTED
    max_concurrent: int  # gRPC: streams at once (more wait); HTTP: connections at once (more get 429)
    tls: TLSSettings | None = None
    bearer_token: str | None = None
    read_timeout: float = 30.0  # HTTP: the TLS handshake, and then a whole request body, must arrive within it


@dataclass(frozen=True)
class MemoryLimiter:
    check_interval: float = 1.0
    limit_mib: int = 512
    spike_limit_mib: int = 128
    retry_after: float = 1.0  # the delay offered to throttled clients (Retry-After / RetryInfo)


@dataclass(frozen=True)
class Batch:
    send_batch_size: int = 8192
    timeout: float = 1.0


@dataclass(frozen=True)
class ParquetExporter:
    lake: Lake = field(default_factory=lambda: Lake.open("lake"))  # `path`: a directory or an s3:// URL
    compression: str = "zstd"
    compression_level: int | None = None
    max_rows: int = 500_000
    max_bytes: int = 128 * 1024**2
    max_age: float = 30.0
    queue_bytes: int = 64 * 1024**2  # request bytes received but not yet in a Parquet row group
    wal_dir: Path | None = None  # default: <path>/_wal (a local directory; required for an s3:// path)
    wal_reserve_bytes: int | None = None  # free space the log leaves (None: 5 % of the file system, <= 256 MiB)
    max_attribute_value_bytes: int = MAX_VALUE_BYTES  # as the embedded writer's
    shutdown_timeout: float = 20.0  # a stop waits this long for Parquet; the rest stays in the log

    @property
    def wal_path(self) -> Path:
        if self.wal_dir is not None:
            return self.wal_dir
        assert self.lake.local_folder is not None, "a lake on object storage needs wal.dir (checked on load)"
        return self.lake.local_folder / "_wal"


def _lake_path(path: str, base: Path, wal_dir: str | None) -> Lake:
    """`exporters.parquet.path`: a directory (relative to the config file), or an object-store URL, which
    needs a local `wal.dir` (the write-ahead log and the files being finished stay on local disk)."""
    from tracevals.lake.paths import LakeError

    try:
        lake = Lake.open(path if "://" in path else base / path)  # a relative directory: from the config file
    except LakeError as exc:
        raise CollectorConfigError(f"exporters.parquet.path: {exc}") from None
    if lake.local_folder is not None:
        return lake
    if not wal_dir:
        raise CollectorConfigError(
            f"exporters.parquet.wal.dir: required when path is an object-store URL ({path}): a local directory "
            "for the write-ahead log (on a disk that survives a restart)"
        )
    if "://" in wal_dir:
        raise CollectorConfigError(f"exporters.parquet.wal.dir: {wal_dir!r} must be a local directory, not a URL")
    return lake


@dataclass(frozen=True)
class CollectorConfig:
    grpc: ReceiverSettings | None = None
    http: ReceiverSettings | None = None
    memory_limiter: MemoryLimiter | None = None
    batch: Batch = field(default_factory=Batch)
    # signal -> the processor names its pipeline lists, in order (memory_limiter and batch included)
    pipelines: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {s: () for s in SIGNALS})
    # name -> settings, for each processor of `PROCESSORS` that a pipeline lists
    processors: Mapping[str, Any] = field(default_factory=dict)
    exporter: ParquetExporter = field(default_factory=ParquetExporter)
    source: str = "<defaults>"

    @property
    def signals(self) -> frozenset[str]:
        """The signals received: those with a pipeline."""
        return frozenset(self.pipelines)


_TLS = section(
    {
        "cert_file": Key(string, required=True),
        "key_file": Key(string, required=True),
        "client_ca_file": Key(string),
    }
)
_AUTH = section({"authenticator": Key(string, required=True)})
_GRPC = section(
    {
        "endpoint": Key(endpoint, ("127.0.0.1", 4317)),
        "max_recv_msg_size_mib": Key(integer(1, 2047), 4),
        "max_concurrent_streams": Key(integer(1, 10_000), 16),
        "tls": Key(_TLS),
        "auth": Key(_AUTH),
    }
)
_HTTP = section(
    {
        "endpoint": Key(endpoint, ("127.0.0.1", 4318)),
        "max_request_body_size": Key(size(1024), 20 * 1024**2),
        "max_connections": Key(integer(1, 10_000), 64),
        "read_timeout": Key(duration, 30.0),
        "tls": Key(_TLS),
        "auth": Key(_AUTH),
    }
)
_RECEIVERS = section(
    {"otlp": Key(section({"protocols": Key(section({"grpc": Key(_GRPC), "http": Key(_HTTP)}), required=True)}))}
)
_MEMORY_LIMITER = section(
    {
        "check_interval": Key(duration, 1.0),
        "limit_mib": Key(integer(8), 512),
        "spike_limit_mib": Key(integer(0)),
        "retry_after": Key(duration, 1.0),
    }
)
_BATCH = section({"send_batch_size": Key(integer(1), 8192), "timeout": Key(duration, 1.0)})
_ROTATION = section(
    {
        "max_rows": Key(integer(1), 500_000),
        "max_bytes": Key(size(1024), 128 * 1024**2),
        "max_age": Key(duration, 30.0),
    }
)
_PARQUET = section(
    {
        "path": Key(string, required=True),
        "compression": Key(choice(*COMPRESSIONS), "zstd"),
        "compression_level": Key(integer(-7, 22)),
        "rotation": Key(_ROTATION),
        "sending_queue": Key(section({"queue_size": Key(size(1024), 64 * 1024**2)})),
        "wal": Key(section({"dir": Key(string), "reserve": Key(size(0))})),
        "shutdown_timeout": Key(duration, 20.0),
        "max_attribute_value_bytes": Key(size(16), MAX_VALUE_BYTES),
    }
)
_EXPORTERS = section({"parquet": Key(_PARQUET)})
_EXTENSIONS = section({"bearertokenauth": Key(section({"token": Key(string), "filename": Key(string)}))})


def _processors() -> Any:
    """`processors`: memory_limiter and batch, the pipeline's own settings, and each processor of the table
    (read as a config is parsed, so a row added to it is a processor the next config may name)."""
    return section(
        {
            "memory_limiter": Key(_MEMORY_LIMITER),
            "batch": Key(_BATCH),
            **{name: Key(processor.settings) for name, processor in PROCESSORS.items()},
        }
    )


def _service(doc: dict[str, Any]) -> Any:
    def defined(kind: str) -> Any:
        return lambda: list(doc.get(kind) or {})

    pipeline = section(
        {
            "receivers": Key(names(defined("receivers"), "receiver"), required=True),
            "processors": Key(names(defined("processors"), "processor"), []),
            "exporters": Key(names(defined("exporters"), "exporter"), required=True),
        }
    )
    return section(
        {
            "extensions": Key(names(defined("extensions"), "extension"), []),
            "pipelines": Key(section({s: Key(pipeline) for s in SIGNALS}), required=True),
        }
    )


def _tls(raw: dict[str, Any] | None, base: Path) -> TLSSettings | None:
    if raw is None:
        return None
    ca = raw["client_ca_file"]
    return TLSSettings(base / raw["cert_file"], base / raw["key_file"], base / ca if ca else None)


def _token(raw: dict[str, Any], extensions: dict[str, Any], enabled: list[str], path: str, base: Path) -> str | None:
    auth = raw.get("auth")
    if auth is None:
        return None
    name = auth["authenticator"]
    if name != "bearertokenauth" or extensions.get(name) is None:
        raise CollectorConfigError(
            f"{path}.auth.authenticator: {name!r} is not a defined extension (define bearertokenauth)"
        )
    if name not in enabled:
        raise CollectorConfigError(f"service.extensions: add {name!r} to use it in {path}.auth")
    ext = extensions[name]
    token = ext["token"]
    if ext["filename"]:
        try:
            token = (base / ext["filename"]).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise CollectorConfigError(f"extensions.bearertokenauth.filename: cannot read it: {exc.strerror}") from None
    if not token:
        raise CollectorConfigError("extensions.bearertokenauth: set token (e.g. ${env:TRACEVALS_TOKEN}) or filename")
    return str(token)


def parse_config(
    doc: Any, source: str = "<config>", base: Path | None = None, lake: str | None = None
) -> CollectorConfig:
    """Validate a parsed YAML document and build the `CollectorConfig` it describes. `lake` (`tracevals collect
    --lake`, relative to the working directory) replaces `exporters.parquet.path`."""
    base = base or Path.cwd()
    if not isinstance(doc, dict):
        raise CollectorConfigError("the config must be a mapping with receivers, processors, exporters and service")
    doc = expand_env(doc)
    if lake is not None:  # after the expansion: the option's text is a path, whatever characters it holds
        parquet = (doc.get("exporters") or {}).get("parquet")
        if not isinstance(parquet, dict):
            raise CollectorConfigError("--lake: the config has no exporters.parquet whose path it would replace")
        given = lake if "://" in lake else str(Path(lake).absolute())
        doc = {**doc, "exporters": {**doc["exporters"], "parquet": {**parquet, "path": given}}}
    top = section(
        {
            "extensions": Key(_EXTENSIONS),
            "receivers": Key(_RECEIVERS, required=True),
            "processors": Key(_processors()),
            "exporters": Key(_EXPORTERS, required=True),
            "service": Key(_service(doc), required=True),
        }
    )(doc, "")
    pipelines = {s: tuple(p["processors"]) for s, p in top["service"]["pipelines"].items() if p is not None}
    if not pipelines:
        raise CollectorConfigError("service.pipelines: define a traces and/or logs pipeline")
    listed = {name for names in pipelines.values() for name in names}
    procs = top["processors"] or {}
    receivers = _receivers(top, base)
    return CollectorConfig(
        grpc=receivers["grpc"],
        http=receivers["http"],
        memory_limiter=_memory_limiter(procs.get("memory_limiter")) if "memory_limiter" in listed else None,
        # Without the batch processor every request becomes its own row group at once.
        batch=Batch(**(procs.get("batch") or _BATCH({}, ""))) if "batch" in listed else Batch(1, 0.0),
        processors={
            name: procs.get(name) or processor.settings({}, f"processors.{name}")
            for name, processor in PROCESSORS.items()
            if name in listed
        },
        pipelines=pipelines,
        exporter=_exporter(top["exporters"]["parquet"], base),
        source=source,
    )


def _receivers(top: dict[str, Any], base: Path) -> dict[str, ReceiverSettings | None]:
    if top["receivers"]["otlp"] is None:
        raise CollectorConfigError("receivers.otlp: required (protocols: grpc and/or http)")
    protocols = top["receivers"]["otlp"]["protocols"]
    ext, enabled = top["extensions"], top["service"]["extensions"]
    receivers: dict[str, ReceiverSettings | None] = {}
    for proto in ("grpc", "http"):
        raw = protocols.get(proto)
        if raw is None:
            receivers[proto] = None
            continue
        if proto == "grpc":
            limit, concurrent = raw["max_recv_msg_size_mib"] * 1024**2, raw["max_concurrent_streams"]
        else:
            limit, concurrent = raw["max_request_body_size"], raw["max_connections"]
        path = f"receivers.otlp.protocols.{proto}"
        tls, token = _tls(raw["tls"], base), _token(raw, ext, enabled, path, base)
        host, port = raw["endpoint"]
        timeout = raw["read_timeout"] if proto == "http" else 30.0
        receivers[proto] = ReceiverSettings(host, port, limit, concurrent, tls, token, timeout)
    if not any(receivers.values()):
        raise CollectorConfigError("receivers.otlp.protocols: enable grpc and/or http")
    return receivers


def _memory_limiter(raw: dict[str, Any] | None) -> MemoryLimiter:
    ml = raw or _MEMORY_LIMITER({}, "")
    spike = ml["spike_limit_mib"] if ml["spike_limit_mib"] is not None else ml["limit_mib"] // 5
    if spike >= ml["limit_mib"]:
        raise CollectorConfigError("processors.memory_limiter.spike_limit_mib: must be below limit_mib")
    return MemoryLimiter(ml["check_interval"], ml["limit_mib"], spike, ml["retry_after"])


def _exporter(pq: dict[str, Any] | None, base: Path) -> ParquetExporter:
    if pq is None:
        raise CollectorConfigError("exporters.parquet: required (path: the lake directory)")
    rot = pq["rotation"] or _ROTATION({}, "")
    queue, wal = pq["sending_queue"] or {}, pq["wal"] or {}
    return ParquetExporter(
        lake=_lake_path(pq["path"], base, wal.get("dir")),
        compression=pq["compression"],
        compression_level=pq["compression_level"],
        max_rows=rot["max_rows"],
        max_bytes=rot["max_bytes"],
        max_age=rot["max_age"],
        queue_bytes=queue.get("queue_size") or 64 * 1024**2,
        wal_dir=base / wal["dir"] if wal.get("dir") else None,
        wal_reserve_bytes=wal.get("reserve"),
        max_attribute_value_bytes=pq["max_attribute_value_bytes"],
        shutdown_timeout=pq["shutdown_timeout"],
    )


def load_config(path: str | os.PathLike[str], lake: str | None = None) -> CollectorConfig:
    """Read and validate a config file; relative paths in it are relative to the file's folder (`lake`, which
    replaces its lake's path, to the working directory)."""
    file = Path(path)
    try:
        doc = yaml.safe_load(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CollectorConfigError(f"{file}: no such config file") from None
    except yaml.YAMLError as exc:
        raise CollectorConfigError(f"{file}: not valid YAML: {str(exc).splitlines()[0]}") from None
    try:
        return parse_config(doc, str(file), file.resolve().parent, lake)
    except CollectorConfigError as exc:
        raise CollectorConfigError(f"{file}: {exc}") from None
