"""Live scoring: follow a lake, score each session once it is finished, re-score it when late spans come.

A session (the traces sharing a session id; a trace without one is its own session) is finished when:

1. its explicit end marker (a `session_end` span) has arrived and every trace of it has its root; or
2. every trace has its root (roots end last, so all spans have ended) and no span of it arrived for
   `idle_s` seconds; or
3. nothing of it arrived for `abandon_s` seconds (default 10 x idle): a crashed agent never sends its
   root, and the scores then say so (`session_completeness`).

Spans that arrive for a session already scored make it due again: it is re-scored by the same rules
and the new rows supersede the old ones (the `scores` view keeps the newest per trace and evaluator).
Memory is bounded: a scored session's spans are kept for `retain_s` (default 2 x abandon), then only
its id (for `late_window_s`); a span arriving later for such a session reloads the session's spans
from the lake files of the late window before it is re-scored. Time is the scorer's clock at arrival,
never the agent's span times, so clock skew between machines does not matter.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from tracevals.evaluators.evaluator import Evaluator
from tracevals.lake.sampling import session_sampled
from tracevals.lake.schema import SPANS_DIR
from tracevals.model.case import Case
from tracevals.queries.live_source import MAX_FILE_ROWS, NewFiles, connection_for_spans, read_span_files
from tracevals.scoring.config import ScoringConfig
from tracevals.scoring.offline import score_connection, with_sample
from tracevals.scoring.store import write_score_frame

ScoreSink = Callable[[pl.DataFrame, dict[str, str]], None]  # (score rows, trace id -> root span id)


@dataclass
class LiveSession:
    tables: list[pa.Table] = field(default_factory=list)
    traces: set[str] = field(default_factory=set)
    roots: set[str] = field(default_factory=set)
    end_marker: bool = False
    last_arrival: float = 0.0
    due: bool = True  # spans arrived since it was last scored
    scorings: int = 0


class Follower:
    """Score the sessions of a lake as they finish (see the module docstring). Call `poll()` in a loop."""

    def __init__(
        self,
        lake: str | os.PathLike[str],
        *,
        tasks: Sequence[Case] | None = None,
        config: ScoringConfig | None = None,
        evaluators: Sequence[Evaluator] | None = None,
        idle_s: float = 30.0,
        abandon_s: float | None = None,
        retain_s: float | None = None,
        late_window_s: float = 86400.0,
        sample: tuple[float, int] | None = None,
        write: bool = True,
        sinks: Sequence[ScoreSink] = (),
        clock: Callable[[], float] = time.time,
        max_file_rows: int = MAX_FILE_ROWS,
    ) -> None:
        self.lake = Path(lake)
        self.tasks, self.config, self.evaluators = tasks, config, evaluators
        self.idle_s = idle_s
        self.abandon_s = abandon_s if abandon_s is not None else 10 * idle_s
        self.retain_s = retain_s if retain_s is not None else 2 * self.abandon_s
        self.late_window_s = late_window_s
        self.sample, self.write, self.sinks, self.clock = sample, write, list(sinks), clock
        self.files = NewFiles(lake, late_window_s=late_window_s)
        self.max_file_rows = max_file_rows
        self.sessions: dict[str, LiveSession] = {}
        self.evicted: dict[str, float] = {}  # session id -> when its spans were dropped

    def poll(self) -> pl.DataFrame:
        """One round: read new span files, score the sessions that are due and finished, forget old ones."""
        now = self.clock()
        paths = self.files.poll(now)
        if paths:
            self._ingest(read_span_files(paths, self.max_file_rows), now)
        ready = [sid for sid, s in self.sessions.items() if s.due and self._finished(s, now)]
        scores = self._score(ready) if ready else pl.DataFrame()
        self._forget(now)
        return scores

    def run(self, interval_s: float = 1.0, stop: Callable[[], bool] = lambda: False) -> None:
        """Poll until `stop()` is true, sleeping `interval_s` between rounds."""
        while not stop():
            self.poll()
            deadline = time.monotonic() + interval_s
            while not stop() and time.monotonic() < deadline:
                time.sleep(min(0.05, interval_s))

    def _finished(self, session: LiveSession, now: float) -> bool:
        quiet = now - session.last_arrival
        rooted = session.traces <= session.roots
        return (session.end_marker and rooted) or (rooted and quiet >= self.idle_s) or quiet >= self.abandon_s

    def _ingest(self, table: pa.Table, now: float) -> None:
        if table.num_rows == 0:
            return
        keys = pc.coalesce(table.column("session_id"), table.column("trace_id"))
        table = table.append_column("tv_session", keys)
        for sid in pc.unique(keys).to_pylist():
            if not session_sampled(sid, *(self.sample or (None, 0))):
                continue
            rows = table.filter(pc.equal(table.column("tv_session"), sid)).drop_columns(["tv_session"])
            session = self.sessions.get(sid)
            if session is None:
                session = self.sessions[sid] = LiveSession()
                if self.evicted.pop(sid, None) is not None:
                    self._add(session, self._reload(sid))  # a late span for a forgotten session
            self._add(session, rows)
            session.last_arrival, session.due = now, True

    @staticmethod
    def _add(session: LiveSession, rows: pa.Table) -> None:
        if rows.num_rows == 0:
            return
        session.tables.append(rows)
        session.traces.update(rows.column("trace_id").to_pylist())
        roots = rows.filter(pc.is_null(rows.column("parent_span_id")))
        session.roots.update(roots.column("trace_id").to_pylist())
        session.end_marker = session.end_marker or "session_end" in rows.column("kind").to_pylist()

    def _reload(self, sid: str) -> pa.Table:
        # `tracevals compact` may replace files between the listing and the read (the new file holds their
        # rows and keeps the newest one's time): then list again, so that no span of the session is missed
        for _ in range(5):
            recent, vanished = [], False
            for path in sorted((self.lake / SPANS_DIR).glob("date=*/hour=*/*.parquet")):
                try:
                    if not path.name.startswith(".") and path.stat().st_mtime >= self.clock() - self.late_window_s:
                        recent.append(path)
                except FileNotFoundError:
                    vanished = True
            table = read_span_files(recent, self.max_file_rows)
            if not (vanished or any(not path.exists() for path in recent)):
                break
        keys = pc.coalesce(table.column("session_id"), table.column("trace_id"))
        return table.filter(pc.equal(keys, sid))

    def _score(self, ready: list[str]) -> pl.DataFrame:
        tables = [t for sid in ready for t in self.sessions[sid].tables]
        con = connection_for_spans(pa.concat_tables(tables, promote_options="default"))
        try:
            run = score_connection(con, tasks=self.tasks, config=self.config, evaluators=self.evaluators)
        finally:
            con.close()
        scores = run.scores
        for sid in ready:
            self.sessions[sid].due = False
            self.sessions[sid].scorings += 1
        if self.sample is not None:
            scores = with_sample(scores, *self.sample)
        if self.write:
            write_score_frame(self.lake, scores)
        for sink in self.sinks:
            sink(scores, run.root_spans)
        return scores

    def _forget(self, now: float) -> None:
        for sid in [sid for sid, s in self.sessions.items() if not s.due and now - s.last_arrival >= self.retain_s]:
            del self.sessions[sid]
            self.evicted[sid] = now
        self.evicted = {sid: t for sid, t in self.evicted.items() if now - t < self.late_window_s}
