"""Odd span times, counted: the data-quality finding of `tracevals.lake.clock`.

- future-dated: a start after the reader's horizon (now + the skew allowance): a client clock ahead, or a
  made-up date (2262); never in a window, so never the basis of a verdict;
- epoch-zero: a start before 2000 (`clock.EPOCH_FLOOR`): a clock never set, a start time of 0;
- negative duration: an end before the start (in the window read, when one is given).

Read from `raw_spans` (every copy of a span: a duplicate counts twice, which a data-quality count can
afford), only the start and end columns, and only the partitions that can hold them: those dated from the
day before the horizon on, before 2000, and (for negative durations) those of the window.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb

from tracevals.lake.clock import EPOCH_FLOOR
from tracevals.lake.lake import Lake
from tracevals.lake.schema import SPANS_DIR


@dataclass(frozen=True)
class TimeQuality:
    horizon: dt.datetime
    future: int = 0
    latest: dt.datetime | None = None  # the latest future start
    epoch_zero: int = 0
    negative: int = 0

    @property
    def findings(self) -> list[str]:
        """One sentence per kind of odd time found (none: an empty list)."""
        out = []
        if self.future:
            out.append(
                f"{self.future} spans start after {self.horizon:%Y-%m-%d %H:%M} UTC (the reader's clock plus the "
                f"skew allowance; the latest {self.latest:%Y-%m-%d %H:%M}): future-dated, left out of every window"
            )
        if self.epoch_zero:
            out.append(f"{self.epoch_zero} spans start before 2000 (epoch zero: a clock never set)")
        if self.negative:
            out.append(f"{self.negative} spans end before they start (negative duration)")
        return out

    def as_dict(self) -> dict[str, object]:
        return {"horizon": self.horizon.isoformat(), "future_dated": self.future,
                "latest_future_start": self.latest.isoformat() if self.latest else None,
                "epoch_zero": self.epoch_zero, "negative_duration": self.negative}  # fmt: skip


def time_quality(con: duckdb.DuckDBPyConnection, horizon: dt.datetime, since: dt.datetime | None = None) -> TimeQuality:
    """The odd times of the lake on `con` (its `raw_spans`; negative durations of spans starting from
    `since` on, when given)."""
    columns = {row[0] for row in con.execute("DESCRIBE raw_spans").fetchall()}
    negative = "end_time < start_time AND start_time <= ?" + (" AND start_time >= ?" if since is not None else "")
    params: list[object] = [horizon, horizon, EPOCH_FLOOR, horizon]
    if since is not None:
        params.append(since)
    where = ""
    if since is not None and "date" in columns:  # hive partitions: only those that can hold an odd time
        where = "WHERE date >= CAST(? AS DATE) - 1 OR date < DATE '2000-01-02'"
        params.append(min(since, horizon))
    [(future, latest, epoch_zero, negative_count)] = con.execute(
        "SELECT count(*) FILTER (WHERE start_time > ?), max(start_time) FILTER (WHERE start_time > ?), "
        f"count(*) FILTER (WHERE start_time < ?), count(*) FILTER (WHERE {negative}) FROM raw_spans {where}",
        params,
    ).fetchall()
    return TimeQuality(horizon, int(future or 0), latest, int(epoch_zero or 0), int(negative_count or 0))


def lake_time_quality(lake: Lake, horizon: dt.datetime, since: dt.datetime | None = None) -> TimeQuality:
    """`time_quality` of a lake, on a connection of its own that binds the span files alone (`raw_spans`, as
    `open_lake` binds it): a command that has scored the lake pays no second binding of every table and view."""
    from tracevals.queries.interrupts import connect
    from tracevals.queries.sources import register_source

    con = connect()
    try:
        con.execute("SET parquet_metadata_cache = true")
        register_source(con, "raw_spans", lake, SPANS_DIR, True)
        return time_quality(con, horizon, since)
    finally:
        con.close()
