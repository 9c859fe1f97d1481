"""How the lake's Parquet files become the connection's base relations (`raw_spans`, `raw_logs`,
`raw_scores`, `model_prices`) that every view reads.

`raw_spans`, `raw_logs` and `raw_scores` are the Parquet files as written (a typed empty table when there
are none yet), so every view exists, and a query over an empty lake returns no rows rather than failing.
Columns that an older lake format lacks read as NULL.
"""

from __future__ import annotations

import datetime as dt
import glob
import sys
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs

from tracevals.lake.paths import (
    LakeError,
    _bounds,
    has_parquet,
    is_remote,
    partition_filter,
    partition_globs,
    strict,
)
from tracevals.lake.schema import LOG_SCHEMA, LOGS_DIR, SPAN_SCHEMA, SPANS_DIR

if TYPE_CHECKING:
    import pyarrow.dataset

# Model prices: USD per million tokens (input, output) by model name. A model without a price costs 0
# (docs/queries.md says so) rather than failing a query.
PricesT = Mapping[str, tuple[float, float]]


def source_sql(
    lake: str, sub: str, hive: bool, where: str = "", globs: list[str] | None = None, union_by_name: bool = True
) -> str:
    """The SELECT that reads one table of the lake (`spans`, `logs`, `scores`) with DuckDB's read_parquet.

    A local lake only: an object-store lake is read through pyarrow datasets (`register_remote`).
    union_by_name: files written by an older lake format, without a newer column, still read (as NULL).
    Without it, columns still match by name, and a file without one of them is an error, never a
    misread; a wide read is about twice as fast.
    """
    paths = globs if globs is not None else [f"{lake.rstrip('/')}/{sub}/**/*.parquet"]
    for path in paths:
        if "'" in path:
            raise LakeError(f"lake path {path!r} contains a quote; move or rename it")
    listed = ", ".join(f"'{p}'" for p in paths)
    hive_opt = "true" if hive else "false"
    # The partition columns' types, declared: detected, `hour` is VARCHAR as soon as one directory is
    # hour=00 ... hour=09 (a leading zero), BIGINT otherwise, and a filter on it fails half the day.
    types = ", hive_types = {'date': DATE, 'hour': BIGINT}" if hive and _partitioned(lake, sub, globs) else ""
    sql = (
        "SELECT * EXCLUDE (filename), filename AS source_file "
        f"FROM read_parquet([{listed}], hive_partitioning = {hive_opt}, union_by_name = {str(union_by_name).lower()}, "
        f"filename = true{types})"
    )
    return f"{sql} WHERE {where}" if where and hive else sql


def _partitioned(lake: str, sub: str, globs: list[str] | None) -> bool:
    """Whether the files read lie in `date=/hour=` partitions, as both writers put them (DuckDB refuses
    declared partition types for files outside any): globs of partitions, a remote lake, or a local one whose
    first file is in one."""
    if globs is not None:
        return all("/date=" in g for g in globs)  # a partition, or all of a day's (date=D/*)
    if is_remote(lake):
        return True
    first = next((Path(lake) / sub).rglob("*.parquet"), None)
    return first is None or (first.parent.name.startswith("hour=") and first.parent.parent.name.startswith("date="))


STRICT = "tv_strict_"


def unreadable(path: Path) -> str | None:
    """Why a file cannot be a Parquet file, from its first and last bytes (no parse): too small, no `PAR1`
    magic at either end (a copy cut short, a disk that filled, a foreign file), or a footer longer than
    the file; None when it looks whole. Two small reads: cheap on a lake of thousands of files."""
    try:
        size = path.stat().st_size
        if size < 12:
            return f"{size} bytes, too small"
        with path.open("rb") as fh:
            head = fh.read(4)
            fh.seek(-8, 2)
            tail = fh.read(8)
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if head != b"PAR1" or tail[4:] != b"PAR1":
        return "not Parquet: no PAR1 magic"
    if int.from_bytes(tail[:4], "little") + 12 > size:
        return "footer cut short"
    return None


_warned: set[str] = set()  # files already named in a warning by this process (a command opens a lake often)


def _skip_unreadable(bad: dict[str, str]) -> None:
    """The rule for unreadable files, local and remote alike: a `LakeError` with --strict (TRACEVALS_STRICT),
    else one warning line naming them (once per process)."""
    named = "; ".join(f"{path} ({why})" for path, why in sorted(bad.items())[:5])
    more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
    if strict():
        raise LakeError(
            f"{len(bad)} unreadable lake files: {named}{more}; move them away, or drop --strict to skip them"
        )
    if set(bad) - _warned:
        _warned.update(bad)
        print(
            f"tracevals: warning: skipped {len(bad)} unreadable lake files: {named}{more} (--strict fails instead)",
            file=sys.stderr,
        )


def _readable_globs(lake: str, sub: str, globs: list[str] | None) -> list[str] | None:
    """`globs` (None: the whole table), or, when some of the files under them do not look like Parquet
    files, the explicit list of the others: those are skipped with one warning naming them (a query
    over the rest of the lake still answers), or, with `--strict` (TRACEVALS_STRICT), a `LakeError`."""
    root = Path(lake) / sub
    files = sorted(root.rglob("*.parquet")) if globs is None else sorted(Path(p) for g in globs for p in glob.glob(g))
    bad = {str(p): why for p in files if (why := unreadable(p)) is not None}
    if not bad:
        return globs
    _skip_unreadable(bad)
    return [str(p) for p in files if str(p) not in bad]


def register_source(
    con: duckdb.DuckDBPyConnection,
    name: str,
    lake: str,
    sub: str,
    schema: pa.Schema,
    hive: bool,
    since: dt.date | dt.datetime | str | None = None,
    until: dt.date | dt.datetime | str | None = None,
) -> None:
    if is_remote(lake):
        register_remote(con, name, lake, schema, hive, remote_files(lake, sub, since, until, hive))
        return
    ranged = hive and (since is not None or until is not None)
    globs = partition_globs(lake, sub, since, until) if ranged else None
    if globs or has_parquet(Path(lake) / sub):
        globs = _readable_globs(lake, sub, globs)
        ranged = ranged or globs is not None
    if bool(globs) if ranged else has_parquet(Path(lake) / sub):
        where = partition_filter(since, until) if hive else ""
        select = source_sql(lake, sub, hive, where, globs)
        missing = missing_columns(con, select, schema)
        con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT *{missing} FROM ({select})")
        # the same files read without union_by_name, for session_lookup's wide reads of a few rows
        strict = source_sql(lake, sub, hive, where, globs, union_by_name=False)
        con.execute(f"CREATE OR REPLACE VIEW {STRICT}{name} AS SELECT *{missing} FROM ({strict})")
        return
    register_empty(con, name, schema, hive)


def _partition_key(path: str) -> tuple[dt.date, int] | None:
    """(date, hour) of a file in a `date=YYYY-MM-DD/hour=HH/` folder; None for a file outside one."""
    parts = path.rsplit("/", 3)
    if len(parts) < 4 or not parts[1].startswith("date=") or not parts[2].startswith("hour="):
        return None
    try:
        return dt.date.fromisoformat(parts[1][5:]), int(parts[2][5:])
    except ValueError:
        return None


def remote_files(
    lake: str,
    sub: str,
    since: dt.date | dt.datetime | str | None = None,
    until: dt.date | dt.datetime | str | None = None,
    hive: bool = True,
) -> list[pafs.FileInfo]:
    """The Parquet files of `LAKE/sub` on object storage (one LIST request per 1,000 files, through
    `lake_filesystem`), only the `date=/hour=` partitions in range when `since`/`until` are given (as
    `partition_globs` keeps them locally: no other file is opened)."""
    from tracevals.lake.storage import list_parquet

    infos = list_parquet(lake, sub)
    if hive and (since is not None or until is not None):
        low, high = _bounds(since, until)
        kept = []
        for info in infos:
            key = _partition_key(info.path)
            if key is not None and (low is None or key >= low) and (high is None or key <= high):
                kept.append(info)
        infos = kept
    return infos


# Fragments of remote files with their footers read, by (path, size, mtime, hive): a scan then costs one
# ranged GET per column chunk, not a HEAD and a footer read per file and scan (the views read raw_spans many
# times a query). Bounded; a file rewritten in place (never done by tracevals) has a new size or mtime.
_FRAGMENTS: OrderedDict[tuple[str, int, int, bool], pyarrow.dataset.ParquetFileFragment] = OrderedDict()
_FRAGMENTS_KEPT = 4096


def remote_dataset(
    lake: str, infos: list[pafs.FileInfo], schema: pa.Schema, hive: bool
) -> pyarrow.dataset.Dataset | None:
    """The files `infos` of a remote lake as one pyarrow dataset with the columns a local read gives: the
    table's schema (a column a file lacks reads as NULL), then `date` (DATE) and `hour` (BIGINT) from each
    file's partition folder (hive tables), then `source_file` (the file's URL). The three are the fragments'
    partition expressions, so DuckDB's filters on them skip files without opening them. Each footer is read
    once (a few at a time); a file whose footer does not parse (cut short, not Parquet) is skipped with one
    warning, or fails with --strict, as on a local lake. None when no file is left."""
    import pyarrow.dataset as ds

    from tracevals.lake.storage import lake_filesystem, map_threads, url

    fs, _ = lake_filesystem(lake)
    fmt = ds.ParquetFileFormat()
    fragments: list[ds.ParquetFileFragment | None] = [None] * len(infos)
    todo = []
    for n, info in enumerate(infos):
        key = (info.path, info.size or 0, info.mtime_ns or 0, hive)
        cached = _FRAGMENTS.get(key)
        if cached is not None:
            _FRAGMENTS.move_to_end(key)
            fragments[n] = cached
        else:
            todo.append((n, key, info))

    def load(item: tuple[int, tuple[str, int, int, bool], pafs.FileInfo]) -> str | None:
        n, _key, info = item
        expression = ds.field("source_file") == pa.scalar(url(lake, info.path))
        part = _partition_key(info.path) if hive else None
        if part is not None:
            expression = (
                (ds.field("date") == pa.scalar(part[0], pa.date32()))
                & (ds.field("hour") == pa.scalar(part[1], pa.int64()))
                & expression
            )
        if (info.size or 0) < 12:
            return f"{info.size or 0} bytes, too small"
        fragment = fmt.make_fragment(info.path, fs, partition_expression=expression, file_size=info.size)
        try:
            fragment.ensure_complete_metadata()  # the footer: one ranged GET for most files
        except (OSError, pa.ArrowInvalid) as exc:
            text = str(exc).strip().splitlines()
            return f"not Parquet: {text[0] if text else type(exc).__name__}"
        fragments[n] = fragment
        return None

    reasons = map_threads(load, todo)
    bad = {url(lake, info.path): why for (_, _, info), why in zip(todo, reasons, strict=True) if why is not None}
    if bad:
        _skip_unreadable(bad)
    for (n, key, _), why in zip(todo, reasons, strict=True):
        if why is None:
            _FRAGMENTS[key] = fragments[n]
            if len(_FRAGMENTS) > _FRAGMENTS_KEPT:
                _FRAGMENTS.popitem(last=False)
    kept = [f for f in fragments if f is not None]
    if not kept:
        return None
    fields = list(schema)
    if hive:
        fields += [pa.field("date", pa.date32()), pa.field("hour", pa.int64())]
    fields.append(pa.field("source_file", pa.string()))
    return ds.FileSystemDataset(kept, pa.schema(fields), fmt, fs)


def register_remote(
    con: duckdb.DuckDBPyConnection, name: str, lake: str, schema: pa.Schema, hive: bool, infos: list[pafs.FileInfo]
) -> None:
    """`name` (and its strict twin) over the files `infos` of a remote lake (`remote_dataset`), or a typed empty
    table when there are none: DuckDB reads them through pyarrow's filesystem (no httpfs extension)."""
    dataset = remote_dataset(lake, infos, schema, hive) if infos else None
    if dataset is None:
        register_empty(con, name, schema, hive)
        return
    con.register(f"{name}_dataset", dataset)
    con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {name}_dataset")
    con.execute(f"CREATE OR REPLACE VIEW {STRICT}{name} AS SELECT * FROM {name}_dataset")


def register_empty(con: duckdb.DuckDBPyConnection, name: str, schema: pa.Schema, hive: bool) -> None:
    """`name` (and its strict twin) as a typed empty table: a lake with no such files yet."""
    empty = schema.empty_table()
    if hive:
        empty = empty.append_column("date", pa.array([], pa.date32())).append_column("hour", pa.array([], pa.int64()))
    empty = empty.append_column("source_file", pa.array([], pa.string()))
    con.register(f"{name}_empty", empty)
    con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {name}_empty")
    con.execute(f"CREATE OR REPLACE VIEW {STRICT}{name} AS SELECT * FROM {name}_empty")


def missing_columns(con: duckdb.DuckDBPyConnection, select: str, schema: pa.Schema) -> str:
    """Select-list items (", CAST(NULL AS type) AS name ...") for the columns of `schema` that no file read
    by `select` has (a lake written by an older version of the lake format): they read as NULL."""
    have = {row[0] for row in con.execute(f"DESCRIBE {select}").fetchall()}
    return "".join(f", CAST(NULL AS {_sql_type(f.type)}) AS {f.name}" for f in schema if f.name not in have)


_SQL_TYPES = {
    pa.string(): "VARCHAR",
    pa.int64(): "BIGINT",
    pa.int32(): "INTEGER",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    pa.list_(pa.string()): "VARCHAR[]",
    pa.timestamp("ns", tz="UTC"): "TIMESTAMPTZ",
}


def _sql_type(arrow_type: pa.DataType) -> str:
    return _SQL_TYPES[arrow_type]


def register_prices(con: duckdb.DuckDBPyConnection, prices: PricesT) -> None:
    models = sorted(prices)
    table = pa.table(
        {
            "model": pa.array(models, pa.string()),
            "input_usd_per_mtok": pa.array([float(prices[m][0]) for m in models], pa.float64()),
            "output_usd_per_mtok": pa.array([float(prices[m][1]) for m in models], pa.float64()),
        }
    )
    con.register("model_prices_table", table)
    con.execute("CREATE OR REPLACE VIEW model_prices AS SELECT * FROM model_prices_table")


_DIR_SCHEMAS = {SPANS_DIR: SPAN_SCHEMA, LOGS_DIR: LOG_SCHEMA}


def files_sql(
    con: duckdb.DuckDBPyConnection, lake: str, sub: str, globs: list[str] | None = None, union_by_name: bool = True
) -> str:
    """Some of the lake's span or log files (`globs`, else all) read as `raw_spans` / `raw_logs` read
    them: hive columns, source_file, and the columns no file has (an older lake format) as NULL.

    union_by_name=False reads the columns of the first file only (and fails on a later file that lacks
    one): the columns that some later file has and the first lacks are then missing from the result, not
    NULL, so that a caller can tell (`_copied_strictly`) and read through union_by_name instead.

    A remote lake's files (`globs`: their URLs, as `source_file` names them, or globs of them) are registered
    on `con` as a pyarrow dataset (`remote_dataset`, the table's columns exactly) and the SELECT reads it."""
    if is_remote(lake):
        return _remote_files_sql(con, lake, sub, globs)
    select = source_sql(lake, sub, hive=True, globs=globs, union_by_name=union_by_name)
    every = select if union_by_name else source_sql(lake, sub, hive=True, globs=globs, union_by_name=True)
    return f"SELECT *{missing_columns(con, every, _DIR_SCHEMAS[sub])} FROM ({select})"


def _remote_files_sql(con: duckdb.DuckDBPyConnection, lake: str, sub: str, globs: list[str] | None) -> str:
    import fnmatch
    import hashlib

    from tracevals.lake.storage import url

    infos = remote_files(lake, sub)
    if globs is not None:
        wanted = set(globs)
        patterns = [g for g in globs if any(c in g for c in "*?[")]
        named = [(i, url(lake, i.path)) for i in infos]
        infos = [i for i, u in named if u in wanted or any(fnmatch.fnmatch(u, g) for g in patterns)]
    dataset = remote_dataset(lake, infos, _DIR_SCHEMAS[sub], True) if infos else None
    if dataset is None:
        empty = f"tv_files_empty_{sub}"
        register_empty(con, empty, _DIR_SCHEMAS[sub], True)
        return f"SELECT * FROM {empty}"
    name = "tv_files_" + hashlib.sha1("\n".join([lake, sub, *(i.path for i in infos)]).encode()).hexdigest()[:16]
    con.register(name, dataset)
    return f"SELECT * FROM {name}"
