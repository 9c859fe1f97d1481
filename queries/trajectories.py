"""Trajectories as Python objects, rebuilt from the `trajectories`, `runs` and `tool_calls` views.

What the evaluators read: `load_trajectories(con)` returns one `Trajectory` per trace, its tool calls
in `call_index` order.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import duckdb

from tracevals.evaluators.model import ToolCall, Trajectory


def _ms(value: Any) -> float:
    if value is None:
        return 0.0
    return float(value.timestamp() * 1000.0)


def _args(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def load_trajectories(con: duckdb.DuckDBPyConnection, where: str = "") -> list[Trajectory]:
    """Every trajectory in the lake (optionally filtered by a SQL condition on `trajectories`)."""
    condition = f"WHERE {where}" if where else ""
    calls: dict[str, list[ToolCall]] = defaultdict(list)
    for row in con.execute(
        f"""
        SELECT c.trace_id, c.tool_name, c.tool_args, c.tool_result, c.error_type, c.start_time, c.end_time,
               c.span_id, c.tool_call_id, c.tool_effect, c.retry_after_ms, c.idempotency_key
        FROM tool_calls AS c
        WHERE c.trace_id IN (SELECT trace_id FROM trajectories {condition})
        ORDER BY c.trace_id, c.call_index
        """
    ).fetchall():
        calls[row[0]].append(
            ToolCall(
                name=row[1] or "",
                args=_args(row[2]),
                result=row[3],
                error_type=row[4],
                start_ms=_ms(row[5]),
                end_ms=_ms(row[6]),
                span_id=row[7],
                call_id=row[8],
                effect=row[9],
                retry_after_ms=row[10],
                idempotency_key=row[11],
            )
        )
    trajectories = []
    for row in con.execute(
        f"""
        SELECT t.trace_id, t.session_id, t.run_id, t.task_id, t.attempt, t.variant, r.output,
               coalesce(r.error_type, r.error), t.model_call_count, t.input_tokens, t.output_tokens,
               t.start_time, t.end_time
        FROM (SELECT * FROM trajectories {condition}) AS t
        LEFT JOIN runs AS r ON r.trace_id = t.trace_id
        ORDER BY t.variant, t.task_id, t.attempt, t.trace_id
        """
    ).fetchall():
        trajectories.append(
            Trajectory(
                trace_id=row[0],
                tool_calls=tuple(calls.get(row[0], ())),
                session_id=row[1],
                run_id=row[2],
                task_id=row[3],
                attempt=row[4],
                variant=row[5],
                output=row[6],
                error_type=row[7],
                model_calls=int(row[8] or 0),
                input_tokens=int(row[9] or 0),
                output_tokens=int(row[10] or 0),
                start_ms=_ms(row[11]),
                end_ms=_ms(row[12]),
            )
        )
    return trajectories
