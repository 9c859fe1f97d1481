"""Span-level facts per trace, for `session_completeness` and for matching traces to task cases.

Read through SQL (`queries/sql/trace_facts.sql`) from the views (so they follow whatever restriction
`selection.select_sessions` put them under):

- `root_present` / `root_ended`: a span with no parent, or whose parent is absent and whose span kind
  is `server` / `consumer` (its parent is remote, in another service's trace), and whether it ended;
- `orphan_spans`: other spans whose parent is not in the lake; `open_spans`: spans without an end;
- `dangling_calls`: 0 here: the tool calls a model asked for that no span executed (`tool_call_gaps`)
  travel as gap calls in the trajectory, and `session_completeness` counts those;
- `terminal`: `error` (the root or the end marker says error, or the harness recorded one), else
  `handoff` (a `handoff` span, or a successful `handoff_to_human` call), else `answer` (a recorded
  output, or a last model call (the last to start) that ended well, asked for no tool, and after which no
  tool ran, or whose requested tools (content off: the tools that started after it) all ran after it and none
  failed in a root that ended: an agent that ends on its tools' results, `queries/sql/tool_ended.sql`), else
  none;
- `input`: the last user text message of the trace's first model call (the request of this turn), and
  the number of user text messages in that call's history;
- per session: `turn` (order of the trace by start), `session_traces`, `turns_expected` (the largest
  history of user messages: the last turn's model input repeats the conversation so far; only for a session
  with an id: a trace with none is a session of its own, and the earlier turns its history repeats are in
  traces nothing links it to).

Everything comes from `span_facts` and the call views, never from the wide `spans` view: at millions
of spans, moving the attribute JSON through the de-duplication dominates everything else.
"""

from __future__ import annotations

import duckdb
import polars as pl

from tracevals.queries.catalog import query_sql


def span_facts(con: duckdb.DuckDBPyConnection, scope: str | None = None) -> pl.DataFrame:
    """One row per trace of the `spans` view (only the traces listed in table `scope`, when given; give
    whole sessions, or the per-session columns count too few traces): the facts above."""
    where = f"WHERE trace_id IN (SELECT trace_id FROM {scope})" if scope else ""
    result = pl.from_arrow(con.sql(query_sql("trace_facts", scope=where)).to_arrow_table())
    assert isinstance(result, pl.DataFrame)
    return result
