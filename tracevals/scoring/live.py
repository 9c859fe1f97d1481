"""Live scoring: follow a lake, score each session once it is finished, re-score it when late spans come.

A session is the traces sharing a session id; a trace belongs to the session its root span names, else to
that of its earliest span that names one (the `attempts` view's rule, which offline scoring goes by), and a
trace naming none is its own session. A trace whose root arrives later naming another session moves there.
A session is finished when:

1. its explicit end marker (a `session_end` span) has arrived and every trace of it has its root; or
2. every trace has its root (roots end last, so all spans have ended) and no span of it arrived for
   `idle_s` seconds; or
3. nothing of it arrived for `abandon_s` seconds (default 10 x idle): a crashed agent never sends its
   root, and the scores then say so (`session_completeness`).

Spans (or OTLP log records) that arrive for a session already scored make it due again: it is re-scored by
the same rules and the new rows supersede the old ones (the `scores` view keeps the newest per trace and
evaluator). Memory is bounded: a scored session's rows are kept for `retain_s` (default 2 x abandon), then
only its trace ids (for `late_window_s`); a span arriving later for such a session reloads the session's
rows from the lake files of the late window before it is re-scored. Time is the scorer's clock at arrival,
never the agent's span times, so clock skew between machines does not matter.

The cost of a round is linear in the rows that arrived and the sessions that finished, never in their
product: the new rows are grouped by trace once (one sort of their ids) and kept as they are, each trace
holding (table, first, rows) slices of that order; the finished sessions' rows are handed over as one
table (a table all of whose sessions finished goes as it is; from the others, one `take` each) and scored
set-at-a-time by `scoring.offline.score_connection` over the lake's own views (a `LiveConnection`, its
views bound once), the same code and SQL as `tracevals score`, so the scores are the same. Rows taken out
of a table are held in the new one from then on, so an old table goes as soon as no trace left points
into it, and a session with late rows does not keep a whole round's rows alive.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow as pa

from tracevals.lake import clock as lake_clock
from tracevals.lake.paths import LakeError
from tracevals.lake.sampling import session_sampled
from tracevals.lake.schema import LOGS_DIR, SPANS_DIR, python_array
from tracevals.model.gc_pause import gc_paused
from tracevals.queries.live_source import (
    MAX_FILE_ROWS,
    LiveConnection,
    NewFiles,
    empty_logs,
    empty_spans,
    read_log_files,
    read_recent,
    read_span_files,
)
from tracevals.scoring import live_rows
from tracevals.scoring.config import ScoringConfig
from tracevals.scoring.job import ScoringJob
from tracevals.scoring.offline import score_connection
from tracevals.scoring.results import with_sample
from tracevals.scoring.store import write_score_frame


class Follower:
    """Score the sessions of a lake as they finish (see the module docstring). Call `poll()` in a loop."""

    def __init__(
        self,
        job: ScoringJob,
        *,
        idle_s: float = 30.0,
        abandon_s: float | None = None,
        retain_s: float | None = None,
        late_window_s: float | None = None,
        clock: Callable[[], float] = time.time,
        max_file_rows: int = MAX_FILE_ROWS,
    ) -> None:
        """`job`: what every finished session is scored with (its cases, config, evaluators, `write`, `sinks`;
        of its selection, the sample); the rest is when a session counts as finished."""
        lake = job.lake
        folder = lake.local_folder  # it follows files by their folders and modification times, on disk
        if folder is None:
            raise LakeError(
                f"score --follow reads a local lake, not {lake}; score an object-store lake by range "
                "(tracevals score --since 1h), or follow the collector's local lake"
            )
        self.target = lake
        self.lake = folder
        self.tasks, self.config, self.evaluators = job.tasks, job.config, job.evaluators
        chosen = job.selection
        self.sample = (chosen.fraction, chosen.seed) if chosen is not None and chosen.fraction is not None else None
        self.idle_s = idle_s
        self.abandon_s = abandon_s if abandon_s is not None else 10 * idle_s
        self.retain_s = retain_s if retain_s is not None else 2 * self.abandon_s
        # how late a session may arrive and still be scored, and how far ahead a client's clock may be: the
        # reader's clock (tracevals.lake.clock), as in every window
        self.late_window_s = late_window_s = late_window_s if late_window_s is not None else lake_clock.late_seconds()
        self.write, self.sinks, self.clock, self.memory_limit = job.write, list(job.sinks), clock, job.memory_limit
        skew = lake_clock.skew_seconds()
        self.files = NewFiles(folder, late_window_s=late_window_s, skew_s=skew)
        self.log_files = NewFiles(folder, late_window_s=late_window_s, sub=LOGS_DIR, skew_s=skew)
        self.max_file_rows = max_file_rows
        self.sessions: dict[str, live_rows.LiveSession] = {}  # in order of last arrival
        self.traces: dict[str, live_rows.LiveTrace] = {}
        self.evicted = live_rows.Evicted()
        self._tables = live_rows.Tables()
        self._ready: dict[str, None] = {}  # finished at arrival (end marker and roots)
        self._idle: dict[str, None] = {}  # due, waiting for quiet, in order of last arrival
        self._abandon: dict[str, None] = {}  # due, quiet but a root missing, in order of last arrival
        self._connection: LiveConnection | None = None
        # called with the partitions beyond the reader's clock that hold files, as they appear
        self.on_future: Callable[[list[Path]], None] | None = None
        self._future_said: set[Path] = set()

    def poll(self) -> pl.DataFrame:
        """One round: read new span and log files, score the sessions that are due and finished, forget old ones."""
        with gc_paused():
            return self._round()

    def _round(self) -> pl.DataFrame:
        now = self.clock()
        span_paths, log_paths = self.files.poll(now), self.log_files.poll(now)
        new_future = sorted(self.files.future - self._future_said)
        if new_future and self.on_future is not None:  # future-dated spans: said once a partition, never scored
            self._future_said.update(new_future)
            self.on_future(new_future)
        if span_paths or log_paths:
            spans = read_span_files(span_paths, self.max_file_rows) if span_paths else empty_spans()
            logs = read_log_files(log_paths, self.max_file_rows) if log_paths else empty_logs()
            self._ingest(spans, logs, now, {str(p) for p in (*span_paths, *log_paths)})
        ready = self._finished(now)
        scores = self._score(ready) if ready else pl.DataFrame()
        self._forget(now)
        return scores

    def run(self, interval_s: float = 1.0, stop: Callable[[], bool] = lambda: False) -> None:
        """Poll until `stop()` is true, sleeping `interval_s` between rounds."""
        try:
            while not stop():
                self.poll()
                deadline = time.monotonic() + interval_s
                while not stop() and time.monotonic() < deadline:
                    time.sleep(min(0.05, interval_s))
        finally:
            self.close()

    def prepare(self) -> None:
        """Bind the views now (about two CPU seconds), not in the first round that has sessions to score."""
        if self._connection is None:
            self._connection = LiveConnection(memory_limit=self.memory_limit)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    # --- arrival ------------------------------------------------------------------------------------------

    def _ingest(self, spans: pa.Table, logs: pa.Table, now: float, files: set[str]) -> None:
        span_groups, log_groups = live_rows.group_spans(spans), live_rows.group_logs(logs)
        revived = self._revived(span_groups, log_groups)
        if revived:  # late rows of sessions whose rows were dropped: theirs come back from the lake first
            members = python_array(sorted({t for sid in revived for t in self.evicted.traces[sid]}), pa.string())
            old_spans, old_logs = self._reload(members, files)
            for sid in revived:
                self.evicted.drop(sid)
            spans = pa.concat_tables([old_spans, spans], promote_options="default")
            logs = pa.concat_tables([old_logs, logs], promote_options="default")
            span_groups, log_groups = live_rows.group_spans(spans), live_rows.group_logs(logs)
        touched: dict[str, None] = {}
        wanting: list[str] = []  # traces moved into the sample: their earlier rows are read back
        self._add_spans(spans, span_groups, touched, wanting)
        self._add_logs(logs, log_groups, touched, wanting)
        if wanting:
            ids = python_array(sorted(set(wanting)), pa.string())
            for tid in wanting:
                self.traces[tid].partial = False
            old_spans, old_logs = self._reload(ids, files)
            self._add_spans(old_spans, live_rows.group_spans(old_spans), touched, [])
            self._add_logs(old_logs, live_rows.group_logs(old_logs), touched, [])
        for sid in touched:
            self._arrived(sid, now)

    def _add_spans(
        self, spans: pa.Table, groups: live_rows.Groups, touched: dict[str, None], wanting: list[str]
    ) -> None:
        if groups.frame.height == 0:
            return
        key = self._tables.add(spans, groups.order)
        refs, traces, sessions = self._tables.refs, self.traces, self.sessions
        columns = ("trace_id", "first", "rows", "rooted", "end_marker", "child", "start", "span_id", "session_id")
        for tid, first, rows, rooted, end, child, start, span, sid in zip(
            *(groups.column(c) for c in columns), strict=True
        ):
            trace = traces.get(tid)
            if trace is None:  # the common case, inline: a new trace
                named = tid if sid is None else sid
                rank = None if sid is None else (child, live_rows.NO_START if start is None else start, span)
                trace = traces[tid] = live_rows.LiveTrace(named, rank, rooted, end, [], [])
                session = sessions.get(named)
                if session is None:
                    session = sessions[named] = live_rows.LiveSession({tid}, sampled=self._sampled(named))
                else:
                    session.traces.add(tid)
            else:
                if sid is not None:
                    rank = (child, live_rows.NO_START if start is None else start, span)
                    if trace.rank is None or rank < trace.rank:
                        trace.rank = rank
                        if sid != trace.session:
                            self._move(tid, trace, sid, touched, wanting)
                trace.rooted = trace.rooted or rooted
                trace.end_marker = trace.end_marker or end
                session = sessions[trace.session]
            touched[trace.session] = None
            if session.sampled:
                trace.spans.append((key, first, rows))
                refs[key] += 1
            else:
                trace.partial = True
        self._tables.drop_unused(key)

    def _add_logs(self, logs: pa.Table, groups: live_rows.Groups, touched: dict[str, None], wanting: list[str]) -> None:
        if groups.frame.height == 0:
            return
        key = self._tables.add(logs, groups.order)
        refs, traces = self._tables.refs, self.traces
        for tid, first, rows in zip(*(groups.column(c) for c in ("trace_id", "first", "rows")), strict=True):
            trace = traces.get(tid)
            if trace is None:  # records before any span of the trace: its own session until a span says
                trace = traces[tid] = live_rows.LiveTrace(tid)
                self._join(tid, trace, touched)
            touched[trace.session] = None
            if self.sessions[trace.session].sampled:
                trace.logs.append((key, first, rows))
                refs[key] += 1
            else:
                trace.partial = True
        self._tables.drop_unused(key)

    def _join(self, tid: str, trace: live_rows.LiveTrace, touched: dict[str, None]) -> None:
        session = self.sessions.get(trace.session)
        if session is None:
            session = self.sessions[trace.session] = live_rows.LiveSession(sampled=self._sampled(trace.session))
        session.traces.add(tid)
        touched[trace.session] = None

    def _move(
        self, tid: str, trace: live_rows.LiveTrace, sid: str, touched: dict[str, None], wanting: list[str]
    ) -> None:
        """`trace` belongs to session `sid` now (a span ranked before the one that named its session named it)."""
        old = self.sessions.get(trace.session)
        if old is not None:
            old.traces.discard(tid)
            touched[trace.session] = None  # its other traces are scored again without this one (or it goes)
        was_sampled = old is None or old.sampled
        trace.session = sid
        self._join(tid, trace, touched)
        now_sampled = self.sessions[sid].sampled
        if was_sampled and not now_sampled:
            self._tables.unref(trace.spans + trace.logs)
            trace.spans, trace.logs, trace.partial = [], [], True
        elif now_sampled and trace.partial:
            wanting.append(tid)

    def _sampled(self, sid: str) -> bool:
        return self.sample is None or session_sampled(sid, *self.sample)

    def _arrived(self, sid: str, now: float) -> None:
        session = self.sessions.get(sid)
        self._ready.pop(sid, None)
        self._idle.pop(sid, None)
        self._abandon.pop(sid, None)
        if session is None:
            return
        if not session.traces:  # its only trace moved to another session
            del self.sessions[sid]
            return
        session.last_arrival = now
        self.sessions[sid] = self.sessions.pop(sid)  # to the end: the dict is in order of last arrival
        session.due = session.sampled
        if not session.sampled:
            return
        if self._rooted(session) and any(self.traces[t].end_marker for t in session.traces):
            self._ready[sid] = None
        else:
            self._idle[sid] = None

    def _rooted(self, session: live_rows.LiveSession) -> bool:
        return all(self.traces[t].rooted for t in session.traces)

    # --- finishing and scoring -----------------------------------------------------------------------------

    def _finished(self, now: float) -> list[str]:
        """The due sessions finished by now (see the module docstring), each once."""
        ready = list(self._ready)
        self._ready.clear()
        first_wait = min(self.idle_s, self.abandon_s)
        while self._idle:
            sid = next(iter(self._idle))
            quiet = now - self.sessions[sid].last_arrival
            if quiet < first_wait:
                break
            del self._idle[sid]
            if quiet >= self.abandon_s or (quiet >= self.idle_s and self._rooted(self.sessions[sid])):
                ready.append(sid)
            else:  # quiet, but a root is missing: it waits for the abandon time
                self._abandon[sid] = None
        while self._abandon:
            sid = next(iter(self._abandon))
            if now - self.sessions[sid].last_arrival < self.abandon_s:
                break
            del self._abandon[sid]
            ready.append(sid)
        return ready

    def _score(self, ready: list[str]) -> pl.DataFrame:
        sessions = [self.sessions[sid] for sid in ready]
        traces = [self.traces[tid] for session in sessions for tid in sorted(session.traces)]
        spans, moved_spans = self._tables.gather([p for t in traces for p in t.spans], empty_spans())
        logs, moved_logs = self._tables.gather([p for t in traces for p in t.logs], empty_logs())
        for trace in traces:
            trace.spans = self._tables.move(trace.spans, moved_spans)
            trace.logs = self._tables.move(trace.logs, moved_logs)
        prices = self.target.prices()  # the lake's own prices, as offline scoring takes them
        config = (self.config or ScoringConfig()).with_prices_beneath(prices)
        self.prepare()
        assert self._connection is not None
        self._connection.prices(prices)
        try:
            con = self._connection.load(spans, logs)
            run = score_connection(con, tasks=self.tasks, config=config, evaluators=self.evaluators)
        finally:
            self._connection.release()
        for session in sessions:
            session.due = False
            session.scorings += 1
        scores = run.scores
        if self.sample is not None:
            scores = with_sample(scores, *self.sample)
        if self.write:
            write_score_frame(self.target, scores)
        for sink in self.sinks:
            sink(scores, run.root_spans)
        return scores

    # --- forgetting, and coming back -----------------------------------------------------------------------

    def _forget(self, now: float) -> None:
        gone = []
        for sid, session in self.sessions.items():  # oldest arrival first
            if now - session.last_arrival < self.retain_s:
                break
            if not session.due:
                gone.append(sid)
        for sid in gone:
            session = self.sessions.pop(sid)
            for tid in session.traces:
                trace = self.traces.pop(tid)
                self._tables.unref(trace.spans + trace.logs)
            if session.sampled:
                self.evicted.add(sid, session.traces, now)
        self.evicted.expire(now, self.late_window_s)

    def _revived(self, span_groups: live_rows.Groups, log_groups: live_rows.Groups) -> list[str]:
        """The evicted sessions that rows of this round belong to (by trace, or by the session they name)."""
        if not self.evicted:
            return []
        trace_ids = (*span_groups.column("trace_id"), *log_groups.column("trace_id"))
        named = span_groups.frame.get_column("session_id").drop_nulls().to_list()
        return self.evicted.revived(trace_ids, named, (self.traces, self.sessions))

    def _reload(self, trace_ids: pa.Array, skip: set[str]) -> tuple[pa.Table, pa.Table]:
        """These traces' rows in the lake files of the late window (but those of `skip`, read this round)."""
        since = self.clock() - self.late_window_s
        spans = read_recent(
            self.lake / SPANS_DIR, since, skip, lambda p: read_span_files(p, self.max_file_rows, trace_ids)
        )
        logs = read_recent(
            self.lake / LOGS_DIR, since, skip, lambda p: read_log_files(p, self.max_file_rows, trace_ids)
        )
        return spans, logs
