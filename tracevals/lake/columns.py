"""The lake's tables as plain data: their folders and columns (name, type, nullable), without pyarrow.

`tracevals.lake.schema` builds the Arrow schemas every writer uses from these definitions, and the readers
that need only names and SQL types (`queries.sources`: a column an older file lacks reads as NULL of its
type) take them from here: a command that only queries a local lake never imports pyarrow (~0.1 s of
`tracevals sql`). A type is one of `SQL_TYPES`' keys.
"""

from __future__ import annotations

LAKE_FORMAT_VERSION = 1
SPANS_DIR = "spans"
LOGS_DIR = "logs"
# Tables derived from closed hours at compaction (`queries.derived`), written under the compaction lock.
DERIVED_DIR = "derived/batch"
SCORES_DIR = "scores"
STEP_RELIABILITY_DIR = "step_reliability"

Column = tuple[str, str] | tuple[str, str, bool]  # (name, type, nullable: True when left out)

#: Each column type as DuckDB names it (timestamps are UTC nanoseconds in the files).
SQL_TYPES = {
    "string": "VARCHAR",
    "int64": "BIGINT",
    "int32": "INTEGER",
    "float64": "DOUBLE",
    "bool": "BOOLEAN",
    "strings": "VARCHAR[]",
    "timestamp": "TIMESTAMPTZ_NS",
}

# Columns copied from the span as it was received.
RAW_COLUMNS: tuple[Column, ...] = (
    ("trace_id", "string", False),  # 32 lowercase hex digits
    ("span_id", "string", False),  # 16 lowercase hex digits
    ("parent_span_id", "string"),
    ("name", "string", False),
    ("span_kind", "string"),  # internal | server | client | producer | consumer
    ("start_time", "timestamp", False),
    ("end_time", "timestamp"),
    ("duration_ms", "float64"),
    ("status_code", "string"),  # unset | ok | error
    ("status_message", "string"),
    ("attributes", "string"),  # JSON object
    ("resource_attributes", "string"),  # JSON object
    ("scope_name", "string"),
    ("scope_version", "string"),
    ("events", "string"),  # JSON array of {name, time_unix_nano, attributes}
    ("links", "string"),  # JSON array of {trace_id, span_id, attributes}
    ("service_name", "string"),
)

# Canonical columns, filled by the normalizer of `tracevals.spans` (see its NORMALIZER_VERSION).
CANONICAL_COLUMNS: tuple[Column, ...] = (
    ("dialect", "string"),  # genai | genai_legacy | openinference | openllmetry | none
    ("normalizer_version", "int32"),
    ("kind", "string"),  # llm | tool | agent | chain | handoff | session_end | other
    ("operation", "string"),
    ("session_id", "string"),
    ("agent_name", "string"),
    ("provider", "string"),
    ("model", "string"),
    ("input_tokens", "int64"),
    ("output_tokens", "int64"),
    ("tool_name", "string"),
    ("tool_call_id", "string"),
    ("tool_args", "string"),  # JSON text when captured
    ("tool_result", "string"),
    ("tool_effect", "string"),  # read | write | irreversible
    ("tool_args_hash", "string"),
    ("error_type", "string"),
    ("run_id", "string"),
    ("task_id", "string"),
    ("attempt", "int64"),
    ("variant", "string"),
    # Facts (normalizer version 5): typed copies of attributes the views read on every span, so that they
    # need not parse the attributes JSON (rows of older files have them NULL; the views read the JSON).
    ("http_status_code", "int64"),  # http.response.status_code
    ("retry_after_ms", "float64"),  # tracevals.retry_after_ms
    ("retryable", "bool"),  # tracevals.retryable
    ("retry_attempt", "int64"),  # tracevals.retry.attempt
    ("idempotency_key", "string"),  # tracevals.idempotency_key
    ("replay", "string"),  # tracevals.replay
    ("requested_tool_call_ids", "strings"),  # tracevals.tool_calls.ids
    ("requested_tool_names", "strings"),  # tracevals.tool_calls.names
    ("answered_tool_call_ids", "strings"),  # tracevals.tool_results.ids (normalizer 13)
    ("response_id", "string"),  # gen_ai.response.id (normalizer 13)
    ("reported_cost_usd", "float64"),  # gen_ai.usage.cost, else llm.cost.total
    ("entity_name", "string"),  # traceloop.entity.name
    ("commit_hash", "string"),  # tracevals.commit
    ("lock_hash", "string"),  # tracevals.lock_hash
    ("attempt_output", "string"),  # tracevals.attempt.output
    ("attempt_error", "string"),  # tracevals.attempt.error
    ("session_status", "string"),  # tracevals.session.status
    ("has_message_attributes", "bool"),  # a key under which message content can be
)

# One row per (target, evaluator): written by `tracevals.scoring` to LAKE/scores/.
SCORE_COLUMNS: tuple[Column, ...] = (
    ("trace_id", "string"),
    ("session_id", "string"),
    ("run_id", "string"),
    ("task_id", "string"),
    ("attempt", "int64"),
    ("variant", "string"),
    ("evaluator", "string", False),
    ("evaluator_version", "int32"),
    ("passed", "bool"),
    ("score", "float64"),
    ("reason", "string"),
    ("details", "string"),  # JSON object
    ("scored_at", "timestamp"),
)

# One row per (run, variant, task, expected step): per-step reliability as `tracevals.stats.steps` computes
# it, written to LAKE/step_reliability/ when a run is scored (the `step_reliability` view reads it).
STEP_RELIABILITY_COLUMNS: tuple[Column, ...] = (
    ("run_id", "string"),
    ("variant", "string"),
    ("task_id", "string"),
    ("step", "int64"),  # 1-based position in the expected trajectory
    ("tool", "string"),
    ("attempts", "int64"),
    ("reached", "int64"),
    ("called", "int64"),
    ("right_args", "int64"),
    ("succeeded", "int64"),
    ("rate", "float64"),  # succeeded / reached
    ("diverged_here", "int64"),  # attempts whose calls first left the path at this step
    ("product_of_rates", "float64"),  # the task's: every step's rate multiplied
    ("end_to_end", "float64"),  # the task's pass rate
    ("computed_at", "timestamp"),
)

# One row per OTLP log record: written to LAKE/logs/date=…/hour=…/. GenAI instrumentations in
# `event_only` mode put message content here (`gen_ai.client.inference.operation.details`), joined
# to its span by (trace_id, span_id).
LOG_COLUMNS: tuple[Column, ...] = (
    ("trace_id", "string"),
    ("span_id", "string"),
    ("time", "timestamp"),  # the record's time, else its observed time
    ("observed_time", "timestamp"),
    ("event_name", "string"),
    ("severity_number", "int32"),
    ("severity_text", "string"),
    ("body", "string"),  # JSON value
    ("attributes", "string"),  # JSON object
    ("resource_attributes", "string"),
    ("scope_name", "string"),
    ("service_name", "string"),
)

SPAN_COLUMNS = RAW_COLUMNS + CANONICAL_COLUMNS
#: The columns of each table, by folder.
COLUMNS = {
    SPANS_DIR: SPAN_COLUMNS,
    LOGS_DIR: LOG_COLUMNS,
    SCORES_DIR: SCORE_COLUMNS,
    STEP_RELIABILITY_DIR: STEP_RELIABILITY_COLUMNS,
}


def sql_columns(columns: tuple[Column, ...]) -> list[tuple[str, str]]:
    """(name, DuckDB type) of each column."""
    return [(c[0], SQL_TYPES[c[1]]) for c in columns]
