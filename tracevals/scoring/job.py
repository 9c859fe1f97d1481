"""A scoring job, as one value: what to read, what to score it with, what to do with the rows.

`ScoringJob` is built once (by the CLI's shared builders, `tracevals.scoring.options`, or by hand) and
handed to an engine (`tracevals.scoring.engines`): `local` (this machine's processes), `ray`, `spark`.
Every engine gives the same rows for the same job; what differs is only where the work runs.

>>> job = ScoringJob(Lake.open("lake"), selection=Selection(since=yesterday, fraction=0.1, seed=7))
>>> run = score(job)                       # the local engine
>>> run = score(job, engine="ray")         # the same rows, on Ray
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from tracevals.lake.lake import Lake
from tracevals.queries.groups import GROUP_ROWS
from tracevals.queries.selection import Selection
from tracevals.scoring.config import ScoringConfig

if TYPE_CHECKING:
    import polars as pl

    from tracevals.evaluators.evaluator import Evaluator
    from tracevals.model.case import Case

#: Where score rows go besides the lake: (score rows, trace id -> root span id), e.g. an `EvaluationEmitter`.
ScoreSink = Callable[["pl.DataFrame", Mapping[str, str]], object]

# Sessions longer than this that straddle `since` may be cut: the partitions before `since` are read back
# this far, so that a session that began before `since` is seen from its first span.
SESSION_MARGIN = dt.timedelta(hours=12)


@dataclass(frozen=True)
class ScoringJob:
    """Everything one scoring run is. Immutable and (but for `sinks` and `progress`) picklable: a worker gets a
    copy."""

    lake: Lake
    selection: Selection | None = None  # None: every session
    tasks: tuple[Case, ...] | None = None  # None: no case (production traffic) unless the config gives one
    config: ScoringConfig = field(default_factory=ScoringConfig)
    evaluators: tuple[Evaluator, ...] | None = None  # None: the config's (else the defaults)
    write: bool = True  # append the rows to LAKE/scores/
    keep_scores: bool = True  # False: keep only counts per evaluator (`ScoringRun.tallies`): the nightly job
    keep_batch: bool = False  # keep the scored traces as frames (scored on this process)
    sinks: tuple[ScoreSink, ...] = ()  # handed each group's rows as they are scored (never pickled)
    workers: int = 1  # groups scored at once (local: processes; ray / spark: CPUs and partitions)
    max_rows: int = GROUP_ROWS  # span and log rows per group of whole sessions
    memory_limit: str | None = None  # each group's DuckDB memory_limit
    buckets: int | None = None  # ray / spark: buckets of sessions (default: from the lake's size)
    # told (groups scored, groups) as each group of sessions is done, on this process (never pickled; the local
    # engine's: `tracevals score` draws its bar with it)
    progress: Callable[[int, int], None] | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, not {self.workers}")
        if self.tasks is not None and not isinstance(self.tasks, tuple):
            object.__setattr__(self, "tasks", tuple(self.tasks))
        if self.evaluators is not None and not isinstance(self.evaluators, tuple):
            object.__setattr__(self, "evaluators", tuple(self.evaluators))
        if not isinstance(self.sinks, tuple):
            object.__setattr__(self, "sinks", tuple(self.sinks))

    def chosen(self) -> list[Evaluator]:
        """The evaluators this job runs: its own, else the config's names (else the defaults)."""
        from tracevals.evaluators.registry import instances

        return list(self.evaluators) if self.evaluators is not None else instances(self.config.evaluators)

    def lower_bound(self) -> dt.datetime | None:
        """The first hour a reader opens (`Selection.read_from`): the selection's `since`, less its late window,
        less `SESSION_MARGIN` (partition pruning for the lower bound only: a session is in range by its first
        span)."""
        return self.selection.read_from(SESSION_MARGIN) if self.selection is not None else None

    def priced(self) -> ScoringJob:
        """This job with the lake's own prices (`prices.json`) beneath the config's: what every engine and
        the report score cost with."""
        return replace(self, config=self.config.with_prices_beneath(self.lake.prices()))

    def without_sinks(self) -> ScoringJob:
        """What a worker process gets: the job without its sinks and its progress (they stay with the caller)."""
        return replace(self, sinks=(), progress=None) if self.sinks or self.progress else self
