"""What a report over production traffic is computed from: the sessions the collector (or the embedded
writer) recorded, with no harness run, their scores, and where each trace belongs.

`load_production_data` reads the traces that are not harness attempts (no task id or variant) of the
sessions starting in `[since, until)`, sampled by session with the one sampling rule, every trace's
facet (service, agent, the day its session started; `tracevals.model.facets`), and their scores: the
ones `tracevals score` stored (a nightly job), and, for a trace with none, the evaluators' verdicts
computed now with no case (the generic evaluators: session completeness, retry discipline, injection,
and budgets / policy when a scoring config gives them). Like `load_lake_data`, it never writes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import duckdb

from tracevals.lake import clock
from tracevals.lake.lake import Lake
from tracevals.model.facets import TraceFacet
from tracevals.model.quoting import command_line
from tracevals.model.score import Score
from tracevals.model.trajectory import Trajectory
from tracevals.queries import open_lake
from tracevals.queries.selection import Selection, SelectionError, select_sessions
from tracevals.queries.time_quality import time_quality
from tracevals.queries.trajectories import load_batch, trajectories_of
from tracevals.scoring.config import ScoringConfig
from tracevals.scoring.lake_data import _id_table, _iso, current_scores
from tracevals.scoring.offline import score_loaded

# The query that lists the days a lake has sessions on (what an empty selection suggests).
DAYS_QUERY = "select cast(start_time as date) as day, count(*) from sessions group by 1 order by 1"

__all__ = ["DEFAULT_DAYS", "ProductionData", "has_harness_runs", "load_production_data"]

#: Without --since / --until, a production report covers the sessions that started in the last 7 days.
DEFAULT_DAYS = 7

# Each trace's service (the resource's service.name) and agent: of the spans naming a gen_ai.agent.name,
# the outermost (no parent in the trace first), then the earliest; its session's start day.
_FACETS = """
WITH agents AS (
    SELECT g.trace_id,
           min_by(g.agent_name, (g.parent_span_id IS NOT NULL, g.start_time, g.span_id)) AS agent
    FROM genai_spans AS g JOIN _report_traces AS t ON t.trace_id = g.trace_id
    WHERE g.agent_name IS NOT NULL
    GROUP BY g.trace_id
)
SELECT a.trace_id, coalesce(a.session_id, a.trace_id) AS session_id, a.service_name, g.agent,
       date_diff('microsecond', TIMESTAMPTZ '1970-01-01 00:00:00+00', a.start_time) / 1000.0 AS start_ms,
       min(a.start_time) OVER (PARTITION BY coalesce(a.session_id, a.trace_id)) AS session_start
FROM attempts AS a
JOIN _report_traces AS t ON t.trace_id = a.trace_id
LEFT JOIN agents AS g ON g.trace_id = a.trace_id
"""


@dataclass
class ProductionData:
    """The selected production traces, their scores, facets and provenance."""

    trajectories: list[Trajectory]
    scores: list[Score]
    facets: dict[str, TraceFacet]
    provenance: dict[str, Any] = field(default_factory=dict)


def has_harness_runs(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the lake holds any harness attempt (a root span with tracevals.run.id)."""
    return con.execute("SELECT 1 FROM attempts WHERE run_id IS NOT NULL LIMIT 1").fetchone() is not None


def load_production_data(
    lake: Lake,
    since: dt.datetime | None,
    until: dt.datetime | None,
    sample: float | None = None,
    seed: int = 0,
    config: ScoringConfig | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    now: dt.datetime | None = None,
) -> ProductionData:
    """Read the production sessions of a range (default: the last `DEFAULT_DAYS` days); raises
    `LakeError` (unreadable lake) or `SelectionError` (nothing in the range)."""
    con = con or open_lake(lake)
    chosen_by = "--since/--until"
    now = now or clock.now()
    if since is None and until is None:
        midnight = dt.datetime.combine(now.date(), dt.time(), tzinfo=dt.timezone.utc)
        since, chosen_by = midnight - dt.timedelta(days=DEFAULT_DAYS - 1), f"the last {DEFAULT_DAYS} days (default)"
    # the reader's clock bounds the window: a session a skewed client stamped ahead is no part of it (nor
    # of "the night"); it is counted below, with the other odd times. The report names the window asked for
    # (an open end reads "now"), so that two reports of one lake a moment apart say the same.
    asked_until = until
    until = clock.capped(until, now)
    quality = time_quality(con, clock.horizon(now), since)
    restriction = select_sessions(con, Selection(since=since, until=until, fraction=sample, seed=seed))
    batch = load_batch(con, where="(task_id IS NULL OR variant IS NULL)", within=restriction)
    trajectories = trajectories_of(batch)
    if not trajectories:
        span = f"from {_iso(since) or 'the start'} until {_iso(until) or 'now'}"
        raise SelectionError(
            f"no production sessions start {span}{' in the sample' if sample else ''}; widen --since/--until "
            f"(see the days with: {command_line('tracevals', 'sql', '--lake', str(lake), DAYS_QUERY)})"
        )
    con.register("_report_traces", _id_table([t.trace_id for t in trajectories]))
    facets = {}
    for trace_id, session_id, service, agent, start_ms, session_start in con.execute(_FACETS).fetchall():
        day = session_start.astimezone(dt.timezone.utc).date() if session_start is not None else dt.date(1970, 1, 1)
        facets[str(trace_id)] = TraceFacet(
            trace_id=str(trace_id),
            session_id=str(session_id),
            service=str(service or "unknown"),
            agent=str(agent or "unknown"),
            day=day,
            start_ms=float(start_ms or 0.0),
        )
    stored = current_scores(con)
    scored = {s.trace_id for s in stored}
    own_prices = lake.prices()
    chosen = (config or ScoringConfig()).with_prices_beneath(own_prices)
    computed = score_loaded(batch.select([t.trace_id for t in trajectories if t.trace_id not in scored]), {}, chosen)
    days = sorted({f.day for f in facets.values()})
    provenance: dict[str, Any] = {
        "source": "production",
        "selected_by": chosen_by,
        "since": _iso(since),
        "until": _iso(asked_until),
        "date_from": days[0].isoformat() if days else None,
        "date_to": days[-1].isoformat() if days else None,
        "sample_fraction": sample if sample is not None else 1.0,
        "sample_seed": seed,
        "sessions_selected": len({f.session_id for f in facets.values()}),
        "traces": len(trajectories),
        "services": sorted({f.service for f in facets.values()}),
        "agents": sorted({f.agent for f in facets.values()}),
        "scores_stored": len(stored),
        "scores_computed": len(computed),
        "data_quality": quality.as_dict(),
        "notes": [f"data quality: {finding}" for finding in quality.findings],
    }
    return ProductionData(trajectories, stored + computed, facets, provenance)
