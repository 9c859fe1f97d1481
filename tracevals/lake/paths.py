"""Time ranges over the lake's hive partitions (UTC date and hour), the lake's error, and the --strict
switch. Where the files of a range are is the `Lake`'s to say (`tracevals.lake.lake`); here is the
arithmetic both implementations and the SQL share: `bounds` turns since/until into (date, hour) pairs,
`partition_filter` the same range as a condition on the hive columns `date` / `hour`; and a path as a file
glob that matches only itself (`pattern`).
"""

from __future__ import annotations

import datetime as dt
import glob
import os

from tracevals import env
from tracevals.model.errors import UserError


class LakeError(UserError):
    """The lake cannot be opened (missing directory, unreadable files, a view that does not apply)."""


def pattern(path: str | os.PathLike[str]) -> str:
    """`path` as a glob pattern that matches only itself. DuckDB's file globs and Python's `glob` read `*`, `?`
    and `[` in any part of a path, so a lake under `runs [old]/` would match nothing (or another folder's
    files); `glob.escape`'s `[[]`, `[*]`, `[?]` are read as those characters by both. (Polars is told not to
    glob a path it is given: `glob=False`.)"""
    return glob.escape(os.fspath(path))


#: Whether an unreadable lake file fails (True) or is skipped with a warning (False); None: the
#: environment decides (TRACEVALS_STRICT). The CLI's --strict sets it for its invocation.
strict_files: bool | None = None


def strict() -> bool:
    if strict_files is not None:
        return strict_files
    return os.environ.get(env.STRICT, "").strip().lower() in ("1", "true", "yes", "on")


def _hour_bound(value: dt.date | dt.datetime | str, end: bool) -> tuple[dt.date, int]:
    """(date, hour) of a range bound; a bare date covers its whole day (hour 0 as `since`, 23 as `until`)."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = dt.datetime.fromisoformat(text) if len(text) > 10 else dt.date.fromisoformat(text)
        except ValueError:
            try:  # "2026-11-29T08": an hour, the partition unit
                value = dt.datetime.strptime(text, "%Y-%m-%dT%H")
            except ValueError:
                raise LakeError(f"{text!r} is not a date (YYYY-MM-DD) or an hour (YYYY-MM-DDTHH)") from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value.date(), value.hour
    return value, 23 if end else 0


Bound = tuple[dt.date, int]


def bounds(
    since: dt.date | dt.datetime | str | None, until: dt.date | dt.datetime | str | None
) -> tuple[Bound | None, Bound | None]:
    return (
        None if since is None else _hour_bound(since, end=False),
        None if until is None else _hour_bound(until, end=True),
    )


def partition_filter(
    since: dt.date | dt.datetime | str | None = None, until: dt.date | dt.datetime | str | None = None
) -> str:
    """A WHERE condition on the hive columns `date` / `hour` (both bounds inclusive, UTC); '' for no range."""
    low, high = bounds(since, until)
    conditions = []
    if low is not None:
        conditions.append(f"(date > DATE '{low[0]}' OR (date = DATE '{low[0]}' AND hour >= {low[1]}))")
    if high is not None:
        conditions.append(f"(date < DATE '{high[0]}' OR (date = DATE '{high[0]}' AND hour <= {high[1]}))")
    return " AND ".join(conditions)
