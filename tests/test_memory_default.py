"""A memory limit tracevals chose gives way for the one statement that needs more; a user's holds.

Found on a small lake of `tracevals run` (1,250 attempts with their conversations): `message_parts` needed
more than a group's default 160MB, and the whole group was scored over again without the limit.
"""

from __future__ import annotations

import duckdb
import pytest

from tracevals.queries.binding import computed, default_memory_limit, shadow

# A table of 200,000 sorted 200-byte strings: about 50 MB to sort, far beyond 8 MB.
BIG = "SELECT i, repeat('x', 200) || i AS s FROM range(200000) AS r(i) ORDER BY s DESC"


def _limit(con: duckdb.DuckDBPyConnection) -> str:
    [(value,)] = con.execute("SELECT current_setting('memory_limit')").fetchall()
    return str(value)


def _connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET threads = 1")
    return con


def test_a_default_limit_gives_way_for_one_statement_and_holds_after() -> None:
    con = _connection()
    default_memory_limit(con, "8MB")
    bound = _limit(con)
    with pytest.raises(duckdb.OutOfMemoryException):  # the statement alone does not fit
        con.execute(f"CREATE TEMP TABLE plain AS {BIG}")
    computed(con, f"CREATE OR REPLACE TEMP TABLE big AS {BIG}")
    assert con.execute("SELECT count(*), max(s) FROM big").fetchall() == [(200000, "x" * 200 + "99999")]
    assert _limit(con) == bound  # the limit holds again for what follows
    shadow(con, "sorted", BIG, table="tv_sorted")  # the views' tables are made the same way
    assert con.execute("SELECT count(*) FROM sorted").fetchall() == [(200000,)]
    assert _limit(con) == bound


def test_a_users_limit_holds() -> None:
    con = _connection()
    con.execute("SET memory_limit = '8MB'")  # as `open_lake(memory_limit=...)` sets the user's `--memory-limit`
    bound = _limit(con)
    with pytest.raises(duckdb.OutOfMemoryException):
        computed(con, f"CREATE TEMP TABLE big AS {BIG}")
    assert _limit(con) == bound
