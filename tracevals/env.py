"""Every environment variable tracevals reads, as documented constants (docs/configuration.md lists them).

The OpenTelemetry variables are the SDK's own, honoured as the OTel specification describes them; the
`TRACEVALS_*` ones are tracevals'. Every CLI option that has a variable names it here, so `--help`,
the docs and the code agree on one spelling.
"""

from __future__ import annotations

# --- OpenTelemetry (specification names) -----------------------------------------------------------
OTLP_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
OTLP_TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
OTLP_PROTOCOL = "OTEL_EXPORTER_OTLP_PROTOCOL"
OTLP_TRACES_PROTOCOL = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
OTLP_LOGS_PROTOCOL = "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"
TRACES_EXPORTER = "OTEL_TRACES_EXPORTER"
CAPTURE_MESSAGE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"  # span_only | event_only | ...
DISABLED_INSTRUMENTATIONS = "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"

# --- object storage (the AWS tools' names; read by tracevals.lake.storage for an s3:// lake) ------------
AWS_ENDPOINT_URL_S3 = "AWS_ENDPOINT_URL_S3"
AWS_ENDPOINT_URL = "AWS_ENDPOINT_URL"
AWS_ACCESS_KEY_ID = "AWS_ACCESS_KEY_ID"
AWS_SECRET_ACCESS_KEY = "AWS_SECRET_ACCESS_KEY"
AWS_SESSION_TOKEN = "AWS_SESSION_TOKEN"
AWS_REGION = "AWS_REGION"
AWS_DEFAULT_REGION = "AWS_DEFAULT_REGION"

# --- where things are --------------------------------------------------------------------------------
LAKE = "TRACEVALS_LAKE"  # the lake folder: the embedded writer's default and every command's --lake
TASKS = "TRACEVALS_TASKS"  # a task file (JSONL), for score / report / gate
SCORING_CONFIG = "TRACEVALS_SCORING_CONFIG"
GATE_CONFIG = "TRACEVALS_GATE_CONFIG"
COLLECTOR_CONFIG = "TRACEVALS_COLLECTOR_CONFIG"
PRICES = "TRACEVALS_PRICES"  # a JSON/YAML price table replacing the bundled one (tracevals/model/prices.json)

# --- what a command selects ---------------------------------------------------------------------------
RUN = "TRACEVALS_RUN"
SINCE = "TRACEVALS_SINCE"
UNTIL = "TRACEVALS_UNTIL"
SAMPLE = "TRACEVALS_SAMPLE"
SEED = "TRACEVALS_SEED"
EVALUATORS = "TRACEVALS_EVALUATORS"
IDLE = "TRACEVALS_IDLE"
EMIT_OTLP = "TRACEVALS_EMIT_OTLP"
FORMAT = "TRACEVALS_FORMAT"
STRICT = "TRACEVALS_STRICT"  # 1: an unreadable lake file fails the command instead of being skipped
SNAPSHOT_MB = "TRACEVALS_SNAPSHOT_MB"  # a lake with at most this many MB of span + log files is snapshotted at open
MEMORY_LIMIT = "TRACEVALS_MEMORY_LIMIT"  # DuckDB's memory_limit of each worker of score / export (e.g. 4GB)

# --- runs, leases, compaction and clocks (tracevals.lake.leases, lake.compact, lake.clock) --------------
LEASE_TTL = "TRACEVALS_LEASE_TTL"  # seconds a lease outlives its holder's last heartbeat (default 30)
COMPACT_RETENTION = "TRACEVALS_COMPACT_RETENTION"  # how long merged inputs stay for readers that listed them
CLOCK_SKEW = "TRACEVALS_CLOCK_SKEW"  # how far ahead of the reader's clock a span may start and still count
LATE_WINDOW = "TRACEVALS_LATE_WINDOW"  # how late a session may arrive and still be scored by the next run (1d)

# --- redaction (instrumentation) ------------------------------------------------------------------------
REDACT_PII = "TRACEVALS_REDACT_PII"
REDACT_NAMES = "TRACEVALS_REDACT_NAMES"
REDACT_SALT = "TRACEVALS_REDACT_SALT"

# --- the local web UI (`tracevals ui`) -----------------------------------------------------------------
UI_PORT = "TRACEVALS_UI_PORT"  # the port on 127.0.0.1 (default: a free one)
UI_QUERY_SECONDS = "TRACEVALS_UI_QUERY_SECONDS"  # the time limit of one query of a page (default 10)
UI_ROW_CAP = "TRACEVALS_UI_ROW_CAP"  # the most rows a query returns to a page (default 10,000)
