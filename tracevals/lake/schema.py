"""The lake's span table: one row per span, lossless, plus canonical columns from the normalizer.

Attribute maps (span, resource, event and link attributes) are stored as JSON text with their
values' types kept (string, int, float, bool, arrays, maps): every engine can read JSON, and DuckDB
queries it with `->>` / `json_extract`. Canonical columns are derived, never the only copy.
"""

from __future__ import annotations

import array
import itertools
import struct

import pyarrow as pa

LAKE_FORMAT_VERSION = 1
SPANS_DIR = "spans"
LOGS_DIR = "logs"
# Tables derived from closed hours at compaction (`queries.derived`), written under the compaction lock.
DERIVED_DIR = "derived/batch"
SCORES_DIR = "scores"

_TS = pa.timestamp("ns", tz="UTC")

# Columns copied from the span as it was received.
RAW_FIELDS = [
    pa.field("trace_id", pa.string(), nullable=False),  # 32 lowercase hex digits
    pa.field("span_id", pa.string(), nullable=False),  # 16 lowercase hex digits
    pa.field("parent_span_id", pa.string()),
    pa.field("name", pa.string(), nullable=False),
    pa.field("span_kind", pa.string()),  # internal | server | client | producer | consumer
    pa.field("start_time", _TS, nullable=False),
    pa.field("end_time", _TS),
    pa.field("duration_ms", pa.float64()),
    pa.field("status_code", pa.string()),  # unset | ok | error
    pa.field("status_message", pa.string()),
    pa.field("attributes", pa.string()),  # JSON object
    pa.field("resource_attributes", pa.string()),  # JSON object
    pa.field("scope_name", pa.string()),
    pa.field("scope_version", pa.string()),
    pa.field("events", pa.string()),  # JSON array of {name, time_unix_nano, attributes}
    pa.field("links", pa.string()),  # JSON array of {trace_id, span_id, attributes}
    pa.field("service_name", pa.string()),
]

# Canonical columns, filled by the normalizer of `tracevals.spans` (see its NORMALIZER_VERSION).
CANONICAL_FIELDS = [
    pa.field("dialect", pa.string()),  # genai | genai_legacy | openinference | openllmetry | none
    pa.field("normalizer_version", pa.int32()),
    pa.field("kind", pa.string()),  # llm | tool | agent | chain | handoff | session_end | other
    pa.field("operation", pa.string()),
    pa.field("session_id", pa.string()),
    pa.field("agent_name", pa.string()),
    pa.field("provider", pa.string()),
    pa.field("model", pa.string()),
    pa.field("input_tokens", pa.int64()),
    pa.field("output_tokens", pa.int64()),
    pa.field("tool_name", pa.string()),
    pa.field("tool_call_id", pa.string()),
    pa.field("tool_args", pa.string()),  # JSON text when captured
    pa.field("tool_result", pa.string()),
    pa.field("tool_effect", pa.string()),  # read | write | irreversible
    pa.field("tool_args_hash", pa.string()),
    pa.field("error_type", pa.string()),
    pa.field("run_id", pa.string()),
    pa.field("task_id", pa.string()),
    pa.field("attempt", pa.int64()),
    pa.field("variant", pa.string()),
    # Facts (normalizer version 5): typed copies of attributes the views read on every span, so that they
    # need not parse the attributes JSON (rows of older files have them NULL; the views read the JSON).
    pa.field("http_status_code", pa.int64()),  # http.response.status_code
    pa.field("retry_after_ms", pa.float64()),  # tracevals.retry_after_ms
    pa.field("retryable", pa.bool_()),  # tracevals.retryable
    pa.field("retry_attempt", pa.int64()),  # tracevals.retry.attempt
    pa.field("idempotency_key", pa.string()),  # tracevals.idempotency_key
    pa.field("replay", pa.string()),  # tracevals.replay
    pa.field("requested_tool_call_ids", pa.list_(pa.string())),  # tracevals.tool_calls.ids
    pa.field("requested_tool_names", pa.list_(pa.string())),  # tracevals.tool_calls.names
    pa.field("reported_cost_usd", pa.float64()),  # gen_ai.usage.cost, else llm.cost.total
    pa.field("entity_name", pa.string()),  # traceloop.entity.name
    pa.field("commit_hash", pa.string()),  # tracevals.commit
    pa.field("lock_hash", pa.string()),  # tracevals.lock_hash
    pa.field("attempt_output", pa.string()),  # tracevals.attempt.output
    pa.field("attempt_error", pa.string()),  # tracevals.attempt.error
    pa.field("session_status", pa.string()),  # tracevals.session.status
    pa.field("has_message_attributes", pa.bool_()),  # a key under which message content can be
]

SPAN_SCHEMA = pa.schema(
    RAW_FIELDS + CANONICAL_FIELDS,
    metadata={b"tracevals.lake_format_version": str(LAKE_FORMAT_VERSION).encode()},
)

# One row per (target, evaluator): written by `tracevals.scoring` to LAKE/scores/.
SCORE_SCHEMA = pa.schema(
    [
        pa.field("trace_id", pa.string()),
        pa.field("session_id", pa.string()),
        pa.field("run_id", pa.string()),
        pa.field("task_id", pa.string()),
        pa.field("attempt", pa.int64()),
        pa.field("variant", pa.string()),
        pa.field("evaluator", pa.string(), nullable=False),
        pa.field("evaluator_version", pa.int32()),
        pa.field("passed", pa.bool_()),
        pa.field("score", pa.float64()),
        pa.field("reason", pa.string()),
        pa.field("details", pa.string()),  # JSON object
        pa.field("scored_at", _TS),
    ],
    metadata={b"tracevals.lake_format_version": str(LAKE_FORMAT_VERSION).encode()},
)

# One row per (run, variant, task, expected step): per-step reliability as `tracevals.stats.steps` computes
# it, written to LAKE/step_reliability/ when a run is scored (the `step_reliability` view reads it).
STEP_RELIABILITY_DIR = "step_reliability"
STEP_RELIABILITY_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string()),
        pa.field("variant", pa.string()),
        pa.field("task_id", pa.string()),
        pa.field("step", pa.int64()),  # 1-based position in the expected trajectory
        pa.field("tool", pa.string()),
        pa.field("attempts", pa.int64()),
        pa.field("reached", pa.int64()),
        pa.field("called", pa.int64()),
        pa.field("right_args", pa.int64()),
        pa.field("succeeded", pa.int64()),
        pa.field("rate", pa.float64()),  # succeeded / reached
        pa.field("diverged_here", pa.int64()),  # attempts whose calls first left the path at this step
        pa.field("product_of_rates", pa.float64()),  # the task's: every step's rate multiplied
        pa.field("end_to_end", pa.float64()),  # the task's pass rate
        pa.field("computed_at", _TS),
    ],
    metadata={b"tracevals.lake_format_version": str(LAKE_FORMAT_VERSION).encode()},
)

# One row per OTLP log record: written to LAKE/logs/date=…/hour=…/. GenAI instrumentations in
# `event_only` mode put message content here (`gen_ai.client.inference.operation.details`), joined
# to its span by (trace_id, span_id).
LOG_SCHEMA = pa.schema(
    [
        pa.field("trace_id", pa.string()),
        pa.field("span_id", pa.string()),
        pa.field("time", _TS),  # the record's time, else its observed time
        pa.field("observed_time", _TS),
        pa.field("event_name", pa.string()),
        pa.field("severity_number", pa.int32()),
        pa.field("severity_text", pa.string()),
        pa.field("body", pa.string()),  # JSON value
        pa.field("attributes", pa.string()),  # JSON object
        pa.field("resource_attributes", pa.string()),
        pa.field("scope_name", pa.string()),
        pa.field("service_name", pa.string()),
    ],
    metadata={b"tracevals.lake_format_version": str(LAKE_FORMAT_VERSION).encode()},
)


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of `schema` with no rows. (`pa.Schema.empty_table()` imports pandas, ~0.4 s that a command
    reading a small lake would otherwise pay for an empty relation.)"""
    return pa.Table.from_batches([], schema=schema)


def int64_scalar(value: int) -> pa.Scalar:
    """An int64 scalar from its bytes. `pa.scalar` (and a Python int given to a compute function) imports
    pandas whenever it is installed (~0.2 s); this runs in agents' processes too, where `lake.arrow`'s
    Polars is not imported."""
    return pa.Array.from_buffers(pa.int64(), 1, [None, pa.py_buffer(struct.pack("<q", value))])[0]


def string_array(texts: list[str]) -> pa.Array:
    """Python strings (no null) as an Arrow string array from its buffers (see `int64_scalar`)."""
    encoded = [t.encode() for t in texts]
    offsets = array.array("q", [0, *itertools.accumulate(len(e) for e in encoded)])
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.large_string(), len(encoded), buffers).cast(pa.string())


class ColumnMismatch(ValueError):
    """A column that cannot be read as its schema's type (`conformed_columns`)."""

    def __init__(self, name: str, found: pa.DataType, wanted: pa.DataType) -> None:
        super().__init__(f"column {name} is {found}, not {wanted}")
        self.name = name


def conformed_columns(table: pa.Table, schema: pa.Schema) -> list[pa.ChunkedArray | pa.Array]:
    """The columns of `schema`, in order and of its types, from `table`: dictionary columns decoded, large
    strings, timestamps of another unit (or int64 nanoseconds, as Spark's `nanosAsLong` reads them) and a
    `date` read as text cast; a column `table` lacks (an older file) is null; extra columns are left out.
    Raises `ColumnMismatch` for a column that cannot be cast. What every reader of rows from elsewhere
    (an engine's partition, a file live scoring reads) does to them."""
    import pyarrow.compute as pc

    columns: list[pa.ChunkedArray | pa.Array] = []
    for f in schema:
        if f.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, f.type))
            continue
        column = found = table.column(f.name)
        try:
            if pa.types.is_dictionary(column.type):
                column = column.cast(column.type.value_type)
            if column.type != f.type:
                if pa.types.is_large_string(column.type):
                    column = column.cast(pa.string())
                if f.name == "date" and pa.types.is_string(column.type):
                    column = pc.strptime(column, format="%Y-%m-%d", unit="s").cast(pa.date32())
                column = column.cast(f.type)
        except (pa.ArrowException, ValueError):
            raise ColumnMismatch(f.name, found.type, f.type) from None
        columns.append(column)
    return columns
