"""The OTLP/gRPC receiver: `TraceService/Export` and `LogsService/Export` on a grpcio server.

The servicers subclass the ones generated in opentelemetry-proto, but are registered with a bytes
deserializer: the receiver then decodes the request itself, so malformed protobuf is answered with
INVALID_ARGUMENT (grpcio's own deserializer would answer INTERNAL), and the exact bytes received go
to the write-ahead log without being encoded again. Whatever is the server's (a full queue,
memory, a full disk, shutting down, every stream busy, a fault of ours) is UNAVAILABLE with a
`google.rpc.RetryInfo` (in `grpc-status-details-bin`, and in `google.rpc.retryinfo-bin`, which the Python
SDK exporter reads), so clients back off and retry; only what the client can fix is another status
(INVALID_ARGUMENT, UNAUTHENTICATED). Messages past `max_recv_msg_size_mib` (after decompression) are
refused by grpcio with RESOURCE_EXHAUSTED, without RetryInfo: the same message cannot fit later either.
"""

from __future__ import annotations

import logging
import threading
from concurrent import futures
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from tracevals.collector.auth import bearer_matches
from tracevals.collector.config import ReceiverSettings
from tracevals.collector.otlp_decode import LOGS, TRACES, OTLPDecodeError, decode
from tracevals.collector.pipeline import Pipeline, Throttled

_log = logging.getLogger(__name__)
_SLOT_WAIT = 0.5  # seconds a request waits for a decoding slot before it is told to retry


def _retry_metadata(message: str, seconds: float) -> tuple[tuple[str, bytes], ...]:
    delay = duration_pb2.Duration(seconds=int(seconds), nanos=int((seconds % 1) * 1e9))
    info = error_details_pb2.RetryInfo(retry_delay=delay)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message=message, details=[detail])
    return (
        ("google.rpc.retryinfo-bin", info.SerializeToString()),
        ("grpc-status-details-bin", status.SerializeToString()),
    )


class _Refused(Exception):
    """An answer other than OK: its status, and the delay to offer when the client should retry."""

    def __init__(self, code: grpc.StatusCode, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.code, self.retry_after = code, retry_after


class _Export:
    """The Export logic shared by both services: auth, admission, decode, durable submit."""

    def __init__(self, kind: int, receiver: OTLPGRPCReceiver) -> None:
        self.kind = kind
        self.receiver = receiver

    def export(self, body: bytes, context: grpc.ServicerContext) -> Any:
        try:
            return self._export(body, context)
        except _Refused as exc:
            refused = exc
        except Exception:  # a fault of ours: UNKNOWN (grpcio's answer) is not retried, so data would be lost
            _log.exception("otlp grpc: failed to handle a request (answered UNAVAILABLE)")
            retry_after = self.receiver.pipeline.admission.retry_after
            refused = _Refused(grpc.StatusCode.UNAVAILABLE, "internal error", retry_after)
        if refused.retry_after is not None:
            context.set_trailing_metadata(_retry_metadata(f"{refused}; retry later", refused.retry_after))
        context.abort(refused.code, str(refused) + ("; retry later" if refused.retry_after is not None else ""))

    def _export(self, body: bytes, context: grpc.ServicerContext) -> Any:
        receiver = self.receiver
        token = receiver.settings.bearer_token
        if token is not None:
            given = dict(context.invocation_metadata()).get("authorization", "")
            if not bearer_matches(str(given), token):
                raise _Refused(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        pipeline, admission = receiver.pipeline, receiver.pipeline.admission
        # Requests decoded at once are bounded here, not by grpcio's own limit, whose RESOURCE_EXHAUSTED
        # (without RetryInfo) OTLP exporters need not retry.
        if not receiver.slots.acquire(timeout=_SLOT_WAIT):
            raise _Refused(grpc.StatusCode.UNAVAILABLE, "every stream is busy", admission.retry_after)
        reserved = 0
        try:
            try:
                admission.admit(len(body))
            except Throttled as exc:
                raise _Refused(grpc.StatusCode.UNAVAILABLE, str(exc), exc.retry_after) from None
            reserved = len(body)
            try:
                decoded = decode(self.kind, body, is_json=False)
            except OTLPDecodeError as exc:
                raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
            try:
                pipeline.submit(self.kind, decoded.payload, reserved, decoded.accepted)
            except OSError:  # the write-ahead log cannot store it (disk full ...): nothing is acknowledged
                raise _Refused(grpc.StatusCode.UNAVAILABLE, "cannot store data now", admission.retry_after) from None
            reserved = 0
        finally:
            receiver.slots.release()
            if reserved:
                admission.release(reserved)
        if self.kind == TRACES:
            response = trace_service_pb2.ExportTraceServiceResponse()
            if decoded.rejected:
                response.partial_success.rejected_spans = decoded.rejected
                response.partial_success.error_message = decoded.error
            return response
        logs = logs_service_pb2.ExportLogsServiceResponse()
        if decoded.rejected:
            logs.partial_success.rejected_log_records = decoded.rejected
            logs.partial_success.error_message = decoded.error
        return logs


class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, export: _Export) -> None:
        self._export = export

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._export.export(request, context)


class LogsService(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, export: _Export) -> None:
        self._export = export

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._export.export(request, context)


def _register(server: grpc.Server, service: str, servicer: Any, response_type: Any) -> None:
    handler = grpc.unary_unary_rpc_method_handler(
        servicer.Export,
        request_deserializer=None,  # bytes in: see the module docstring
        response_serializer=response_type.SerializeToString,
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, {"Export": handler}),))


class OTLPGRPCReceiver:
    """Serves OTLP/gRPC on `settings.host:port` until `stop()`."""

    def __init__(self, settings: ReceiverSettings, pipeline: Pipeline, signals: frozenset[str]) -> None:
        self.settings = settings
        self.pipeline = pipeline
        self.signals = signals
        self.slots = threading.BoundedSemaphore(settings.max_concurrent)
        self._server: grpc.Server | None = None
        self.port = 0

    def start(self) -> None:
        s = self.settings
        options = [
            ("grpc.max_receive_message_length", s.max_request_bytes),
            ("grpc.max_send_message_length", 4 * 1024**2),
            ("grpc.so_reuseport", 0),
        ]
        # `slots` bound the requests decoded at once; as many more workers wait for a slot (for _SLOT_WAIT at
        # most, then UNAVAILABLE with RetryInfo), so that the requests past those are refused quickly. No
        # maximum_concurrent_rpcs: grpcio's refusal is a RESOURCE_EXHAUSTED without RetryInfo, which OTLP
        # exporters need not retry (the Go and Java ones and the OTel Collector's do not).
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=2 * s.max_concurrent, thread_name_prefix="tracevals-otlp-grpc"),
            options=options,
        )
        if "traces" in self.signals:
            _register(
                server,
                "opentelemetry.proto.collector.trace.v1.TraceService",
                TraceService(_Export(TRACES, self)),
                trace_service_pb2.ExportTraceServiceResponse,
            )
        if "logs" in self.signals:
            _register(
                server,
                "opentelemetry.proto.collector.logs.v1.LogsService",
                LogsService(_Export(LOGS, self)),
                logs_service_pb2.ExportLogsServiceResponse,
            )
        address = f"{s.host}:{s.port}" if ":" not in s.host else f"[{s.host}]:{s.port}"
        if s.tls is not None:
            ca = s.tls.client_ca_file.read_bytes() if s.tls.client_ca_file else None
            credentials = grpc.ssl_server_credentials(
                [(s.tls.key_file.read_bytes(), s.tls.cert_file.read_bytes())],
                root_certificates=ca,
                require_client_auth=ca is not None,
            )
            self.port = server.add_secure_port(address, credentials)
        else:
            try:
                self.port = server.add_insecure_port(address)
            except RuntimeError:  # grpcio raises rather than returning 0 on a bind failure
                self.port = 0
        if self.port == 0:
            raise OSError(f"cannot listen on {address} (in use?)")
        server.start()
        self._server = server

    def stop(self, grace: float = 5.0) -> None:
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None
