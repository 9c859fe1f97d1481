"""`Collector`: the pipeline and its OTLP receivers, started and stopped together.

    with Collector(load_config("otel-config.yaml")) as collector:
        print(collector.http_port)

Start replays the write-ahead log (what a killed collector had acknowledged) into Parquet before any
receiver opens; stop closes the receivers first (no new data), then writes and commits everything
queued, so a graceful shutdown (SIGTERM / SIGINT in `tracevals collect`) leaves no log behind.
"""

from __future__ import annotations

import logging
from types import TracebackType

from tracevals.collector.config import CollectorConfig
from tracevals.collector.otlp_grpc import OTLPGRPCReceiver
from tracevals.collector.otlp_http import OTLPHTTPReceiver
from tracevals.collector.pipeline import Pipeline

_log = logging.getLogger(__name__)
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class Collector:
    """The collector of one `CollectorConfig`; `start()` / `stop()` or a `with` block."""

    def __init__(self, config: CollectorConfig) -> None:
        self.config = config
        self.pipeline = Pipeline(config)
        self.grpc = OTLPGRPCReceiver(config.grpc, self.pipeline, config.signals) if config.grpc else None
        self.http = OTLPHTTPReceiver(config.http, self.pipeline, config.signals) if config.http else None
        self._started = False

    @property
    def grpc_port(self) -> int | None:
        return self.grpc.port if self.grpc else None

    @property
    def http_port(self) -> int | None:
        return self.http.port if self.http else None

    def warnings(self) -> list[str]:
        """Risky settings worth a line at start-up (an open port without TLS or a token)."""
        out = []
        for name, settings in (("grpc", self.config.grpc), ("http", self.config.http)):
            if settings and settings.host not in LOOPBACK and (settings.tls is None or settings.bearer_token is None):
                out.append(
                    f"receivers.otlp.protocols.{name} listens on {settings.host}, beyond this machine, "
                    f"without {'TLS' if settings.tls is None else 'a bearer token'}"
                )
        return out

    def start(self) -> None:
        self.pipeline.start()
        self._started = True
        try:
            if self.grpc:
                self.grpc.start()
            if self.http:
                self.http.start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> bool:
        """Stop receiving, then flush and commit everything acknowledged (idempotent). False if that did not
        finish within the exporter's shutdown_timeout (a full disk): the rest stays in the write-ahead log,
        and the next start writes it."""
        if self.http:
            self.http.stop()
        if self.grpc:
            self.grpc.stop()
        finished = True
        if self._started:
            finished = self.pipeline.close()
            self._started = False
        return finished

    def __enter__(self) -> Collector:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
