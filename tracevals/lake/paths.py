"""Where the lake's files are: the table folders, hive partitions by UTC date and hour, and which
partitions a time range covers. A lake is a directory or an object-store prefix (`s3://bucket/lake`).

`partition_globs` lists the partition folders in range so that a reader never opens another file;
`partition_filter` is the same range as a condition on the hive columns `date` / `hour`.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from tracevals import env


class LakeError(Exception):
    """The lake cannot be opened (missing directory, unreadable files, a view that does not apply)."""


def is_remote(lake: str) -> bool:
    """Whether `lake` is a URL (`s3://bucket/prefix`, ...) rather than a directory: its files are then read
    and written through `tracevals.lake.storage.lake_filesystem`."""
    return "://" in lake


#: Whether an unreadable lake file fails (True) or is skipped with a warning (False); None: the
#: environment decides (TRACEVALS_STRICT). The CLI's --strict sets it for its invocation.
strict_files: bool | None = None


def strict() -> bool:
    if strict_files is not None:
        return strict_files
    return os.environ.get(env.STRICT, "").strip().lower() in ("1", "true", "yes", "on")


#: What a lake directory holds; a directory with none of them (but other files) is a wrong --lake.
LAKE_ENTRIES = ("spans", "logs", "scores", "run_cases", "prices.json")


def check_lake_dir(lake: str) -> None:
    """Raise `LakeError` unless `lake` can be a lake: not empty text, a directory (local lakes), and either
    empty (a lake nothing has been written to yet) or holding one of `LAKE_ENTRIES`. A project folder
    passed by mistake says where its lake probably is, instead of reading as a lake of 0 sessions."""
    if not lake.strip():
        raise LakeError("the lake path is empty; pass --lake DIR (or set TRACEVALS_LAKE)")
    if is_remote(lake):
        from tracevals.lake.storage import check_lake

        check_lake(lake)  # the scheme, the bucket and the credentials, said in one line
        return
    root = Path(lake)
    if not root.is_dir():
        raise LakeError(f"lake {lake!r} is not a directory; pass the folder that holds spans/")
    if any((root / name).exists() for name in LAKE_ENTRIES) or not any(root.iterdir()):
        return
    inside = sorted(p.parent for p in root.glob("*/spans") if p.is_dir()) + sorted(
        p.parent for p in root.glob("*/*/spans") if p.is_dir()
    )
    hint = f"; the lake is probably {inside[0]}" if inside else ""
    raise LakeError(f"{lake!r} is not a lake: it has no spans/ folder (nor logs/, scores/){hint}")


def has_spans(lake: str) -> bool:
    """The lake holds at least one span file."""
    if is_remote(lake):
        from tracevals.lake.storage import list_parquet

        return bool(list_parquet(lake, "spans"))
    return has_parquet(Path(lake) / "spans")


def has_parquet(directory: Path) -> bool:
    return directory.is_dir() and any(directory.rglob("*.parquet"))


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


def _bounds(
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
    low, high = _bounds(since, until)
    conditions = []
    if low is not None:
        conditions.append(f"(date > DATE '{low[0]}' OR (date = DATE '{low[0]}' AND hour >= {low[1]}))")
    if high is not None:
        conditions.append(f"(date < DATE '{high[0]}' OR (date = DATE '{high[0]}' AND hour <= {high[1]}))")
    return " AND ".join(conditions)


def partition_globs(
    lake: str,
    sub: str,
    since: dt.date | dt.datetime | str | None = None,
    until: dt.date | dt.datetime | str | None = None,
) -> list[str]:
    """The file globs of one hive-partitioned table for a range of start hours (inclusive, UTC).

    A local lake lists its `date=/hour=` directories and keeps those in range, so DuckDB never opens
    another file (not even its footer). On object storage a range with both ends names one glob per day
    (DuckDB then lists only those prefixes); the hour bounds and an open range are left to the WHERE of
    `partition_filter`, which DuckDB applies to the listed paths before reading them.
    """
    root = f"{lake.rstrip('/')}/{sub}"
    low, high = _bounds(since, until)
    if low is None and high is None:
        return [f"{root}/**/*.parquet"]
    if is_remote(lake):
        if low is None or high is None:
            return [f"{root}/**/*.parquet"]
        days = [low[0] + dt.timedelta(days=n) for n in range((high[0] - low[0]).days + 1)]
        return [f"{root}/date={day}/*/*.parquet" for day in days]
    globs = []
    for directory in sorted(Path(root).glob("date=*/hour=*")):
        try:
            key = (dt.date.fromisoformat(directory.parent.name[5:]), int(directory.name[5:]))
        except ValueError:
            continue  # not a partition directory
        if (low is None or key >= low) and (high is None or key <= high) and any(directory.glob("*.parquet")):
            globs.append(f"{directory}/*.parquet")
    return globs


PRICES_FILE = "prices.json"  # a lake's own model prices, over the default table (`tracevals.model.prices`)


def lake_prices(lake: str) -> dict[str, tuple[float, float]]:
    """The price table a lake carries in `LAKE/prices.json` (JSON or YAML, as `model.prices.load_prices`
    reads it), or none: the prices a team pays for its models, or the demo's for its simulated ones."""
    from tracevals.model.prices import load_prices

    if is_remote(lake):
        import tempfile

        from tracevals.lake.storage import read_text

        text = read_text(lake, PRICES_FILE)
        if text is None:
            return {}
        with tempfile.TemporaryDirectory() as folder:  # load_prices reads a file (and names it in errors)
            copy = Path(folder) / PRICES_FILE
            copy.write_text(text, encoding="utf-8")
            return load_prices(copy)
    path = Path(lake) / PRICES_FILE
    return load_prices(path) if path.is_file() else {}
