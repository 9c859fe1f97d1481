"""The synthetic lake of bench/queries_scale.py (and others): GenAI-shaped spans in the lake's real format.

Ten spans per session, one trace per session (`build_lake`): an `invoke_agent` root with the harness
keys, four `chat` calls, four `execute_tool` calls (1 session in 16 retries a 429, 1 in 128 asks for a
tool that never runs: a gap), a `session.end` marker; content capture off, tracevals.tool_calls.ids /
.names and argument hashes on. `naive_trajectories` is the same reconstruction as the views, done the
obvious way in Python: the baseline the views are measured against.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tracevals.lake.schema import SPAN_SCHEMA, SPANS_DIR  # noqa: E402
from tracevals.lake.writer import write_table_atomically  # noqa: E402
from tracevals.spans.normalize import NORMALIZER_VERSION  # noqa: E402

SPANS_PER_SESSION = 10
SESSIONS_PER_HOUR = 50_000
T0_NS = 1_795_000_000 * 10**9  # 2026-11-18 (a fixed date: the lake is the same on every run)
TOOLS = ["search_customer", "get_orders", "get_order", "refund_order", "send_message", "update_address"]
EFFECTS = {"refund_order": "irreversible", "send_message": "write", "update_address": "write"}
FAILURE_ATTRIBUTES = '","error.type":"rate_limit","http.response.status_code":429,"tracevals.retry_after_ms":20.0'
# the kind of the span at each position of a session
LAYOUT = ["agent", "llm", "tool", "llm", "tool", "tool", "llm", "tool", "llm", "session_end"]
# Ids as real lakes have them: random-looking, so that a file's row groups each span nearly the whole range
# of ids and min/max statistics cannot find a session (sequential ids let them, and flattered lookups).
# Multiplying by an odd constant modulo 2^64 permutes the 64-bit numbers: distinct ids, no collisions.
_SCRAMBLE = 0x9E3779B97F4A7C15
LAKE_LAYOUT = "2"  # written next to the lake: 2 = scrambled ids, rows in arrival (end time) order


def _scrambled(session: pa.Array, salt: int) -> pa.Array:
    product = pc.multiply(pc.cast(session, pa.uint64()), pa.scalar(_SCRAMBLE, pa.uint64()))  # wraps around
    return pc.add(product, pa.scalar(salt, pa.uint64()))


def session_name(session: int) -> str:
    """The session id of session number `session` (as `position_table` writes it)."""
    return f"sess-{(session * _SCRAMBLE + 2) % 2**64:020d}"


def _cat(*parts: Any) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


def _fill(template: str, values: dict[str, Any]) -> pa.Array:
    """`template` with every <name> replaced by that column's values, row by row."""
    pieces = re.split(r"<(\w+)>", template)
    return _cat(*[values[p] if i % 2 else p for i, p in enumerate(pieces) if p or i % 2])


_STRING, _NONE = pa.string(), pa.scalar(None, pa.string())


def _const(rows: int, value: Any, type_: pa.DataType = _STRING) -> pa.Array:
    return pa.repeat(pa.scalar(value, type_), rows)


def _str(values: pa.Array, width: int = 0) -> pa.Array:
    text = pc.cast(values, pa.string())
    return pc.utf8_lpad(text, width, "0") if width else text


def _pick(options: list[str], index: pa.Array) -> pa.Array:
    return pc.take(pa.array(options, _STRING), pc.cast(index, pa.int64()))


def retrying(session: pa.Array) -> pa.Array:
    """Sessions whose second tool call fails with a 429 and is retried by code (same tool, same arguments)."""
    return pc.equal(pc.bit_wise_and(session, 15), 3)


def tool_index(session: pa.Array, position: int) -> pa.Array:
    """Which of TOOLS the tool span at `position` calls."""
    if position == 5:  # the retry of position 4, or a parallel call of another tool
        return pc.if_else(retrying(session), tool_index(session, 4), pc.add(pc.bit_wise_and(session, 1), 4))
    return pc.bit_wise_and(pc.add(session, position), 3)


def _requested(session: pa.Array, position: int) -> list[tuple[pa.Array, pa.Array]]:
    """(tool name, call id) of each tool call the model call at `position` asks for (names may be null)."""
    if position == 8:  # 1% of final responses ask for a tool that no span executes: a gap
        gap = pc.equal(pc.bit_wise_and(session, 127), 5)
        return [(pc.if_else(gap, "send_message", _NONE), _cat("call_", _str(session), "_9"))]
    out = []
    for p in {1: [2], 3: [4, 5], 6: [7]}[position]:
        name = _pick(TOOLS, tool_index(session, p))
        if p == 5:  # a retry is the agent's code repeating the call, not a second request
            name = pc.if_else(retrying(session), _NONE, name)
        out.append((name, _cat("call_", _str(session), "_", str(p))))
    return out


def _list(items: list[pa.Array]) -> pa.Array:
    """Row by row, the list of the items' non-null values (as `_json_list` writes them)."""
    n = len(items[0])
    values = pc.take(pa.concat_arrays(items), pa.array([k * n + row for row in range(n) for k in range(len(items))]))
    valid = pc.is_valid(values)
    counts = (
        pc.add(*[pc.cast(pc.is_valid(x), pa.int32()) for x in items])
        if len(items) > 1
        else pc.cast(pc.is_valid(items[0]), pa.int32())
    )
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum(counts)])
    return pa.ListArray.from_arrays(offsets, pc.filter(values, valid))


def _json_list(items: list[pa.Array]) -> pa.Array:
    quoted = [pc.if_else(pc.is_null(x), "", _cat('"', x, '",')) for x in items]
    return _cat("[", pc.utf8_rtrim(_cat(*quoted), ","), "]")


def position_table(session: pa.Array, position: int) -> pa.Table:
    """The span at `position` of every session in `session` (an int64 array of session numbers)."""
    n = len(session)
    kind = LAYOUT[position]
    sid = _cat("sess-", _str(_scrambled(session, 2), 20))
    hour = pc.divide(session, SESSIONS_PER_HOUR)
    offset_ms = pc.multiply(pc.subtract(session, pc.multiply(hour, SESSIONS_PER_HOUR)), 60)
    start_ns = pc.add(pc.add(pc.multiply(hour, 3_600 * 10**9), pc.multiply(offset_ms, 10**6)), T0_NS + position * 10**8)
    duration_ms = 950 if position == 0 else (80 if kind == "llm" else 15)
    model = _pick(["bench-model-a", "bench-model-b"], pc.bit_wise_and(session, 1))
    cols: dict[str, Any] = {f.name: pa.nulls(n, f.type) for f in SPAN_SCHEMA}
    cols.update(
        trace_id=_str(_scrambled(session, 1), 32),
        span_id=_str(pc.add(pc.multiply(session, SPANS_PER_SESSION), position), 16),
        parent_span_id=cols["parent_span_id"] if position == 0 else _str(pc.multiply(session, SPANS_PER_SESSION), 16),
        span_kind=_const(n, "client" if kind == "llm" else "internal"),
        start_time=pc.cast(start_ns, pa.timestamp("ns", tz="UTC")),
        end_time=pc.cast(pc.add(start_ns, duration_ms * 10**6), pa.timestamp("ns", tz="UTC")),
        duration_ms=_const(n, float(duration_ms), pa.float64()),
        status_code=_const(n, "unset"),
        resource_attributes=_const(n, '{"service.name":"bench-agent"}'),
        scope_name=_const(n, "tracevals"),
        events=_const(n, "[]"),
        links=_const(n, "[]"),
        service_name=_const(n, "bench-agent"),
        dialect=_const(n, "genai"),
        normalizer_version=_const(n, NORMALIZER_VERSION, pa.int32()),
        has_message_attributes=_const(n, False, pa.bool_()),
        kind=_const(n, kind),
        session_id=sid,
    )
    if kind == "agent":
        variant = _pick(["baseline", "candidate"], pc.bit_wise_and(session, 1))
        task = _cat("task_", _str(pc.bit_wise_and(pc.divide(session, 2), 63), 2))
        attempt = pc.add(pc.bit_wise_and(pc.divide(session, 128), 3), 1)
        cols.update(
            name=_const(n, "invoke_agent support"),
            operation=_const(n, "invoke_agent"),
            agent_name=_const(n, "support"),
            run_id=_const(n, "bench"),
            task_id=task,
            attempt=attempt,
            variant=variant,
            attributes=_fill(
                '{"gen_ai.conversation.id":"<sid>","gen_ai.operation.name":"invoke_agent","gen_ai.agent.name":"support",'
                '"tracevals.run.id":"bench","tracevals.task.id":"<task>","tracevals.attempt":<attempt>,'
                '"tracevals.variant":"<variant>"}',
                {"sid": sid, "task": task, "attempt": _str(attempt), "variant": variant},
            ),
        )
    elif kind == "llm":
        requested = _requested(session, position)
        names = _json_list([name for name, _ in requested])
        ids = _json_list([pc.if_else(pc.is_null(name), _NONE, i) for name, i in requested])
        # the same lists as the facts columns the normalizer writes beside the JSON
        kept = [(name, pc.if_else(pc.is_null(name), _NONE, i)) for name, i in requested]
        tokens_in = pc.add(pc.multiply(pc.bit_wise_and(session, 255), 3), 400 + 40 * position)
        tokens_out = pc.add(pc.bit_wise_and(session, 31), 8)
        cols.update(
            name=_cat("chat ", model),
            operation=_const(n, "chat"),
            provider=_const(n, "openai"),
            model=model,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            requested_tool_names=_list([name for name, _ in kept]),
            requested_tool_call_ids=_list([i for _, i in kept]),
            attributes=_fill(
                '{"gen_ai.conversation.id":"<sid>","gen_ai.operation.name":"chat","gen_ai.provider.name":"openai",'
                '"gen_ai.request.model":"<model>","gen_ai.response.model":"<model>","gen_ai.usage.input_tokens":<i>,'
                '"gen_ai.usage.output_tokens":<o>,"tracevals.tool_calls.ids":<ids>,"tracevals.tool_calls.names":<names>}',
                {"sid": sid, "model": model, "i": _str(tokens_in), "o": _str(tokens_out), "ids": ids, "names": names},
            ),
        )
    elif kind == "tool":
        index = tool_index(session, position)
        tool = _pick(TOOLS, index)
        call_id = _cat("call_", _str(session), "_", str(position))
        # the argument hash: a retry repeats the failed call's arguments exactly
        salt = pc.if_else(retrying(session), 4, position) if position == 5 else pa.scalar(position)
        args_hash = _str(pc.add(pc.multiply(pc.bit_wise_and(session, 65535), 8), salt), 16)
        effect = pc.fill_null(pc.take(pa.array([EFFECTS.get(t) for t in TOOLS], pa.string()), index), "read")
        failed = retrying(session) if position == 4 else pc.equal(session, -1)
        fail = pc.if_else(failed, FAILURE_ATTRIBUTES, '"')
        cols.update(
            name=_cat("execute_tool ", tool),
            operation=_const(n, "execute_tool"),
            tool_name=tool,
            tool_call_id=call_id,
            tool_effect=effect,
            tool_args_hash=args_hash,
            error_type=pc.if_else(failed, "rate_limit", _NONE),
            http_status_code=pc.if_else(failed, pa.scalar(429, pa.int64()), pa.scalar(None, pa.int64())),
            retry_after_ms=pc.if_else(failed, pa.scalar(20.0), pa.scalar(None, pa.float64())),
            status_code=pc.if_else(failed, "error", "unset"),
            attributes=_fill(
                '{"gen_ai.conversation.id":"<sid>","gen_ai.operation.name":"execute_tool","gen_ai.tool.name":"<tool>",'
                '"gen_ai.tool.call.id":"<call_id>","tracevals.tool.effect":"<effect>",'
                '"tracevals.tool.args_hash":"<args_hash><failure>}',
                {
                    "sid": sid,
                    "tool": tool,
                    "call_id": call_id,
                    "effect": effect,
                    "args_hash": args_hash,
                    "failure": fail,
                },
            ),
        )
    else:
        cols.update(
            name=_const(n, "session.end"),
            session_status=_const(n, "finished"),
            attributes=_fill(
                '{"gen_ai.conversation.id":"<sid>","tracevals.session.end":true,"tracevals.session.status":"finished"}',
                {"sid": sid},
            ),
        )
    return pa.table(cols, schema=SPAN_SCHEMA)


def build_lake(lake: Path, spans: int, files_per_hour: int = 1) -> int:
    """Write the synthetic lake, `files_per_hour` files per hour partition (consecutive slices of the hour's
    rows in arrival order: 120 is what a collector rotating every 30 s leaves); returns the spans written."""
    sessions = max(1, spans // SPANS_PER_SESSION)
    shutil.rmtree(lake, ignore_errors=True)
    for first in range(0, sessions, SESSIONS_PER_HOUR):
        session = pa.array(range(first, min(sessions, first + SESSIONS_PER_HOUR)), pa.int64())
        table = pa.concat_tables([position_table(session, p) for p in range(SPANS_PER_SESSION)])
        # in the order a collector receives spans: as they end, sessions interleaved
        table = table.take(pc.sort_indices(table, [("end_time", "ascending"), ("span_id", "ascending")]))
        hour = time.gmtime((T0_NS + (first // SESSIONS_PER_HOUR) * 3_600 * 10**9) / 1e9)
        directory = lake / SPANS_DIR / time.strftime("date=%Y-%m-%d", hour) / f"hour={hour.tm_hour:02d}"
        step = -(-table.num_rows // files_per_hour)
        for start in range(0, table.num_rows, step):
            write_table_atomically(table.slice(start, step), directory)
    return sessions * SPANS_PER_SESSION


NAIVE_COLUMNS = [  # the columns the reconstruction reads
    *("trace_id", "span_id", "parent_span_id", "kind", "start_time", "end_time", "session_id", "model", "error_type"),
    *("input_tokens", "output_tokens", "tool_name", "tool_call_id", "tool_args_hash", "status_code", "attributes"),
]


def naive_trajectories(lake: Path) -> dict[str, dict[str, Any]]:
    """The views' reconstruction, written the obvious way in Python over the same rows: deduplicate on
    (trace, span), collapse nested calls (parent of the same kind), order steps by (start, span id),
    match requested tool calls (tracevals.tool_calls.*) to executions by id then by order, flag gaps.

    It groups one file at a time (this lake keeps each session in one file), which favours it: it never
    holds more than a file's rows, where a general reader would hold the whole lake or sort it first.
    """
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((lake / SPANS_DIR).rglob("*.parquet")):
        spans: dict[tuple[str, str], dict[str, Any]] = {}
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65_536, columns=NAIVE_COLUMNS):
            for row in batch.to_pylist():
                key = (row["trace_id"], row["span_id"])
                old = spans.get(key)
                if old is None or _later_copy(row, old):
                    spans[key] = row
        traces: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in spans.values():
            traces[row["trace_id"]].append(row)
        for trace_id, rows in traces.items():
            out[trace_id] = _naive_trajectory(rows)
    return out


def _later_copy(row: dict[str, Any], old: dict[str, Any]) -> bool:
    """The views' rule: prefer an ended copy, then the latest end."""
    if (row["end_time"] is None) != (old["end_time"] is None):
        return old["end_time"] is None
    return row["end_time"] is not None and row["end_time"] > old["end_time"]


def _naive_trajectory(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_id = {r["span_id"]: r for r in rows}
    steps, requested = [], []
    for r in rows:
        parent = by_id.get(r["parent_span_id"])
        if r["kind"] not in ("llm", "tool") or (parent is not None and parent["kind"] == r["kind"]):
            continue
        if r["kind"] == "llm":
            attrs = json.loads(r["attributes"])
            ids = attrs.get("tracevals.tool_calls.ids") or []
            for i, name in enumerate(attrs.get("tracevals.tool_calls.names") or []):
                requested.append((r["start_time"], r["span_id"], i, ids[i] if i < len(ids) else None, name))
        steps.append(r)
    executed = [s for s in steps if s["kind"] == "tool"]
    ids_seen = {s["tool_call_id"] for s in executed}
    left: dict[str, int] = defaultdict(int)
    for s in executed:
        left[s["tool_name"]] += 1
    requested.sort(key=lambda q: q[:3])
    for *_, call_id, name in requested:
        if call_id in ids_seen:
            left[name] -= 1
    gaps = []
    for start, _, _, call_id, name in requested:
        if call_id in ids_seen:
            continue
        if left[name] > 0:
            left[name] -= 1
        else:
            gaps.append({"kind": "tool", "name": name, "start_time": start, "span_id": None, "is_gap": True})
    ordered = sorted(steps, key=lambda s: (s["start_time"], s["span_id"]))
    root = next((r for r in rows if r["parent_span_id"] is None), rows[0])
    return {
        "session_id": root["session_id"],
        "tools": [s["tool_name"] for s in ordered if s["kind"] == "tool"],
        "steps": [(s["kind"], s["model"] or s["tool_name"], s["error_type"]) for s in ordered] + gaps,
        "input_tokens": sum(s["input_tokens"] or 0 for s in ordered if s["kind"] == "llm"),
        "output_tokens": sum(s["output_tokens"] or 0 for s in ordered if s["kind"] == "llm"),
        "gap_count": len(gaps),
    }
