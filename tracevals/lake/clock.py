"""Time is read on the reader's clock: what counts as "now" for a window, and which span times are odd.

Span times are the clients' clocks: a client one day ahead, a clock never set (start time 0: 1970), an end
before the start. None of them may decide a verdict, so every window a command scores or judges caps at
the reader's now plus a skew allowance (`horizon`): `score` (offline and `--follow`), `report` and `gate`
over production traffic, "the night" of the production gate (the last day that holds a session starting
before the horizon, never a day a skewed client made up). Spans outside are kept in the lake, counted and
reported as a data-quality finding (`queries.time_quality`): future-dated (start after the horizon),
epoch-zero (start before `EPOCH_FLOOR`), negative duration (end before start). `tracevals sql` shows the
lake as it is, odd times included, to investigate them.

Late sessions: a session that arrives after the run that covered its time is scored by the next one, as
long as it is at most `late_seconds()` late: `score --since S` also scores the sessions that started in
the `late_seconds()` before S and have a trace with no score yet (a nightly `--since yesterday` scores
the session stamped late yesterday that arrived after last night's run), and `score --follow` watches the
partitions of that long ago.

| variable | default | meaning |
|---|---|---|
| `TRACEVALS_CLOCK_SKEW` | `5m` | how far ahead of the reader's clock a span may start and still count |
| `TRACEVALS_LATE_WINDOW` | `1d` | how late a session may arrive and still be scored by the next run |
"""

from __future__ import annotations

import datetime as dt
import os

from tracevals import env
from tracevals.lake.paths import LakeError
from tracevals.lake.retention import parse_seconds

SKEW_S = 300.0
LATE_S = 86400.0
# A start before this is a clock that was never set (0, or a default date), not a session of that time.
EPOCH_FLOOR = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
# The latest time a span can hold (nanoseconds since 1970 in 64 bits): no horizon lies beyond it.
LATEST = dt.datetime(2262, 4, 11, tzinfo=dt.timezone.utc)


def _seconds(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return parse_seconds(text, name)
    except ValueError as exc:
        raise LakeError(f"{exc}; unset it or set e.g. {int(default // 60)}m") from None


def skew_seconds() -> float:
    """TRACEVALS_CLOCK_SKEW, else `SKEW_S`."""
    return _seconds(env.CLOCK_SKEW, SKEW_S)


def late_seconds() -> float:
    """TRACEVALS_LATE_WINDOW, else `LATE_S`."""
    return _seconds(env.LATE_WINDOW, LATE_S)


def now() -> dt.datetime:
    """The reader's clock, UTC."""
    return dt.datetime.now(dt.timezone.utc)


def horizon(at: dt.datetime | None = None) -> dt.datetime:
    """The latest start time that counts: the reader's now (or `at`) plus the skew allowance."""
    return min((at or now()) + dt.timedelta(seconds=skew_seconds()), LATEST)


def capped(until: dt.datetime | None, at: dt.datetime | None = None) -> dt.datetime:
    """`until` (exclusive), or the horizon when there is none or it lies beyond: no window reaches past it."""
    limit = horizon(at)
    if until is None:
        return limit
    until = until if until.tzinfo else until.replace(tzinfo=dt.timezone.utc)
    return min(until, limit)
