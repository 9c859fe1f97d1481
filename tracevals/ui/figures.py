"""Every figure the UI shows, computed by the report's own code, once per change of the lake, in the background.

No request computes a figure. A worker thread reads the lake's index (its runs and how much production
traffic it holds) when the lake changes, then, for each run whose attempts or scores changed, the run's
report exactly as `tracevals report --run RUN` makes it (`scoring.load_lake_data`, then
`cli.report.report_from_data`: the one way a report is made), its JSON document as `--out r.json` writes
it, and the production report and gate of a range as `tracevals report/gate --production` make them.
Pages read these results; a figure not computed yet shows as pending and the page polls.
"""

from __future__ import annotations

import datetime as dt
import json
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb

from tracevals.lake.lake import Lake
from tracevals.lake.unreadable import error_line
from tracevals.model.case import Case
from tracevals.model.json_text import json_text
from tracevals.model.score import Score
from tracevals.model.trajectory import Trajectory
from tracevals.queries import open_lake
from tracevals.queries.interrupts import interrupt_all

__all__ = ["Entry", "Figures", "ProductionFigures", "RunFigures", "RunRow"]

# One row per (run, variant) of the lake, with what changes when attempts or scores of the run land. Read
# from the raw rows, a few columns (not through the views: on a lake of 10^7 spans the views' per-trace
# aggregation costs minutes on two busy cores, these columns a few seconds); a trace belongs to the run its
# spans name, as `attempts` reads it. The figures themselves are the report's.
_INDEX_SQL = """
WITH a AS (
    SELECT run_id, variant, count(DISTINCT trace_id) AS attempts, count(DISTINCT task_id) AS tasks,
           min(start_time) AS started, max(end_time) AS ended, max(commit_hash) AS commit_hash
    FROM raw_spans WHERE run_id IS NOT NULL AND task_id IS NOT NULL AND variant IS NOT NULL
    GROUP BY run_id, variant
), s AS (
    SELECT run_id, count(*) AS scores, max(scored_at) AS scored_at FROM raw_scores WHERE run_id IS NOT NULL
    GROUP BY run_id
)
SELECT a.*, coalesce(s.scores, 0) AS scores, s.scored_at FROM a LEFT JOIN s USING (run_id)
ORDER BY a.started DESC, a.run_id, a.variant
"""
# Every trace, and when the last started: with the runs' attempts, how much production traffic there is.
_TRACES_SQL = "SELECT count(DISTINCT trace_id) AS traces, max(start_time) AS last FROM raw_spans"


@dataclass(frozen=True)
class RunRow:
    """One harness run of the lake: its variants and what identifies its current content."""

    run_id: str
    variants: tuple[str, ...]
    attempts: int
    tasks: int
    started: dt.datetime | None
    ended: dt.datetime | None
    commits: tuple[str, ...]
    scores: int
    signature: tuple[Any, ...]


@dataclass
class RunFigures:
    """A run's report (`report.ReportData`), its JSON document, and what it was computed from."""

    run_id: str
    data: Any  # report.ReportData
    doc: dict[str, Any]  # the JSON report, as `tracevals report --run RUN --out r.json` writes it
    trajectories: dict[str, Trajectory]
    scores: dict[str, list[Score]]  # by trace id
    cases: Mapping[str, Case]
    attribution: dict[str, Any] | None = None  # `tracevals run --attribute-variance`'s JSON, where it applies
    seconds: float = 0.0


@dataclass
class ProductionFigures:
    """The production report of a range (`stats.production.ProductionSummary`), its JSON and the gate."""

    summary: Any
    doc: dict[str, Any]
    gate: Any  # stats.release_gate.GateResult, or None with `gate_error`
    gate_error: str | None
    by_day_service: list[tuple[str, str, int]]  # (day, service, sessions)
    facets: dict[str, Any]
    scores: dict[str, list[Score]] = field(default_factory=dict)  # by trace id: what the report counted
    seconds: float = 0.0


@dataclass
class Entry:
    """A figure's state: its value (perhaps of an older state of the lake), or the one line of its error."""

    value: Any = None
    error: str | None = None
    signature: tuple[Any, ...] | None = None
    computing: bool = False


@dataclass
class _Index:
    runs: list[RunRow] = field(default_factory=list)
    production_traces: int = 0
    production_last: dt.datetime | None = None
    generation: int = 0


class Figures:
    """The figures of one lake, recomputed in a background thread when the lake changes."""

    def __init__(self, lake: Lake) -> None:
        self.lake = lake
        self._lock = threading.Lock()
        self._entries: dict[tuple[Any, ...], Entry] = {}
        self._jobs: queue.Queue[tuple[tuple[Any, ...], tuple[Any, ...], Callable[[], Any]] | None] = queue.Queue()
        self.index = _Index()
        self.index_error: str | None = None
        self.index_ready = threading.Event()
        self._generation = 0
        self.version = 0  # raised whenever a figure or the index changes: an open page knows to redraw
        self._thread = threading.Thread(target=self._work, name="tracevals-ui-figures", daemon=True)
        self._stopping = threading.Event()

    def start(self, generation: int = 1) -> None:
        self._thread.start()
        self.lake_changed(generation)

    def stop(self, wait_s: float = 10.0) -> None:
        """No job starts after this; the one running is interrupted (its DuckDB query stops) and waited for
        (at most `wait_s`). The process must not exit under a running query: DuckDB's threads then end it with
        "terminate called … FATAL: exception not rethrown" (SIGABRT) instead of its exit status."""
        self._stopping.set()
        self._jobs.put(None)
        if self._thread.is_alive():
            interrupt_all()
            self._thread.join(wait_s)

    def lake_changed(self, generation: int) -> None:
        """The lake has new files: read its index again (then the runs whose content changed)."""
        self._generation = generation
        self._jobs.put((("index",), (generation,), lambda: self._read_index(generation)))

    @property
    def busy(self) -> bool:
        """Whether anything is being computed or waits to be (pages poll while it is)."""
        with self._lock:
            return not self.index_ready.is_set() or any(e.computing for e in self._entries.values())

    def entry(self, key: tuple[Any, ...]) -> Entry | None:
        with self._lock:
            return self._entries.get(key)

    def want(self, key: tuple[Any, ...], signature: tuple[Any, ...], compute: Callable[[], Any]) -> Entry:
        """The entry of `key`, scheduling its computation when it has none for `signature` yet."""
        with self._lock:
            entry = self._entries.setdefault(key, Entry())
            if entry.signature != signature and not entry.computing:
                entry.computing = True
                self._jobs.put((key, signature, compute))
            return entry

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None or self._stopping.is_set():
                return
            key, signature, compute = job
            try:
                value, error = compute(), None
            except Exception as exc:  # one line on the page: what failed and why
                value, error = None, f"{type(exc).__name__}: {error_line(exc) if str(exc) else ''}"
            with self._lock:
                self.version += 1
                if key == ("index",):
                    continue
                entry = self._entries.setdefault(key, Entry())
                if error is None:
                    entry.value = value
                entry.error, entry.signature, entry.computing = error, signature, False

    # -- the index -------------------------------------------------------------------------------------

    def _read_index(self, generation: int) -> None:
        con = open_lake(self.lake, views=(), materialize=False)
        try:
            runs = _runs(con.execute(_INDEX_SQL).fetchall())
            [(traces, last)] = con.execute(_TRACES_SQL).fetchall()
            traces = int(traces or 0) - sum(r.attempts for r in runs)  # the traces of no harness run
        except duckdb.Error as exc:
            self.index_error = f"cannot read the lake {self.lake}: {error_line(exc)}"
            self.index_ready.set()
            return
        finally:
            con.close()
        self.index = _Index(runs, int(traces or 0), last, generation)
        self.index_error = None
        self.index_ready.set()
        for row in runs:  # newest first: the run a person most likely opens
            self.run(row.run_id)

    def trajectory(self, trace_id: str) -> Trajectory | None:
        """The attempt `trace_id` as a computed run's report read it (None: in no run computed yet)."""
        with self._lock:
            entries = [e for key, e in self._entries.items() if key[0] == "run" and len(key) == 2]
        for entry in entries:
            found = entry.value.trajectories.get(trace_id) if entry.value is not None else None
            if found is not None:
                return found
        return None

    def verdicts(self, trace_id: str) -> list[Score] | None:
        """The verdicts a computed report counted for `trace_id` (stored, or computed by the report for an
        attempt or a session no score job reached); None: in no computed report."""
        with self._lock:
            values = [e.value for e in self._entries.values() if e.value is not None]
        for value in values:
            found = value.scores.get(trace_id)
            if found:
                return list(found)
        return None

    def run_row(self, run_id: str) -> RunRow | None:
        return next((r for r in self.index.runs if r.run_id == run_id), None)

    def run(self, run_id: str) -> Entry | None:
        """The figures of a run (None: no such run in the lake)."""
        row = self.run_row(run_id)
        if row is None:
            return None
        return self.want(("run", run_id), row.signature, lambda: self._compute_run(run_id))

    def compare(self, run_id: str, baseline: str, candidate: str, vary: tuple[str, ...] = ()) -> Entry | None:
        """The run's report with this pair compared, `vary` under test (as `tracevals report --run RUN
        --baseline B --candidate C --vary KEY`)."""
        row = self.run_row(run_id)
        if row is None:
            return None
        pair = (baseline, candidate)
        return self.want(("run", run_id, *pair, vary), row.signature, lambda: self._compute_run(run_id, pair, vary))

    def production(self, since: dt.datetime | None = None, until: dt.datetime | None = None) -> Entry:
        """The production report and gate of `[since, until)` (default: the last 7 days, as the report's)."""
        signature = (self.index.production_traces, self.index.production_last, self.index.generation)
        return self.want(("production", since, until), signature, lambda: self._compute_production(since, until))

    # -- the computations (each with its own connection: the request connection stays free) -------------

    def _compute_run(self, run_id: str, pair: tuple[str, str] | None = None, vary: tuple[str, ...] = ()) -> RunFigures:
        from tracevals.cli.shared.reports import report_from_data
        from tracevals.queries.selection import Selection
        from tracevals.report import report_json
        from tracevals.scoring.lake_data import load_lake_data, open_report_lake

        started = time.perf_counter()
        con = open_report_lake(self.lake)  # as `report` opens it
        try:
            # load_lake_data narrows the views to the run's sessions first: a run's cost, not the lake's
            variants = pair or ()
            lake_data = load_lake_data(self.lake, Selection(runs=(run_id,), variants=variants), None, con=con)
            baseline, candidate = pair if pair is not None else (None, None)
            data = report_from_data(self.lake, lake_data, baseline=baseline, candidate=candidate, vary=vary)
            attribution = _attribution(self.lake, data, run_id, con)
        finally:
            con.close()
        return RunFigures(
            run_id=run_id,
            data=data,
            doc=_strict(report_json(data)),
            trajectories={t.trace_id: t for t in lake_data.trajectories},
            scores=_by_trace(lake_data.scores),
            cases=lake_data.cases,
            attribution=attribution,
            seconds=time.perf_counter() - started,
        )

    def _compute_production(self, since: dt.datetime | None, until: dt.datetime | None) -> ProductionFigures:
        from tracevals.report.production import production_json
        from tracevals.scoring.production_data import load_production_data
        from tracevals.stats.production import summarize_production
        from tracevals.stats.production_gate import ProductionThresholds, run_production_gate

        started = time.perf_counter()
        con = open_lake(self.lake)
        try:
            data = load_production_data(self.lake, since, until, con=con)
        finally:
            con.close()
        meta = {**data.provenance, "lake": str(self.lake)}
        summary = summarize_production(data.trajectories, data.scores, data.facets, meta=meta)
        gate, gate_error = None, None
        try:
            gate = run_production_gate(summary, ProductionThresholds())
        except ValueError as exc:
            gate_error = str(exc)
        sessions: dict[tuple[str, str], set[str]] = {}
        for f in data.facets.values():
            sessions.setdefault((f.day.isoformat(), f.service), set()).add(f.session_id)
        return ProductionFigures(
            scores=_by_trace(data.scores),
            summary=summary,
            doc=_strict(production_json(summary)),
            gate=gate,
            gate_error=gate_error,
            by_day_service=sorted((d, s, len(ids)) for (d, s), ids in sessions.items()),
            facets=data.facets,
            seconds=time.perf_counter() - started,
        )


def _runs(rows: list[tuple[Any, ...]]) -> list[RunRow]:
    by_run: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        by_run.setdefault(str(row[0]), []).append(row)
    out = []
    for run_id, group in by_run.items():
        attempts = sum(int(r[2]) for r in group)
        started = min((r[4] for r in group if r[4] is not None), default=None)
        ended = max((r[5] for r in group if r[5] is not None), default=None)
        scores, scored_at = int(group[0][7]), group[0][8]
        out.append(
            RunRow(
                run_id=run_id,
                variants=tuple(sorted(str(r[1]) for r in group)),
                attempts=attempts,
                tasks=max(int(r[3]) for r in group),
                started=started,
                ended=ended,
                commits=tuple(sorted({str(r[6]) for r in group if r[6]})),
                scores=scores,
                signature=(attempts, ended, scores, scored_at),
            )
        )
    return sorted(out, key=lambda r: r.started or dt.datetime.min.replace(tzinfo=dt.timezone.utc), reverse=True)


def _attribution(lake: Lake, data: Any, run_id: str, con: duckdb.DuckDBPyConnection) -> dict[str, Any] | None:
    """`tracevals run --attribute-variance`'s figures, for a run that holds its three levels of a variant."""
    from tracevals.cli.shared.variance import LIVE_CALLS_SQL, attribution_json, level_figures
    from tracevals.stats.variance import LEVELS, attribute

    bases = {v.rsplit("@", 1)[0] for v in data.summaries if "@" in v}
    for base in sorted(bases):
        if all(f"{base}@{level}" in data.summaries for level in LEVELS):
            live_calls = {str(v): int(n) for v, n in con.execute(LIVE_CALLS_SQL, [run_id]).fetchall()}
            result = attribute(level_figures(data, base, live_calls))
            return {"variant": base, **attribution_json(result)}
    return None


def _strict(doc: Any) -> Any:
    """A report document as its JSON download is: strict JSON (no NaN), other values as their text."""
    return json.loads(json_text(doc))


def _by_trace(scores: Iterable[Score]) -> dict[str, list[Score]]:
    """Score rows by the trace they score ("": a row with no trace)."""
    out: dict[str, list[Score]] = {}
    for s in scores:
        out.setdefault(s.trace_id or "", []).append(s)
    return out
