"""How the lake's Parquet files become the connection's base relations (`raw_spans`, `raw_logs`,
`raw_scores`, `model_prices`) that every view reads.

`raw_spans`, `raw_logs` and `raw_scores` are the Parquet files as written (a typed empty table when there
are none yet), so every view exists, and a query over an empty lake returns no rows rather than failing.
Columns that an older lake format lacks read as NULL.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.dataset

from tracevals.lake.columns import COLUMNS, sql_columns
from tracevals.lake.lake import Lake, LocalScan, ObjectScan
from tracevals.lake.paths import partition_filter
from tracevals.model.quoting import sql_string
from tracevals.queries.binding import bind, work_table

# Model prices: USD per million tokens (input, output) by model name. A model without a price costs 0
# (docs/queries.md says so) rather than failing a query.
PricesT = Mapping[str, tuple[float, float]]


def bind_sql(
    con: duckdb.DuckDBPyConnection,
    scan: LocalScan | ObjectScan,
    sub: str,
    hive: bool,
    where: str = "",
    union_by_name: bool = True,
) -> str | None:
    """The SELECT over what a `Lake.scan` found, or None when it found no file: the one place where the
    two kinds of lake differ for a reader. A local lake's files are read by DuckDB's `read_parquet`
    (`local_sql`); an object-store lake's objects are registered on `con` as a pyarrow dataset
    (`ObjectLake.dataset`: the table's columns exactly, partition columns and `source_file`; union_by_name
    does not apply)."""
    if isinstance(scan, LocalScan):
        return local_sql(scan, hive, where, union_by_name) if scan.paths else None
    from tracevals.lake.schema import SCHEMAS

    dataset = scan.lake.dataset(scan.infos, SCHEMAS[sub], hive) if scan.infos else None
    if dataset is None:
        return None
    name = "tv_ds_" + hashlib.sha1("\n".join([scan.lake.root, *(i.path for i in scan.infos)]).encode()).hexdigest()[:16]
    register_arrow(con, name, dataset)
    return f"SELECT * FROM {name}" + (f" WHERE {where}" if where and hive else "")


def local_sql(scan: LocalScan, hive: bool, where: str = "", union_by_name: bool = True) -> str:
    """The SELECT that reads a local table's files with DuckDB's read_parquet.

    union_by_name: files written by an older lake format, without a newer column, still read (as NULL).
    Without it, columns still match by name, and a file without one of them is an error, never a
    misread; a wide read is about twice as fast.
    """
    listed = ", ".join(sql_string(p) for p in scan.paths)
    hive_opt = "true" if hive else "false"
    # The partition columns' types, declared: detected, `hour` is VARCHAR as soon as one directory is
    # hour=00 ... hour=09 (a leading zero), BIGINT otherwise, and a filter on it fails half the day.
    types = ", hive_types = {'date': DATE, 'hour': BIGINT}" if hive and scan.partitioned else ""
    sql = (
        "SELECT * EXCLUDE (filename), filename AS source_file "
        f"FROM read_parquet([{listed}], hive_partitioning = {hive_opt}, union_by_name = {str(union_by_name).lower()}, "
        f"filename = true{types})"
    )
    return f"{sql} WHERE {where}" if where and hive else sql


STRICT = "tv_strict_"


def register_source(
    con: duckdb.DuckDBPyConnection,
    name: str,
    lake: Lake,
    sub: str,
    hive: bool,
    since: dt.date | dt.datetime | str | None = None,
    until: dt.date | dt.datetime | str | None = None,
) -> None:
    """`name` over the lake's table `sub` (the partitions in range), and its strict twin `tv_strict_<name>`
    (the same files read without union_by_name, for session_lookup's wide reads of a few rows); a typed empty
    table when there are no files. Columns no file has (an older lake format) read as NULL."""
    scan = lake.scan(sub, since, until, hive)
    where = partition_filter(since, until) if hive else ""
    select = bind_sql(con, scan, sub, hive, where)
    if select is None:
        register_empty(con, name, sub, hive)
        return
    missing = missing_columns(con, select, sub)
    bind(con, name, f"SELECT *{missing} FROM ({select})")
    strict = bind_sql(con, scan, sub, hive, where, union_by_name=False)
    bind(con, f"{STRICT}{name}", f"SELECT *{missing} FROM ({strict})")


def register_arrow(con: duckdb.DuckDBPyConnection, name: str, data: pa.Table | pyarrow.dataset.Dataset) -> None:
    """`name` on `con`: a view over Arrow data held in memory (a table, a dataset). `con.from_arrow`, not
    `con.register`, which makes DuckDB look for pandas (an import of ~0.4 s no command should pay)."""
    con.from_arrow(data).create_view(name, replace=True)


def register_empty(con: duckdb.DuckDBPyConnection, name: str, sub: str, hive: bool) -> None:
    """`name` (and its strict twin) as a typed empty relation of the table `sub`'s columns (`lake.columns`),
    its partition columns and `source_file`: a lake with no such files yet."""
    columns = [*sql_columns(COLUMNS[sub]), *([("date", "DATE"), ("hour", "BIGINT")] if hive else [])]
    listed = ", ".join(f"CAST(NULL AS {kind}) AS {column}" for column, kind in [*columns, ("source_file", "VARCHAR")])
    bind(con, f"{name}_empty", f"SELECT {listed} WHERE false")
    bind(con, name, f"SELECT * FROM {name}_empty")
    bind(con, f"{STRICT}{name}", f"SELECT * FROM {name}_empty")


def missing_columns(con: duckdb.DuckDBPyConnection, select: str, sub: str) -> str:
    """Select-list items (", CAST(NULL AS type) AS name ...") for the columns of the table `sub` that no
    file read by `select` has (a lake written by an older version of the lake format): they read as NULL."""
    have = {row[0] for row in con.execute(f"DESCRIBE {select}").fetchall()}
    return "".join(
        f", CAST(NULL AS {kind}) AS {column}" for column, kind in sql_columns(COLUMNS[sub]) if column not in have
    )


def register_prices(con: duckdb.DuckDBPyConnection, prices: PricesT) -> None:
    """`model_prices` (model, input_usd_per_mtok, output_usd_per_mtok): a table written by DuckDB itself (an
    Arrow table built from Python values would make pyarrow import pandas, ~0.4 s of a small command)."""
    work_table(
        con, "model_prices_table", columns="model VARCHAR, input_usd_per_mtok DOUBLE, output_usd_per_mtok DOUBLE"
    )
    if prices:  # one statement for every row (executemany runs one a row)
        rows = [(m, float(prices[m][0]), float(prices[m][1])) for m in sorted(prices)]
        con.execute(
            "INSERT INTO model_prices_table VALUES " + ", ".join(["(?, ?, ?)"] * len(rows)),
            [value for row in rows for value in row],
        )
    bind(con, "model_prices", "SELECT * FROM model_prices_table")


def files_sql(
    con: duckdb.DuckDBPyConnection, lake: Lake, sub: str, globs: list[str] | None = None, union_by_name: bool = True
) -> str:
    """Some of the lake's span or log files (`globs`: as `source_file` names them, or globs of them; else
    all) read as `raw_spans` / `raw_logs` read them: hive columns, source_file, and the columns no file
    has (an older lake format) as NULL.

    union_by_name=False reads the columns of the first file only (and fails on a later file that lacks
    one): the columns that some later file has and the first lacks are then missing from the result, not
    NULL, so that a caller can tell (`_copied_strictly`) and read through union_by_name instead."""
    scan = lake.scan_named(sub, globs)
    select = bind_sql(con, scan, sub, True, union_by_name=union_by_name)
    if select is None:
        empty = f"tv_files_empty_{sub}"
        register_empty(con, empty, sub, True)
        return f"SELECT * FROM {empty}"
    every = select if union_by_name else bind_sql(con, scan, sub, True)
    return f"SELECT *{missing_columns(con, every or select, sub)} FROM ({select})"
