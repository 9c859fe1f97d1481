"""A small lake opens as a snapshot (every view computed once at open); its rows are the live views' rows.

The snapshot is an optimisation only: for every view, on lakes of every span dialect, of the ADK corpus,
and scrambled across files and hours, the rows read through a snapshot equal the rows the live views
give (TRACEVALS_SNAPSHOT_MB=0). `tracevals sql` defines only the views its query names.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from fixtures.otlp_lakes import DIALECTS, corpus_recordings, fixture_doc, ingest_fixture, ingest_scrambled, moved

from tracevals import env
from tracevals.lake.lake import Lake
from tracevals.queries import VIEW_NAMES, open_lake
from tracevals.queries.connection import COPY_RAW_FILES, LakeError, closure_of, is_small, shared_views
from tracevals.queries.materialize import materialized
from tracevals.queries.selection import Selection, select_sessions
from tracevals.queries.user_query import views_read_by


def _rows(con: duckdb.DuckDBPyConnection, view: str) -> list[tuple[object, ...]]:
    # str() of each value: lists / structs / maps compare as text, and NaN compares equal to itself
    return sorted(tuple(str(v) for v in row) for row in con.execute(f"SELECT * FROM {view}").fetchall())


def _is_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    [(sql,)] = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = ? AND NOT internal", [name]).fetchall()
    return "tv_read_" in sql  # a snapshot's view reads its table through tv_read_<name>


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    made: dict[str, Path] = {}
    for dialect in DIALECTS:
        made[dialect] = tmp_path_factory.mktemp(dialect)
        ingest_fixture(made[dialect], dialect)
    # one lake of every dialect and of the ADK corpus (when present), each conversation a trace of its own,
    # dealt into files in random order across hours, a piece sent twice, a trace whose first span is late
    mixed = tmp_path_factory.mktemp("mixed")
    docs = [moved(fixture_doc(d), i + 1, i, late="span" if i == 1 else None) for i, d in enumerate(DIALECTS)]
    docs += [json.loads(p.read_text()) for p in corpus_recordings()[:6]]
    ingest_scrambled(mixed, docs, seed=3)
    made["mixed"] = mixed
    return made


@pytest.fixture(scope="module")
def live_rows(lakes: dict[str, Path]) -> dict[str, list[tuple[object, ...]]]:
    """Every view's rows of the mixed lake read live (TRACEVALS_SNAPSHOT_MB=0, every view defined): what each way
    of opening it is compared with, computed once."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(env.SNAPSHOT_MB, "0")
        live = open_lake(lakes["mixed"])
        assert not any(_is_table(live, v) for v in VIEW_NAMES if v != "model_prices")
        return {view: _rows(live, view) for view in VIEW_NAMES}


def test_every_view_of_a_snapshot_equals_the_live_view(
    lakes: dict[str, Path], live_rows: dict[str, list[tuple[object, ...]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = lakes["mixed"]
    assert is_small(Lake.open(lake))
    snap = open_lake(lake)
    monkeypatch.setenv(env.SNAPSHOT_MB, "0")
    assert not is_small(Lake.open(lake))
    live = open_lake(lake)
    shared = shared_views(VIEW_NAMES)  # computed once at open; the others read them
    assert {"span_facts", "attempts", "message_parts", "steps"} <= shared and "sessions" not in shared
    assert all(_is_table(snap, v) == (v in shared) for v in VIEW_NAMES if v != "model_prices")
    assert not any(_is_table(live, v) for v in VIEW_NAMES if v != "model_prices")
    for view in VIEW_NAMES:
        assert _rows(snap, view) == live_rows[view], view
    [(traces,)] = snap.execute("SELECT count(DISTINCT trace_id) FROM trajectories").fetchall()
    assert traces >= len(DIALECTS), "every dialect's conversation is a trajectory"  # compared something


def test_a_connection_for_one_view_equals_the_live_view(lakes: dict[str, Path]) -> None:
    """`open_lake(views=...)` (what `tracevals sql` opens for a query) snapshots the shared views and writes
    each view only one other reads into that one (`inlined`): every view so opened reads as on a connection
    with every view defined (which reads as the live views: the test above)."""
    lake = lakes["mixed"]
    every = open_lake(lake)
    inlined_somewhere = set()
    for view in VIEW_NAMES:
        one = open_lake(lake, views=(view,))
        defined = {r[0] for r in one.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        inlined_somewhere |= set(closure_of((view,))) - defined - {"model_prices"}
        assert _rows(one, view) == _rows(every, view), view
    assert {"spans", "trajectories", "tool_call_gaps", "steps", "message_parts"} <= inlined_somewhere  # exercised
    # a job that computes an inlined view once (`materialized`) gets it defined first
    one = open_lake(lake, views=("trajectories",))
    assert "steps" not in {r[0] for r in one.execute("SELECT view_name FROM duckdb_views()").fetchall()}
    with materialized(one, ["steps"]):
        assert _rows(one, "steps") == _rows(every, "steps")
    assert _rows(one, "trajectories") == _rows(every, "trajectories")


def _windows(con: duckdb.DuckDBPyConnection, query: str, partition: str) -> int:
    """How many window operators of DuckDB's physical plan of `query` partition by `partition`."""
    [(_, plan)] = con.execute(f"EXPLAIN (FORMAT json) {query}").fetchall()
    todo, found = list(json.loads(plan)), 0
    while todo:
        node = todo.pop()
        found += "WINDOW" in node["name"] and f"PARTITION BY {partition} " in str(node["extra_info"])
        todo += node["children"]
    return found


def test_a_query_of_one_view_computes_each_view_beneath_it_once(lakes: dict[str, Path]) -> None:
    """A view written into its one reader is written out where that reader names it: named three times
    (`tool_call_gaps`' tool calls from the messages), `message_parts` was computed three times in a
    `sql` of `sessions` (each of its windows three times in DuckDB's plan). A view computed more than once
    is computed once at open instead (`shared_views`), and a common table expression named more than once
    is MATERIALIZED: in the plan of a query of any one view, `message_parts`' window is there at most once."""
    lake = lakes["mixed"]
    written_out = []
    for view in VIEW_NAMES:
        con = open_lake(lake, views=(view,))
        times = _windows(con, f"SELECT * FROM {view}", "trace_id, call_span_id, direction")
        assert times <= 1, view
        written_out += [view] if times else []
    assert "sessions" in written_out  # the case was exercised: computed inside the query, once


def test_a_larger_lake_opened_for_a_query_computes_its_shared_views_once(
    lakes: dict[str, Path], live_rows: dict[str, list[tuple[object, ...]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond TRACEVALS_SNAPSHOT_MB, a connection for some views (what `tracevals sql` opens for a query) still
    computes the views its query would compute twice or more once, its span and log rows left in their files:
    live, DuckDB planned and computed `span_facts` at every place the views beneath `sessions` name it (19 on
    the ADK lake; a `sql` of `sessions` on a lake of 10^6 spans took 9.6 s at 3.76 GB, 2.05 s at 0.97 GB so).
    Every view reads as live; a connection for every view (`tracevals ui`'s) stays live."""
    lake = lakes["mixed"]
    monkeypatch.setenv(env.SNAPSHOT_MB, "0")
    live = open_lake(lake)
    assert not any(_is_table(live, v) for v in VIEW_NAMES if v != "model_prices")
    for view in VIEW_NAMES:
        one = open_lake(lake, views=(view,))
        shared = shared_views(closure_of((view,)), (view,)) - {"spans", "logs"}  # the lake's rows: left live
        assert all(_is_table(one, v) for v in shared), view
        copied = {r[0] for r in one.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
        assert not copied & {f"{r}_snapshot" for r in ("raw_spans", "raw_logs", "spans", "logs")}, view
        assert _rows(one, view) == live_rows[view], view
    # the window `span_facts` numbers a response's spans with: at each place in the live plan, nowhere once computed
    window = "trace_id, response_id"
    assert _windows(live, "SELECT * FROM sessions", window) >= 2
    assert _windows(open_lake(lake, views=("sessions",)), "SELECT * FROM sessions", window) == 0


def _copied_raw(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The raw relations whose rows a snapshot copied (`raw_spans_snapshot` ...)."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
    return {raw for raw in ("raw_spans", "raw_logs") if f"{raw}_snapshot" in tables}


def test_a_small_lake_of_a_few_files_is_read_from_them_and_of_many_copied_once(
    lakes: dict[str, Path], live_rows: dict[str, list[tuple[object, ...]]]
) -> None:
    """A snapshot copied every column of every span and log row once, then each view read the copy: on a lake of
    a few local files, reading only the columns a view needs from the files again costs less (`tracevals sql` of
    `count(*)` of `tool_calls` on the small bench lake, one file: 0.402 s against 0.475 s). Past `COPY_RAW_FILES`
    files (each read opens every one) they are copied once, as on object storage (tests/test_lake_object_storage.py).
    The rows are the live views' either way."""

    def files(lake: Lake) -> int:
        return len(lake.partition_files("spans")) + len(lake.partition_files("logs"))

    few = [d for d in DIALECTS if files(Lake.open(lakes[d])) <= COPY_RAW_FILES]
    assert len(few) >= 3, "lakes of a few files were exercised"
    for dialect in few:
        for view in ("sessions", "turns"):  # both re-read the span rows (`message_sources`)
            one = open_lake(lakes[dialect], views=(view,))
            assert not _copied_raw(one) and _is_table(one, "span_facts"), (dialect, view)
            # the same views computed, the rows copied first (a snapshot's rows equal the live views': above)
            shared = tuple(sorted(shared_views(closure_of((view,)), (view,))))
            copied = open_lake(lakes[dialect], views=(view,), materialize=shared)
            assert _copied_raw(copied) and _rows(one, view) == _rows(copied, view), (dialect, view)
    mixed = Lake.open(lakes["mixed"])
    assert files(mixed) > COPY_RAW_FILES
    one = open_lake(mixed, views=("sessions",))
    assert _copied_raw(one) == {"raw_spans", "raw_logs"}
    assert _rows(one, "sessions") == live_rows["sessions"]


def test_a_restriction_to_some_sessions_narrows_the_snapshot_as_the_live_views(
    lakes: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`score --sample/--since` restrict a connection by shadowing its raw files; a snapshot computed from
    the whole lake is narrowed alike, and undoing the restriction gives every row back."""
    lake = lakes["mixed"]
    snap = open_lake(lake)
    monkeypatch.setenv(env.SNAPSHOT_MB, "0")
    live = open_lake(lake)
    everything = _rows(snap, "trajectories")
    for seed in (1, 2):
        restricted = [select_sessions(con, Selection(fraction=0.5, seed=seed)) for con in (snap, live)]
        narrowed = _rows(snap, "trajectories")
        assert narrowed == _rows(live, "trajectories") and 0 < len(narrowed) < len(everything), seed
        assert _rows(snap, "steps") == _rows(live, "steps")
        for r in restricted:
            r.undo()
        assert _rows(snap, "trajectories") == everything == _rows(live, "trajectories")


def test_only_the_named_views_and_those_they_read_are_defined(lakes: dict[str, Path]) -> None:
    con = open_lake(lakes["genai_current"], views=("tool_calls",))
    defined = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert {"tool_calls", "span_facts"} <= defined and not defined & {"sessions", "trajectories", "turns"}
    # `spans`, read by `span_facts` alone here, is written into it (`inlined`), not defined: the rows are the same
    assert "spans" not in defined
    live = open_lake(lakes["genai_current"], views=("tool_calls",), materialize=False)
    assert "spans" in {r[0] for r in live.execute("SELECT view_name FROM duckdb_views()").fetchall()}
    assert _rows(con, "tool_calls") == _rows(live, "tool_calls")
    with pytest.raises(LakeError, match="unknown views"):
        open_lake(lakes["genai_current"], views=("sesions",))


def test_the_views_a_query_names() -> None:
    """The relations of DuckDB's parse tree: a view computes its shared views at open, so a column, an alias or a
    string of a view's name must not name it (on a lake of 10^6 spans, `select count(*) as sessions from spans`
    computed `span_facts` and `attempts` for nothing); the words where the parser serialises no tree."""
    assert views_read_by("select 1") == ()
    assert views_read_by("SELECT s.* FROM Sessions s JOIN steps USING (trace_id)") == ("steps", "sessions")
    assert views_read_by("describe turns") == ("turns",)
    assert views_read_by("select count(*) as sessions, 'steps' as turns from spans") == ("spans",)
    nested = "with t as (from steps) select * from t where exists (select 1 from tool_calls c where c.trace_id = 'x')"
    assert views_read_by(nested) == ("tool_calls", "steps")
    assert views_read_by("select 1; select * from runs") == ("runs",)
    assert views_read_by("explain select * from steps") == ("steps",)  # no tree: the words
    assert views_read_by("select * from query('select * from sessions')") == ("sessions",)  # SQL text: the words
    assert views_read_by("selct * form sessions") == ("sessions",)  # no parse: the words (and the query fails)
    for depth in (500, 3000):  # a tree nested past what the JSON parse takes, a query past DuckDB's parser: the words
        deep = "select * from " + "(select * from " * depth + "sessions" + ") as t" * depth
        assert views_read_by(deep) == ("sessions",), depth
    for catalog in ("show tables", "SHOW ALL TABLES", "describe", "select * from information_schema.columns",
                    "select view_name from duckdb_views()"):  # fmt: skip
        assert views_read_by(catalog) is None, catalog


def test_sql_answers_over_a_snapshot_and_lists_every_view(lakes: dict[str, Path]) -> None:
    lake = str(lakes["openinference"])

    def sql(query: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "tracevals", "sql", "--lake", lake, "--format", "csv", query]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    count = sql("select count(*) as n from sessions")
    assert count.returncode == 0, count.stderr
    assert count.stdout.splitlines()[1] == str(len(_rows(open_lake(lake), "sessions")))
    tables = sql("show tables")
    assert tables.returncode == 0 and {"sessions", "steps", "turns"} <= set(tables.stdout.split()), tables.stderr
    typo = sql("select * from sesions")
    assert typo.returncode == 1 and "the views are spans" in typo.stderr and "sessions" in typo.stderr


def test_views_defined_live_keep_no_stand_in(lakes: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Live, each view is bound against empty stand-ins of what it reads (`binding.stand_ins`); none of them
    stays, so every name reads the views and the files again."""
    monkeypatch.setenv(env.SNAPSHOT_MB, "0")
    con = open_lake(lakes["mixed"])
    temporary = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
    assert not temporary & {*VIEW_NAMES, "raw_spans", "raw_logs"}, temporary
    [(spans,)] = con.execute("SELECT count(*) FROM spans").fetchall()
    [(traces,)] = con.execute("SELECT count(DISTINCT trace_id) FROM trajectories").fetchall()
    assert spans > 0 and traces >= len(DIALECTS)


def _parsed(body: str) -> dict[str, object]:
    """DuckDB's parse tree of a view's query (no binding: `json_serialize_sql`)."""
    [(text,)] = duckdb.execute("SELECT json_serialize_sql(?::VARCHAR)", [body.rstrip().rstrip(";")]).fetchall()
    tree = json.loads(text)
    assert not tree["error"], tree
    return dict(tree)


def _scans_parsed(body: str) -> Counter[str]:
    """How many times a view's query computes each relation, from DuckDB's parse tree: a common table
    expression marked MATERIALIZED once, any other one where it is named (the rule `scans` reads from the
    text)."""
    ctes: dict[str, tuple[bool, object]] = {}
    todo: list[object] = [_parsed(body)]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            for entry in (node.get("cte_map") or {}).get("map", []):
                value = entry["value"]
                ctes[entry["key"]] = (value["materialized"] == "CTE_MATERIALIZE_ALWAYS", value["query_node"])
            todo += node.values()
        elif isinstance(node, list):
            todo += node
    reached: list[str] = []

    def count(node: object, within: frozenset[str]) -> Counter[str]:  # within: the CTEs being written out
        found: Counter[str] = Counter()
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE":
                name = str(node["table_name"])
                if name in ctes and name not in within and ctes[name][0]:
                    reached.extend([name] if name not in reached else [])
                elif name in ctes and name not in within:
                    found.update(count(ctes[name][1], within | {name}))
                else:
                    found[name] += 1
            for key, value in node.items():
                if key != "cte_map":
                    found.update(count(value, within))
        elif isinstance(node, list):
            for item in node:
                found.update(count(item, within))
        return found

    total = count(_parsed(body), frozenset())
    done = 0
    while done < len(reached):
        total.update(count(ctes[reached[done]][1], frozenset({reached[done]})))
        done += 1
    return total


def test_how_often_a_view_reads_another_is_what_duckdbs_parser_finds() -> None:
    """Which views a view reads, and how many times it computes each (what a connection defines for a query,
    what a snapshot and a load compute once, what is written into its one reader), is read from its SQL's
    text: for every view it is what DuckDB's parser finds there (a common table expression marked
    MATERIALIZED computed once, any other one where it is named), and no alias or column named like a view:
    `count(*) AS model_calls` and `c.model_calls` made `environments` read `model_calls` and `injections`,
    and `sessions`' column `turns` made it read `turns`."""
    from tracevals.queries.catalog import view_bodies, view_sql
    from tracevals.queries.materialize import view_graph, view_scans

    counted = dict(view_scans())
    graph = dict(view_graph())
    for _, sql in view_sql():
        for name, body in view_bodies(sql):
            parsed = Counter({v: n for v, n in _scans_parsed(body).items() if v in counted and v != name})
            assert counted[name] == parsed, name
            assert graph[name] == set(parsed), name
    assert graph["environments"] == {"span_facts", "spans"}
    assert graph["sessions"] == {"attempts", "trajectories"}
    assert counted["tool_call_gaps"]["message_parts"] == 1  # its `from_messages`, named three times, is MATERIALIZED
    assert "model_calls" not in closure_of(("attempts", "runs", "scores", "environments"))
