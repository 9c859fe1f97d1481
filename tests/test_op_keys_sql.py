"""The batch loader computes operation keys in SQL where the span recorded its arguments' digest
(`model.batch.OP_KEY_SQL`), and parses in Python only the calls SQL leaves open (`KEY_IN_ARGS_SQL`): the
keys must be those of `calls.operation_key_of` and `idempotency_key_in` for every call, whatever the
arguments hold (a key spelled with a JSON escape, a number, no object at all)."""

from __future__ import annotations

import json

import duckdb
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from tracevals.model import calls
from tracevals.model.batch import KEY_IN_ARGS_SQL, OP_KEY_SQL, with_op_keys

ROWS = [
    ("send", '{"to": 1}', "abc123", None),
    ("send", '{"to": 1, "idempotency_key": "k1"}', "abc123", None),
    ("send", '{"to": 1, "idempotencyKey": 7}', "abc123", None),
    ("send", '{"to": 1, "Idempotency-Key": true}', "abc123", None),
    ("send", '{"to": 1, "\\u0069dempotency_key": "escaped"}', "abc123", None),
    ("send", '{"to": 1, "idempotency\\u005fkey": "escaped"}', "abc123", None),
    ("send", '{"idempotency_key": "in-args"}', "abc123", "on-span"),
    ("send", '{"to": 1}', "", None),
    ("send", '{"to": 1}', None, None),
    ("send", '["not", "an", "object"]', None, None),
    ("send", "not json", None, None),
    (None, '{"a": 1.0}', None, None),
    (None, None, "abc", None),
    ("send", None, None, None),
    ("send", '{"idempotency_key": ""}', "h", None),
]


def _loaded(rows: list[tuple[str | None, str | None, str | None, str | None]]) -> pl.DataFrame:
    """The rows as the loader reads them: SQL's op_key and tv_args_key, then `with_op_keys`."""
    con = duckdb.connect()
    con.execute("CREATE TABLE c (name VARCHAR, args VARCHAR, args_hash VARCHAR, idempotency_key VARCHAR, i INT)")
    con.executemany("INSERT INTO c VALUES (?, ?, ?, ?, ?)", [(*r, i) for i, r in enumerate(rows)])
    sql = (
        f"SELECT *, {OP_KEY_SQL.format(c='c')} AS op_key, {KEY_IN_ARGS_SQL.format(c='c')} AS tv_args_key "
        "FROM c ORDER BY i"
    )
    table = con.sql(sql).to_arrow_table()
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return with_op_keys(frame).sort("i")


def _expected(row: tuple[str | None, str | None, str | None, str | None]) -> tuple[str, str | None]:
    name, args, args_hash, key = row
    return calls.operation_key_of(name, args, args_hash), key or calls.idempotency_key_in(calls.parse_args(args))


def test_sql_and_python_give_every_call_the_same_keys() -> None:
    loaded = _loaded(ROWS)
    assert list(loaded.select("op_key", "idempotency_key").iter_rows()) == [_expected(r) for r in ROWS]
    assert "tv_args_key" not in loaded.columns


_values = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=4))
_keys = st.sampled_from(["idempotency_key", "idempotencyKey", "Idempotency-Key", "to", "x", "idempotency"])


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["send", None]),
            st.one_of(st.none(), st.dictionaries(_keys, _values, max_size=3).map(json.dumps)),
            st.sampled_from([None, "", "abc"]),
            st.sampled_from([None, "span-key"]),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_keys_agree_on_any_arguments(rows: list[tuple[str | None, str | None, str | None, str | None]]) -> None:
    loaded = _loaded(rows)
    assert list(loaded.select("op_key", "idempotency_key").iter_rows()) == [_expected(r) for r in rows]
