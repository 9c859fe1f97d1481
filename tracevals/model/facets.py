"""Where a trace of production traffic belongs, for a report over it: the service that emitted it
(`service.name`), the agent that ran it (the outermost span naming `gen_ai.agent.name`), its session
and the UTC day that session started on (a session is counted on one day, as `--since` selects it)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class TraceFacet:
    trace_id: str
    session_id: str  # the trace's own id when it has no session
    service: str  # "unknown" when the resource named none
    agent: str  # "unknown" when no span named one
    day: dt.date  # the UTC day the session started
    start_ms: float = 0.0  # the trace's start, milliseconds since the epoch
