"""A memory limit tracevals chose gives way for the one statement that needs more; a user's holds.

Found on a small lake of `tracevals run` (1,250 attempts with their conversations): `message_parts` needed
more than a group's default 160MB, and the whole group was scored over again without the limit.
"""

from __future__ import annotations

import duckdb
import pytest

from tracevals.queries.binding import computed, default_memory_limit, shadow, without_default_limit

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
    # the limit holds again for what follows: the work's 8MB beyond the table now held
    assert _mib(_limit(con)) == pytest.approx(_mib(bound) + _held(con) / (1 << 20), abs=0.1)
    con.execute("DROP TABLE big")
    shadow(con, "sorted", BIG, table="tv_sorted")  # the views' tables are made the same way
    assert con.execute("SELECT count(*) FROM sorted").fetchall() == [(200000,)]
    assert _mib(_limit(con)) == pytest.approx(_mib(bound) + _held(con) / (1 << 20), abs=0.1)


def test_a_users_limit_holds() -> None:
    con = _connection()
    con.execute("SET memory_limit = '8MB'")  # as `open_lake(memory_limit=...)` sets the user's `--memory-limit`
    bound = _limit(con)
    with pytest.raises(duckdb.OutOfMemoryException):
        computed(con, f"CREATE TEMP TABLE big AS {BIG}")
    assert _limit(con) == bound


def _held(con: duckdb.DuckDBPyConnection) -> int:
    """Bytes the connection's tables take, in memory or spilled."""
    [(held,)] = con.execute(
        "SELECT sum(memory_usage_bytes + temporary_storage_bytes) FROM duckdb_memory() WHERE tag = 'IN_MEMORY_TABLE'"
    ).fetchall()
    return int(held)


def _spilled(con: duckdb.DuckDBPyConnection) -> int:
    [(spilled,)] = con.execute(
        "SELECT coalesce(sum(temporary_storage_bytes), 0)::BIGINT FROM duckdb_memory()"
    ).fetchall()
    return int(spilled)


def _mib(setting: str) -> float:
    number, unit = setting.split()
    return float(number) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[unit]


def test_the_rows_a_connection_holds_leave_the_work_its_share(tmp_path) -> None:
    """The default limit is the work's, beyond the tables the connection holds: rows copied to work on (here
    200,000 rows of 200 bytes, beyond 8 MB) are not spilled to disk to make room for the next statement,
    which reads them all. Found on 10,000 ADK sessions: within a fixed 160MB, a group's copy of its rows
    (model calls with their conversations) filled the limit, and every view spilled them and read them back."""
    con = _connection()
    con.execute("SET temp_directory = ?", [str(tmp_path)])
    con.execute("CREATE TEMP TABLE held AS SELECT i, repeat('x', 200) || i AS s FROM range(200000) AS r(i)")
    held = _held(con)
    assert held > 8 << 20 and _spilled(con) == 0
    default_memory_limit(con, "8MB")
    computed(con, "CREATE TEMP TABLE work AS SELECT i % 1000 AS k, count(*) AS n, max(s) AS s FROM held GROUP BY ALL")
    assert _spilled(con) == 0
    assert con.execute("SELECT count(*), sum(n) FROM work").fetchall() == [(1000, 200000)]
    # the limit stands at the work's share plus what was held when the statement started
    assert _mib(_limit(con)) == pytest.approx((8_000_000 + held) / (1 << 20), abs=0.1)


def test_a_job_run_without_the_default_limit_has_it_again_after() -> None:
    con = _connection()
    default_memory_limit(con, "8MB")
    bound = _limit(con)
    with without_default_limit(con):
        computed(con, f"CREATE TEMP TABLE big AS {BIG}")  # no limit: it runs at once
        assert _limit(con) != bound
    con.execute("DROP TABLE big")
    computed(con, "CREATE TEMP TABLE small AS SELECT 1 AS one")
    assert _limit(con) == bound
