"""One binding seam: only `queries/binding.py` creates or drops what the views read (issue 38). Before it,
seven modules shadowed view names with temporary objects by hand, each with its own undo; a new one
would have to go through the seam, or this test names it."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from tracevals.queries import binding

ROOT = Path(__file__).resolve().parents[1]
# DDL that makes a name read something else: a view, a temporary table, or dropping one of them.
_DDL = re.compile(r"\b(CREATE\s+(OR\s+REPLACE\s+)?(TEMP(ORARY)?\s+)?(VIEW|TABLE)|DROP\s+(VIEW|TABLE))\b", re.I)


def test_no_module_but_the_seam_creates_what_the_views_read() -> None:
    found = []
    for folder in (ROOT / "queries", ROOT / "tracevals" / "scoring"):
        for path in sorted(folder.glob("*.py")):
            if path.name in ("binding.py", "catalog.py"):  # the seam; the view files' reader (it names, never runs)
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                if _DDL.search(code):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "DDL outside queries/binding.py:\n" + "\n".join(found)


def test_a_shadow_is_undone_by_name_and_the_binding_beneath_reads_again() -> None:
    con = duckdb.connect()
    binding.bind(con, "raw_spans", "SELECT 1 AS trace_id UNION ALL SELECT 2")
    binding.shadow(con, "raw_spans", f"SELECT * FROM {binding.own(con, 'raw_spans')} WHERE trace_id = 2", table="tv_x")
    assert binding.is_shadowed(con, "raw_spans") and binding.has_table(con, "tv_x")
    assert con.execute("SELECT * FROM raw_spans").fetchall() == [(2,)]
    binding.unshadow(con, "raw_spans", "never_made", tables=["tv_x", "tv_never"])
    assert not binding.is_shadowed(con, "raw_spans") and not binding.has_table(con, "tv_x")
    assert sorted(con.execute("SELECT * FROM raw_spans").fetchall()) == [(1,), (2,)]
    binding.work_table(con, "tv_traces", "SELECT 1 AS trace_id")
    binding.shadow(con, "raw_spans", "SELECT 3 AS trace_id", table=binding.shadow_copy("raw_spans"))
    binding.release(con)  # what a scoring job leaves, all of it
    assert not binding.has_table(con, "tv_traces") and not binding.is_shadowed(con, "raw_spans")
    assert not binding.has_table(con, binding.shadow_copy("raw_spans"))


def test_each_connection_binds_in_its_own_catalog(tmp_path: Path) -> None:
    """`catalog` is asked once per connection and kept: connections of other catalogs, taken in turn, each
    keep theirs (a file database's catalog is its file's name, an in-memory one's `memory`)."""
    in_memory, on_file = duckdb.connect(), duckdb.connect(str(tmp_path / "other.db"))
    for round_ in range(2):
        for con, name in ((in_memory, "memory"), (on_file, "other")):
            assert binding.catalog(con) == name
            binding.bind(con, "raw_spans", f"SELECT {round_} AS trace_id")
            assert con.execute(f"SELECT trace_id FROM {name}.main.raw_spans").fetchall() == [(round_,)]
