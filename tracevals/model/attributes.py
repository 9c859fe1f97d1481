"""Every span attribute that tracevals itself defines, as documented constants.

The GenAI keys tracevals emits come from the OpenTelemetry GenAI semantic conventions; the keys below
are tracevals' own, for what those conventions do not cover (runs, attempts, effects, hand-overs).
`docs/attributes.md` lists each one with its meaning; keep the two in step.
"""

from __future__ import annotations

# --- harness: set on the root span of every attempt -------------------------------------------
RUN_ID = "tracevals.run.id"
TASK_ID = "tracevals.task.id"
ATTEMPT = "tracevals.attempt"
VARIANT = "tracevals.variant"
COMMIT = "tracevals.commit"
LOCK_HASH = "tracevals.lock_hash"
SEED = "tracevals.seed"
ATTEMPT_OUTPUT = "tracevals.attempt.output"
ATTEMPT_ERROR = "tracevals.attempt.error"

# --- tools --------------------------------------------------------------------------------------
TOOL_EFFECT = "tracevals.tool.effect"  # read | write | irreversible
RETRY_AFTER_MS = "tracevals.retry_after_ms"  # the wait a failed tool asked for (429 / Retry-After)
RETRYABLE = "tracevals.retryable"  # whether the failure may be retried
IDEMPOTENCY_KEY = "tracevals.idempotency_key"
RETRY_ATTEMPT = "tracevals.retry.attempt"
TOOL_ARGS_HASH = "tracevals.tool.args_hash"  # sha256 prefix of the canonical arguments (not content)
# The log record (event) that carries a tool call's arguments and result in event capture modes; the
# GenAI conventions define one for model calls (gen_ai.client.inference.operation.details) only.
TOOL_CALL_EVENT = "tracevals.tool.call.details"

# The attempt's logical clock (instrumentation/clock.py) at a tool call's start and end, ms: set on tool
# spans inside a harness attempt only; retry_discipline measures backoff with it where both calls have it.
CLOCK_START_MS = "tracevals.clock.start_ms"
CLOCK_END_MS = "tracevals.clock.end_ms"

# --- model calls --------------------------------------------------------------------------------
# The ids and names of the tool calls a model response asked for. Not message content (ids and tool
# names only), so always recorded; they link each execute_tool span to the request that caused it.
REQUESTED_TOOL_CALL_IDS = "tracevals.tool_calls.ids"
REQUESTED_TOOL_CALL_NAMES = "tracevals.tool_calls.names"
# The ids of the tool calls whose results a model request hands the model (chat completions' `tool` messages,
# the Responses API's function call outputs, anthropic's `tool_result` blocks): the calls that ran, whether or
# not a tool span recorded them (a loop that traces only its model calls). Ids only, so always recorded.
ANSWERED_TOOL_CALL_IDS = "tracevals.tool_results.ids"
# First 16 hex digits of sha256 over the canonical JSON of the request's system instructions (anthropic
# `system`, Responses `instructions`, chat messages with role system/developer) and of its `tools`:
# which prompt and which tool set a call ran with, without their content, so always recorded.
REQUEST_SYSTEM_SHA256 = "tracevals.request.system_sha256"
REQUEST_TOOLS_SHA256 = "tracevals.request.tools_sha256"

# --- sessions and hand-overs --------------------------------------------------------------------
SESSION_END = "tracevals.session.end"  # true on the span that closes a session explicitly
SESSION_STATUS = "tracevals.session.status"  # finished | error | … as end_session() was told
HANDOFF_REASON = "tracevals.handoff.reason"
HANDOFF_COMPLETED = "tracevals.handoff.completed"
HANDOFF_PENDING = "tracevals.handoff.pending"
HANDOFF_CANDIDATES = "tracevals.handoff.candidates"

# --- replay and injection (set by the harness) ----------------------------------------------------
REPLAY = "tracevals.replay"  # live | record | replay
INJECTION_KIND = "tracevals.injection.kind"  # fault | prompt
INJECTION_TYPE = "tracevals.injection.type"
INJECTION_ID = "tracevals.injection.id"
INJECTION_GOAL = "tracevals.injection.goal"

TOOL_EFFECTS = ("read", "write", "irreversible")
