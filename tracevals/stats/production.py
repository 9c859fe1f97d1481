"""Statistics of production traffic: each evaluator's pass rate per service / agent / day with its
Wilson interval, the night against the days before it, the worst sessions, failures by kind and by tool.

A trial is one stored (or computed) verdict of one evaluator on one trace: the rate of `retry_discipline`
is the share of traces it passed. A session counts on the UTC day it started. The trend compares the
last day of the selection (the night a nightly job has just scored) with the days before it, pooled:
a one-sided Fisher exact test asks how likely a rate this low would be if the night were like the
days before (exact at any n, unlike a normal approximation at 0/n or n/n). The gate fails a night whose
rate fell significantly (p < alpha), fell by more than `max_drop`, or lies below `min_rate`.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracevals.model.facets import TraceFacet
from tracevals.model.findings import HAZARD, failure_kinds, score_findings
from tracevals.model.score import Score
from tracevals.model.trajectory import Trajectory
from tracevals.stats.estimators import Z95, wilson

__all__ = [
    "ALPHA",
    "FailureKind",
    "GroupRate",
    "ProductionSummary",
    "Rate",
    "SessionFailure",
    "SessionHazard",
    "ToolFailures",
    "Trend",
    "fell_p_value",
    "summarize_production",
]

ALPHA = 0.05  # the one-sided significance of a fall
ALL = "*"  # the service / agent of a row over all of them


@dataclass(frozen=True)
class Rate:
    passes: int
    n: int
    z: float = Z95

    @property
    def rate(self) -> float:
        return self.passes / self.n if self.n else math.nan

    @property
    def wilson(self) -> tuple[float, float]:
        return wilson(self.passes, self.n, self.z)


@dataclass(frozen=True)
class GroupRate:
    """One evaluator's rate over one group: a service and agent (or `*`), a day (or None: every day)."""

    evaluator: str
    service: str
    agent: str
    day: dt.date | None
    rate: Rate


@dataclass(frozen=True)
class Trend:
    """The night (the last day) against the days before it, for one evaluator."""

    evaluator: str
    night: dt.date
    night_rate: Rate
    before: Rate
    before_days: int
    p_value: float  # one-sided Fisher exact: P(a night this bad | the night is like the days before)
    alpha: float = ALPHA

    @property
    def drop(self) -> float:
        return self.before.rate - self.night_rate.rate

    @property
    def significant(self) -> bool:
        return self.p_value < self.alpha and self.drop > 0

    @property
    def statement(self) -> str:
        b, n = self.before, self.night_rate
        verdict = "fell significantly" if self.significant else ("fell" if self.drop > 0 else "did not fall")
        return (
            f"{self.evaluator}: {n.passes}/{n.n} = {n.rate:.3f} on {self.night} vs {b.passes}/{b.n} = {b.rate:.3f} "
            f"over the {self.before_days} day{'s' if self.before_days != 1 else ''} before; {verdict} "
            f"(one-sided Fisher p = {self.p_value:.3g})"
        )


@dataclass(frozen=True)
class SessionFailure:
    """A session with failed verdicts: what failed, why, and where to look."""

    session_id: str
    service: str
    agent: str
    day: dt.date
    traces: tuple[str, ...]
    failed: int  # failed verdicts over the session's traces
    verdicts: int
    evaluators: tuple[str, ...]
    kinds: tuple[str, ...]  # "evaluator: kind"
    reasons: tuple[str, ...]  # "evaluator: reason", the first few


@dataclass(frozen=True)
class SessionHazard:
    """A hazard one session showed (a finding of severity `hazard` on one of its traces)."""

    session_id: str
    day: dt.date
    hazard: str  # the release hazard (`unauthorised_call` ...)
    kind: str  # the finding kind that raised it
    evaluator: str
    trace_id: str
    detail: str


@dataclass(frozen=True)
class FailureKind:
    evaluator: str
    kind: str
    verdicts: int  # failed verdicts with this kind
    sessions: tuple[str, ...]  # the sessions it happened in, worst first


@dataclass(frozen=True)
class ToolFailures:
    tool: str
    calls: int
    failed: int
    error_types: tuple[tuple[str, int], ...]
    sessions: int  # sessions with a failed call of the tool


@dataclass
class ProductionSummary:
    evaluators: list[str]
    days: list[dt.date]
    overall: dict[str, Rate]
    by_group: list[GroupRate]  # per service and agent, every day
    by_day: list[GroupRate]  # per day, every service and agent
    by_group_day: list[GroupRate]
    trends: list[Trend]
    worst_sessions: list[SessionFailure]
    kinds: list[FailureKind]
    tools: list[ToolFailures]
    sessions: int
    traces: int
    failed_sessions: int
    z: float = Z95
    alpha: float = ALPHA
    meta: dict[str, Any] = field(default_factory=dict)
    hazards: list[SessionHazard] = field(default_factory=list)  # every hazard, by day then session
    session_rates: dict[dt.date, Rate] = field(default_factory=dict)  # per day: sessions with no failed verdict

    def trend(self, evaluator: str) -> Trend | None:
        return next((t for t in self.trends if t.evaluator == evaluator), None)


def fell_p_value(night_passes: int, night_n: int, before_passes: int, before_n: int) -> float:
    """One-sided Fisher exact test: P(X <= night_passes) for X hypergeometric with the pooled passes
    drawn into a night of night_n trials. 1.0 when either side has no trial."""
    if night_n == 0 or before_n == 0:
        return 1.0
    total, passes = night_n + before_n, night_passes + before_passes
    low, high = max(0, passes - before_n), min(passes, night_n)

    def log_pmf(x: int) -> float:
        return _log_comb(passes, x) + _log_comb(total - passes, night_n - x) - _log_comb(total, night_n)

    terms = [log_pmf(x) for x in range(low, min(night_passes, high) + 1)]
    if not terms:
        return 0.0
    top = max(terms)
    return min(1.0, math.exp(top) * math.fsum(math.exp(t - top) for t in terms))


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def summarize_production(
    trajectories: Sequence[Trajectory],
    scores: Iterable[Score],
    facets: Mapping[str, TraceFacet],
    *,
    z: float = Z95,
    alpha: float = ALPHA,
    worst: int = 20,
    meta: Mapping[str, Any] | None = None,
) -> ProductionSummary:
    """Every figure of a production report (see the module docstring). Scores of traces without a facet
    (not in the selection) are left out."""
    wilson(0, 1, z)  # validates z
    verdicts = [s for s in scores if s.trace_id is not None and s.trace_id in facets]
    evaluators = sorted({s.evaluator for s in verdicts})
    days = sorted({f.day for f in facets.values()})
    counts: dict[tuple[str, str, str, dt.date | None], list[int]] = defaultdict(lambda: [0, 0])
    for s in verdicts:
        f = facets[str(s.trace_id)]
        for key in ((s.evaluator, f.service, f.agent, None), (s.evaluator, ALL, ALL, f.day),
                    (s.evaluator, f.service, f.agent, f.day), (s.evaluator, ALL, ALL, None)):  # fmt: skip
            counts[key][0] += s.passed
            counts[key][1] += 1

    def rows(pick: Any) -> list[GroupRate]:
        out = [
            GroupRate(e, svc, agent, day, Rate(c[0], c[1], z))
            for (e, svc, agent, day), c in counts.items()
            if pick(svc, day)
        ]
        return sorted(out, key=lambda r: (r.evaluator, r.service, r.agent, r.day or dt.date.min))

    overall = {e: Rate(counts[(e, ALL, ALL, None)][0], counts[(e, ALL, ALL, None)][1], z) for e in evaluators}
    by_group = rows(lambda svc, day: svc != ALL and day is None)
    by_day = rows(lambda svc, day: svc == ALL and day is not None)
    by_group_day = rows(lambda svc, day: svc != ALL and day is not None)
    trends = _trends(by_day, days, evaluators, z, alpha)
    sessions = _sessions(verdicts, facets)
    hazards, session_rates = _session_verdicts(verdicts, facets, z)
    return ProductionSummary(
        evaluators=evaluators,
        days=days,
        overall=overall,
        by_group=by_group,
        by_day=by_day,
        by_group_day=by_group_day,
        trends=trends,
        worst_sessions=sessions[:worst],
        kinds=_kinds(verdicts, facets, sessions),
        tools=_tools(trajectories, facets),
        sessions=len({f.session_id for f in facets.values()}),
        traces=len(facets),
        failed_sessions=len(sessions),
        z=z,
        alpha=alpha,
        meta=dict(meta or {}),
        hazards=hazards,
        session_rates=session_rates,
    )


def _trends(
    by_day: Sequence[GroupRate], days: Sequence[dt.date], evaluators: Sequence[str], z: float, alpha: float
) -> list[Trend]:
    if len(days) < 2:
        return []
    night = days[-1]
    out = []
    for e in evaluators:
        mine = [r for r in by_day if r.evaluator == e]
        tonight = next((r.rate for r in mine if r.day == night), None)
        earlier = [r.rate for r in mine if r.day is not None and r.day < night]
        if tonight is None or not earlier:
            continue
        before = Rate(sum(r.passes for r in earlier), sum(r.n for r in earlier), z)
        p = fell_p_value(tonight.passes, tonight.n, before.passes, before.n)
        out.append(Trend(e, night, tonight, before, len(earlier), p, alpha))
    return out


def _session_verdicts(
    verdicts: Sequence[Score], facets: Mapping[str, TraceFacet], z: float
) -> tuple[list[SessionHazard], dict[dt.date, Rate]]:
    """Every session's hazards (read from its findings), and per day (a session's first) the sessions
    whose every verdict passed, over the sessions with a verdict."""
    day_of: dict[str, dt.date] = {}
    for f in sorted(facets.values(), key=lambda f: (f.start_ms, f.trace_id)):
        day_of.setdefault(f.session_id, f.day)
    hazards: list[SessionHazard] = []
    passed: dict[str, bool] = {}
    for s in verdicts:
        session = facets[str(s.trace_id)].session_id
        found = score_findings(s.evaluator, s.passed, s.reason, s.details)
        passed[session] = passed.get(session, True) and not any(f.fails for f in found)
        hazards += [
            SessionHazard(session, day_of[session], f.hazard or f.kind, f.kind, s.evaluator, str(s.trace_id), f.message)
            for f in found
            if f.severity == HAZARD
        ]
    counts: dict[dt.date, list[int]] = defaultdict(lambda: [0, 0])
    for session, ok in passed.items():
        counts[day_of[session]][0] += ok
        counts[day_of[session]][1] += 1
    rates = {day: Rate(c[0], c[1], z) for day, c in sorted(counts.items())}
    return sorted(hazards, key=lambda h: (h.day, h.session_id, h.trace_id)), rates


def _sessions(verdicts: Sequence[Score], facets: Mapping[str, TraceFacet]) -> list[SessionFailure]:
    """The sessions with at least one failed verdict, worst first: the most failed verdicts, then the
    most evaluators failed, then the latest, then the id."""
    by_session: dict[str, list[Score]] = defaultdict(list)
    for s in verdicts:
        by_session[facets[str(s.trace_id)].session_id].append(s)
    traces: dict[str, list[TraceFacet]] = defaultdict(list)
    for f in facets.values():
        traces[f.session_id].append(f)
    out = []
    for session_id, mine in by_session.items():
        failed = [s for s in mine if not s.passed]
        if not failed:
            continue
        first = min(traces[session_id], key=lambda f: (f.start_ms, f.trace_id))
        kinds = [f"{s.evaluator}: {k}" for s in failed for k in failure_kinds(s)]
        out.append(
            SessionFailure(
                session_id=session_id,
                service=first.service,
                agent=first.agent,
                day=first.day,
                traces=tuple(f.trace_id for f in sorted(traces[session_id], key=lambda f: (f.start_ms, f.trace_id))),
                failed=len(failed),
                verdicts=len(mine),
                evaluators=tuple(sorted({s.evaluator for s in failed})),
                kinds=tuple(dict.fromkeys(kinds)),
                reasons=tuple(f"{s.evaluator}: {s.reason}" for s in failed[:6]),
            )
        )
    latest = {sid: max(f.start_ms for f in traces[sid]) for sid in by_session}
    out.sort(key=lambda f: (-f.failed, -len(f.evaluators), -latest[f.session_id], f.session_id))
    return out


def _kinds(
    verdicts: Sequence[Score], facets: Mapping[str, TraceFacet], ranked: Sequence[SessionFailure]
) -> list[FailureKind]:
    order = {s.session_id: i for i, s in enumerate(ranked)}
    count: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], set[str]] = defaultdict(set)
    for s in verdicts:
        if s.passed:
            continue
        for kind in failure_kinds(s):
            count[(s.evaluator, kind)] += 1
            where[(s.evaluator, kind)].add(facets[str(s.trace_id)].session_id)
    kinds = [
        FailureKind(e, k, n, tuple(sorted(where[(e, k)], key=lambda sid: (order.get(sid, 1 << 30), sid))))
        for (e, k), n in count.items()
    ]
    return sorted(kinds, key=lambda f: (-len(f.sessions), -f.verdicts, f.evaluator, f.kind))


def _tools(trajectories: Sequence[Trajectory], facets: Mapping[str, TraceFacet]) -> list[ToolFailures]:
    calls: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    errors: dict[str, Counter[str]] = defaultdict(Counter)
    sessions: dict[str, set[str]] = defaultdict(set)
    for t in trajectories:
        facet = facets.get(t.trace_id)
        if facet is None:
            continue
        for c in t.tool_calls:
            calls[c.name] += 1
            if c.error_type is not None:  # failed (a gap never executed is no failure of the tool)
                failed[c.name] += 1
                errors[c.name][c.error_type] += 1
                sessions[c.name].add(facet.session_id)
    out = [
        ToolFailures(name, calls[name], failed[name], tuple(errors[name].most_common()), len(sessions[name]))
        for name in calls
    ]
    return sorted(out, key=lambda t: (-t.failed, -t.calls, t.tool))
