"""What `score --follow` holds in memory (`scoring.live`): each trace's rows as slices of the tables that
arrived (`Tables`), the traces and sessions they belong to, and the grouping of a round's new rows by
trace (one sort of their ids: the cost of a round is linear in the rows that arrived), and the ids of
the sessions whose rows were dropped (`Evicted`).
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pyarrow as pa

Part = tuple[int, int, int]  # (table, first row, rows): a trace's rows in one of the tables held
NO_START = 2**63  # a span without a start time sorts last


@dataclass(slots=True)
class LiveTrace:
    session: str
    rank: tuple[bool, int, str] | None = None  # (not the root, start, span id) of the span naming `session`
    rooted: bool = False
    end_marker: bool = False
    spans: list[Part] = field(default_factory=list)
    logs: list[Part] = field(default_factory=list)
    partial: bool = False  # rows dropped while its session was out of the sample


@dataclass(slots=True)
class LiveSession:
    traces: set[str] = field(default_factory=set)
    last_arrival: float = 0.0
    due: bool = True  # rows arrived since it was last scored
    scorings: int = 0
    sampled: bool = True


class Evicted:
    """The sessions whose rows were dropped after `retain_s`, by id, for the late window: a row arriving
    for one of them (by its trace, or by the session it names) brings the session's rows back."""

    def __init__(self) -> None:
        self.when: dict[str, float] = {}  # session id -> when its rows were dropped (in that order)
        self.traces: dict[str, tuple[str, ...]] = {}  # session id -> its traces then
        self._of: dict[str, str] = {}  # trace id -> its evicted session

    def __contains__(self, sid: object) -> bool:
        return sid in self.when

    def __bool__(self) -> bool:
        return bool(self.when)

    def add(self, sid: str, traces: Iterable[str], now: float) -> None:
        self.traces[sid] = members = tuple(traces)
        for tid in members:
            self._of[tid] = sid
        self.when[sid] = now

    def drop(self, sid: str) -> None:
        self.when.pop(sid, None)
        for tid in self.traces.pop(sid, ()):
            if self._of.get(tid) == sid:
                del self._of[tid]

    def expire(self, now: float, window_s: float) -> None:
        """Forget the sessions dropped `window_s` or more ago: a row of theirs now is a new session."""
        while self.when:
            sid, when = next(iter(self.when.items()))
            if now - when < window_s:
                break
            self.drop(sid)

    def revived(
        self, trace_ids: Iterable[str], session_ids: Iterable[str], held: tuple[Container[str], Container[str]]
    ) -> list[str]:
        """The evicted sessions these rows belong to, by their trace or by the session they name, of the
        traces and sessions not `held` (traces, sessions) again."""
        traces, sessions = held
        found = {self._of[t] for t in trace_ids if t in self._of and t not in traces}
        found.update(s for s in session_ids if s in self.when and s not in sessions)
        return sorted(found)


class Tables:
    """The tables of rows held, each with the order that sorts it by trace (None: it is sorted), and how
    many trace slices (positions in that order) point into each: a table is dropped when none does."""

    def __init__(self) -> None:
        self.tables: dict[int, tuple[pa.Table, pa.Array | None]] = {}
        self.refs: dict[int, int] = {}
        self._next = 0

    def add(self, table: pa.Table, order: pa.Array | None = None) -> int:
        key = self._next
        self._next += 1
        self.tables[key], self.refs[key] = (table, order), 0
        return key

    def unref(self, parts: Iterable[Part]) -> None:
        for key, _, _ in parts:
            self.refs[key] -= 1
            if self.refs[key] == 0:
                del self.tables[key], self.refs[key]

    def drop_unused(self, key: int) -> None:
        if self.refs.get(key) == 0:
            del self.tables[key], self.refs[key]

    def gather(self, parts: list[Part], empty: pa.Table) -> tuple[pa.Table, dict[Part, Part]]:
        """The rows of `parts` as one table, and where the parts taken out of a table are held from now on.

        A table all of whose rows are in `parts` goes in as it is (a burst of sessions that finished
        together costs no copy); from the others, the rows of `parts` are taken (one `take` each) into
        one new table held in their place for those traces (the old tables are dropped once no trace
        left points into them)."""
        if not parts:
            return empty, {}
        by_table: dict[int, list[Part]] = {}
        for part in parts:
            by_table.setdefault(part[0], []).append(part)
        pieces: list[pa.Table] = []
        taken: list[pa.Table] = []
        moved: dict[Part, Part] = {}
        new_key, at = self._next, 0
        for key, some in sorted(by_table.items()):
            table, order = self.tables[key]
            if len(some) == self.refs[key] and sum(rows for _, _, rows in some) == table.num_rows:
                pieces.append(table)
                continue
            starts = pl.Series([first for _, first, _ in some], dtype=pl.Int64)
            ends = starts + pl.Series([rows for _, _, rows in some], dtype=pl.Int64)
            positions = pl.select(pl.int_ranges(starts, ends).explode()).to_series()
            index = positions if order is None else pl.Series(order).cast(pl.Int64).gather(positions)
            if table.column(0).num_chunks > 1:  # a take from one chunk is twice as fast: copy once
                table = table.combine_chunks()
                self.tables[key] = (table, order)
            taken.append(table.take(index.to_arrow()))
            for part in some:
                moved[part] = (new_key, at, part[2])
                at += part[2]
        if taken:
            fresh = pa.concat_tables(taken).combine_chunks()
            assert self.add(fresh) == new_key
            pieces.append(fresh)
        return (pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)), moved

    def move(self, parts: list[Part], moved: dict[Part, Part]) -> list[Part]:
        """`parts` of one trace after a `gather`: those it took are in the new table now."""
        if not moved:
            return parts
        out = []
        for part in parts:
            new = moved.get(part)
            if new is None:
                out.append(part)
                continue
            out.append(new)
            self.refs[new[0]] += 1
            self.unref([part])
        return out


class Groups:
    """Rows of one round by trace: `order` lists the rows in trace order, `frame` has a row per trace
    (`trace_id`, and `first` and `rows`: where its rows are in `order`)."""

    def __init__(self, order: pa.Array, frame: pl.DataFrame) -> None:
        self.order, self.frame = order, frame

    def column(self, name: str) -> list[Any]:
        return self.frame.get_column(name).to_list()


def _by_trace(table: pa.Table, columns: list[str]) -> tuple[pl.DataFrame, pa.Array]:
    keys = pl.from_arrow(table.select(columns))
    assert isinstance(keys, pl.DataFrame)
    keys = keys.with_row_index("row").filter(pl.col("trace_id").is_not_null()).sort("trace_id", maintain_order=True)
    return keys, keys.get_column("row").to_arrow()


def group_spans(spans: pa.Table) -> Groups:
    """Per trace of these span rows: whether a root and an end marker are among them, and the span that
    names its session first by the `attempts` view's rule (`child`, `start`, `span_id`, `session_id`)."""
    keys, order = _by_trace(spans, ["trace_id", "parent_span_id", "session_id", "start_time", "span_id", "kind"])
    groups = keys.group_by("trace_id", maintain_order=True).agg(
        rows=pl.len(),
        rooted=pl.col("parent_span_id").is_null().any(),
        end_marker=(pl.col("kind") == "session_end").any(),
    )
    namers = (
        keys.filter(pl.col("session_id").is_not_null())
        .select(
            "trace_id",
            "session_id",
            "span_id",
            child=pl.col("parent_span_id").is_not_null(),
            start=pl.col("start_time").dt.epoch("ns"),
        )
        .sort(["trace_id", "child", "start", "span_id"], nulls_last=True)
        .unique("trace_id", keep="first", maintain_order=True)
    )
    groups = groups.join(namers, on="trace_id", how="left", maintain_order="left")
    return Groups(order, groups.with_columns(first=pl.col("rows").cum_sum() - pl.col("rows")))


def group_logs(logs: pa.Table) -> Groups:
    keys, order = _by_trace(logs, ["trace_id"])
    groups = keys.group_by("trace_id", maintain_order=True).agg(rows=pl.len())
    return Groups(order, groups.with_columns(first=pl.col("rows").cum_sum() - pl.col("rows")))
