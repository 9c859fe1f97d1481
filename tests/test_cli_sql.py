"""`tracevals sql`: formats, read-only enforcement, clear errors."""

from __future__ import annotations

import csv
import functools
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import click
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import tracevals
from tracevals.cli import main
from tracevals.cli.shared.times import EXAMPLES


@tracevals.tool(effect="read")
def get_orders(customer_id: str) -> list[str]:
    return ["ord_1"]


@pytest.fixture
def filled_lake(lake: Path, telemetry: tracevals.Telemetry) -> Path:
    with tracevals.session("s-1"), tracevals.agent("support"):
        get_orders(customer_id="cus_001")
        get_orders(customer_id="cus_002")
    telemetry.force_flush()
    return lake


def _files(lake: Path) -> dict[str, bytes]:
    return {str(p.relative_to(lake)): p.read_bytes() for p in sorted(lake.rglob("*")) if p.is_file()}


def test_json_format_prints_row_objects(filled_lake: Path) -> None:
    result = CliRunner().invoke(
        main, ["sql", "--lake", str(filled_lake), "--format", "json", "select count(*) as n from tool_calls"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"n": 2}]


def test_csv_and_table_formats(filled_lake: Path) -> None:
    query = "select tool_name, call_index from tool_calls order by call_index"
    csv_out = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "--format", "csv", query])
    assert csv_out.exit_code == 0
    assert csv_out.output.splitlines() == ["tool_name,call_index", "get_orders,1", "get_orders,2"]
    table_out = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), query])
    assert table_out.exit_code == 0 and "get_orders" in table_out.output


def test_a_table_shows_its_first_rows_and_counts_the_rest(filled_lake: Path) -> None:
    """A table is for reading, and rich lays one out in memory (~0.3 ms a row: a nightly lake's 819,757 score
    rows took minutes and 5 GB): it shows `TABLE_ROWS` rows and says how many there are and how to get them
    all; CSV and JSON print every row. At the bound itself nothing is left out."""
    from tracevals.cli.shared.output import TABLE_ROWS

    def run(rows: int, *fmt: str) -> list[str]:
        query = f"select range as n from range({rows}) order by n"
        result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), *fmt, query])
        assert result.exit_code == 0, result.output
        return result.output.splitlines()

    table = run(2_500)
    shown = [line for line in table if line.startswith("│")]
    assert len(shown) == TABLE_ROWS and shown[0].strip("│ ") == "0" and shown[-1].strip("│ ") == str(TABLE_ROWS - 1)
    assert table[-1] == f"{TABLE_ROWS:,} of 2,500 rows shown; --format csv or --format json prints every row"
    assert len(run(2_500, "--format", "csv")) == 2_501
    assert len(json.loads("\n".join(run(2_500, "--format", "json")))) == 2_500
    whole = run(TABLE_ROWS)
    assert len([line for line in whole if line.startswith("│")]) == TABLE_ROWS and "rows shown" not in whole[-1]


def test_query_from_a_sql_file(filled_lake: Path, tmp_path: Path) -> None:
    query_file = tmp_path / "q.sql"
    query_file.write_text("select count(*) as traces from trajectories")
    result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "--format", "json", str(query_file)])
    assert json.loads(result.output) == [{"traces": 1}]
    query_file.write_text("-- how many\nselect count(*) as traces from trajectories; -- the end\n")
    result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "--format", "json", str(query_file)])
    assert json.loads(result.output) == [{"traces": 1}]


def test_two_selects_are_refused_not_one_of_them_printed(filled_lake: Path, tmp_path: Path) -> None:
    """A file of two SELECTs printed the second's result alone (DuckDB runs them all and gives the last), the
    first unseen, as if it were the answer; it is one line now."""
    query_file = tmp_path / "two.sql"
    query_file.write_text("select count(*) from spans;\nselect count(*) from trajectories;\n")
    result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), str(query_file)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: the query holds 2 statements and sql prints one result; run them one at a time"
    ]


@pytest.mark.parametrize(
    "statement",
    [
        "DROP VIEW spans",
        "COPY (SELECT 1) TO 'out.csv'",
        "INSTALL httpfs",
        "ATTACH 'other.db'",
        "SELECT 1; DROP VIEW tool_calls",
        "CREATE TABLE t AS SELECT 1",
        # every way to write inside the lake (the sandbox allows the lake's own directory)
        "COPY (SELECT 1 AS a) TO '{lake}/spans/injected.parquet'",
        "EXPLAIN ANALYZE COPY (SELECT 1 AS a) TO '{lake}/spans/injected.parquet'",
        "explain analyze copy (select * from raw_scores) to '{lake}/scores/forged.parquet'",
        "/* a comment */ EXPLAIN ANALYZE COPY (SELECT 1 AS a) TO '{lake}/x.csv'",
        "EXPLAIN (FORMAT json) COPY (SELECT 1 AS a) TO '{lake}/x.csv'",
        "SELECT 1; EXPLAIN ANALYZE COPY (SELECT 1 AS a) TO '{lake}/x.csv'",
        "EXPLAIN ANALYZE SELECT 1; COPY (SELECT 1 AS a) TO '{lake}/x.csv'",
        "EXPORT DATABASE '{lake}/exported'",
        "ATTACH '{lake}/spans/db.duckdb' AS db",
        "INSERT INTO raw_scores SELECT * FROM raw_scores",
        "PRAGMA enable_profiling",
        "CALL pragma_version()",
        "SET threads = 1",
        "CHECKPOINT",
        "LOAD parquet",
    ],
)
def test_writes_are_rejected_and_the_lake_is_untouched(filled_lake: Path, statement: str) -> None:
    before = _files(filled_lake)
    statement = statement.replace("{lake}", str(filled_lake))
    result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), statement])
    assert result.exit_code == 1
    assert "only SELECT queries may run over a lake" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert _files(filled_lake) == before


def test_explain_of_a_select_runs(filled_lake: Path) -> None:
    for query in ("EXPLAIN SELECT count(*) FROM spans", "EXPLAIN ANALYZE SELECT count(*) FROM tool_calls"):
        result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "--format", "json", query])
        assert result.exit_code == 0, result.output


def test_bad_sql_and_missing_lake_are_one_line_errors(filled_lake: Path, tmp_path: Path) -> None:
    bad = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "select nope from tool_calls"])
    assert bad.exit_code == 1 and bad.output.startswith("Error: query failed:")
    missing = CliRunner().invoke(main, ["sql", "--lake", str(tmp_path / "absent"), "select 1"])
    assert missing.exit_code == 1 and "is not a directory" in missing.output


def test_out_of_memory_is_a_one_line_error(filled_lake: Path, tmp_path: Path) -> None:
    """DuckDB running out of the memory it was given ends as one line that says what to change, not its traceback."""
    args = ["export", "steps", "--lake", str(filled_lake), "--out", str(tmp_path / "out"), "--memory-limit", "1MB"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("Error: Out of Memory Error") and "raise --memory-limit" in last
    assert "Traceback" not in result.output


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


@pytest.mark.parametrize("after_cpu_s", [0.6, 0.8, 1.0, 3.0])
def test_ctrl_c_stops_a_query_with_one_line(filled_lake: Path, after_cpu_s: float) -> None:
    """Ctrl-C (a real SIGINT to a real `tracevals sql` process) as it opens the lake, starts or runs a long
    query: the command stops as Ctrl-C stops any other, one line, no traceback. DuckDB drops a SIGINT that
    falls while a statement starts (the query then ran to its end: minutes here); `queries.interrupts`."""
    import signal
    import subprocess
    import sys
    import time

    query = "select count(*) from range(1000000000000) a"  # minutes of work: still running when signalled
    process = subprocess.Popen(
        [sys.executable, "-m", "tracevals", "sql", "--lake", str(filled_lake), query],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal starts it
    )
    try:
        while _cpu_seconds(process.pid) < after_cpu_s and process.poll() is None:
            time.sleep(0.01)  # past the imports (~0.5 CPU-s): opening the lake, starting the query, well into it
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 1, err
    assert "Traceback" not in err and err.strip().splitlines() == ["Aborted!"], err


@pytest.mark.parametrize("after_cpu_s", [1.0, 3.0])
def test_sigterm_stops_a_query_and_removes_the_spill_folder(
    filled_lake: Path, tmp_path: Path, after_cpu_s: float
) -> None:
    """SIGTERM (`timeout`, a process manager) during a long query: it stops as Ctrl-C does, one line, exit 143
    as a shell reports a SIGTERM, and DuckDB's spill folder (removed at exit) is gone; Python's default
    ended the process on the spot and left it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    query = "select count(*) from range(1000000000000) a"
    process = subprocess.Popen(
        [sys.executable, "-m", "tracevals", "sql", "--lake", str(filled_lake), query],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL),  # whatever started the test run
    )
    try:
        while _cpu_seconds(process.pid) < after_cpu_s and process.poll() is None:
            time.sleep(0.01)  # well past the imports: into the query
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 143, err
    assert err.strip().splitlines() == ["Aborted! (SIGTERM)"], err
    assert not list(tmp_path.glob("tracevals-spill-*"))


def test_table_keeps_square_brackets_in_values(filled_lake: Path) -> None:
    result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "select '[a, b]' as v"])
    assert result.exit_code == 0 and "[a, b]" in result.output


def test_parquet_format_writes_the_file_named_by_out(filled_lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "calls.parquet"
    query = "select tool_name, call_index from tool_calls order by call_index"
    result = CliRunner().invoke(
        main, ["sql", "--lake", str(filled_lake), "--format", "parquet", "--out", str(out), query]
    )
    assert result.exit_code == 0, result.output
    table = pq.read_table(out)
    assert table.column_names == ["tool_name", "call_index"] and table.column("call_index").to_pylist() == [1, 2]
    missing = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "--format", "parquet", query])
    assert missing.exit_code == 1 and "--out" in missing.output


def test_out_writes_csv_and_refuses_a_path_inside_the_lake(filled_lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "calls.csv"
    query = "select tool_name from tool_calls order by call_index"
    result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "--format", "csv", "--out", str(out), query])
    assert result.exit_code == 0, result.output
    assert out.read_text().splitlines() == ["tool_name", "get_orders", "get_orders"]
    before = _files(filled_lake)
    inside = filled_lake / "spans" / "x.parquet"
    refused = CliRunner().invoke(
        main, ["sql", "--lake", str(filled_lake), "--format", "parquet", "--out", str(inside), query]
    )
    assert refused.exit_code == 1 and "inside the lake" in refused.output
    assert _files(filled_lake) == before


@pytest.mark.parametrize(
    "query",
    [
        "select * from read_csv('/etc/passwd')",
        "select * from read_text('{outside}')",
        "select count(*) from read_parquet('{outside_lake}/spans/**/*.parquet')",
    ],
)
def test_even_a_select_cannot_read_outside_the_lake(filled_lake: Path, tmp_path: Path, query: str) -> None:
    # the statement check lets a SELECT through; the sandbox (enable_external_access = false, with only
    # the lake in allowed_directories) stops it from reading anything else
    outside = tmp_path / "notes.txt"
    outside.write_text("TOP-SECRET-CONTENT")
    other = tmp_path / "other_lake"
    (other / "spans").mkdir(parents=True)
    for f in (filled_lake / "spans").rglob("*.parquet"):
        (other / "spans" / f.name).write_bytes(f.read_bytes())
    sql_text = query.format(outside=outside, outside_lake=other)
    result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), sql_text])
    assert result.exit_code == 1
    assert result.output.startswith("Error: query failed:") and "Permission" in result.output
    assert "TOP-SECRET-CONTENT" not in result.output


def test_the_sandbox_allows_the_lake_and_nothing_else_not_even_duckdbs_temp_directory(
    filled_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DuckDB adds its temp directory to the allowed ones, by default `.tmp` of the current directory
    work = tmp_path / "work"
    (work / ".tmp").mkdir(parents=True)
    (work / ".tmp" / "notes.csv").write_text("TOP-SECRET-CONTENT,1\n")
    monkeypatch.chdir(work)
    for query in ("select * from read_csv('.tmp/notes.csv')", f"select * from read_csv('{work}/.tmp/notes.csv')"):
        result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), query])
        assert result.exit_code == 1, result.output
        assert "Permission" in result.output and "TOP-SECRET-CONTENT" not in result.output
    allowed = CliRunner().invoke(
        main, ["sql", "--lake", str(filled_lake), "--format", "json", "select current_setting('allowed_directories') a"]
    )
    [(dirs,)] = [tuple(r.values()) for r in json.loads(allowed.stdout)]
    lake_root = str(filled_lake.resolve()) + "/"
    # the lake, and a spill directory of the process's own that holds nothing of the user's
    assert lake_root in dirs and all(d == lake_root or "tracevals-spill-" in d for d in dirs), dirs


def test_since_and_until_skip_the_partitions_out_of_range(filled_lake: Path) -> None:
    # a corrupt file in a partition out of range: if the range opened it, it would be named in a warning
    import tracevals.lake.unreadable as sources  # the once-per-process warning of unreadable files

    sources._warned.clear()
    (day,) = {p.parent.parent.name for p in (filled_lake / "spans").rglob("*.parquet")}
    bogus = filled_lake / "spans" / "date=2001-01-01" / "hour=00" / "part-bogus.parquet"
    bogus.parent.mkdir(parents=True)
    bogus.write_bytes(b"not parquet at all")
    date = day.removeprefix("date=")
    import datetime as dt

    next_day = (dt.date.fromisoformat(date) + dt.timedelta(days=1)).isoformat()
    ok = CliRunner().invoke(
        main,
        [
            "sql",
            "--lake",
            str(filled_lake),
            "--since",
            date,
            "--until",
            next_day,  # [since, until): the day, whole
            "--format",
            "json",
            "select count(*) as n from tool_calls",
        ],
    )
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout) == [{"n": 2}] and ok.stderr == ""  # the file out of range was never opened
    unbounded = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "--strict", "select count(*) from spans"])
    assert unbounded.exit_code == 1 and "part-bogus.parquet" in unbounded.output  # without the range it is read
    empty = CliRunner().invoke(
        main,
        ["sql", "--lake", str(filled_lake), "--until", "2001-01-01T01:00", "--format", "json", "select 1 as one"],
    )
    assert empty.exit_code == 0, empty.output
    assert "part-bogus.parquet" in empty.stderr  # the range holds only the corrupt file
    bad = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "--since", "last tuesday", "select 1"])
    assert bad.exit_code == 1
    assert bad.output.strip() == "Error: --since: 'last tuesday' is not a time: use " + EXAMPLES
    backwards = CliRunner().invoke(
        main, ["sql", "--lake", str(filled_lake), "--since", date, "--until", date, "select 1"]
    )
    assert backwards.exit_code == 1 and "is not after --since" in backwards.output


def _commands() -> list[tuple[str, click.Command]]:
    """Every command that runs, a group's subcommands under their full name (`cases extract`)."""
    from tracevals.cli import COMMANDS

    out = []
    for name in COMMANDS:
        command = main.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None
        if isinstance(command, click.Group):
            out += [(f"{name} {sub}", command.commands[sub]) for sub in sorted(command.commands)]
        else:
            out.append((name, command))
    return out


def test_every_command_reads_one_time_grammar() -> None:
    from tracevals.cli.shared.times import TimeType

    ranged = []
    for name, command in _commands():
        params = {p.name: p for p in command.params}
        if "since" in params:
            ranged.append(name)
            assert isinstance(params["since"].type, TimeType) and isinstance(params["until"].type, TimeType)
    assert sorted(ranged) == ["cases extract", "gate", "report", "score", "sql"]


def test_an_age_is_a_number_and_a_unit_as_a_letter_or_a_word() -> None:
    """`--since 1w` and `--since '2 days'` were refused (`is not a time`); an age takes weeks, and its unit as
    a word, beside the letters it took."""
    from datetime import datetime, timedelta, timezone

    import click

    from tracevals.cli.shared.times import parse_time

    now = datetime(2026, 12, 8, 12, tzinfo=timezone.utc)
    ages = {"1w": timedelta(weeks=1), "2 days": timedelta(days=2), "1 Week": timedelta(weeks=1),
            "90m": timedelta(minutes=90), "24h": timedelta(hours=24), "3 hrs": timedelta(hours=3),
            "1.5h": timedelta(hours=1.5), "10 secs": timedelta(seconds=10), "7d": timedelta(days=7)}  # fmt: skip
    assert {text: now - parse_time(text, now) for text in ages} == ages
    for text in ("1mo", "2 dayz", "-1d", "1h30m"):
        with pytest.raises(click.BadParameter):
            parse_time(text, now)


# What each command that needs --lake is given besides, so that --lake is all it lacks (`{tmp}`: a folder).
_ALL_BUT_THE_LAKE = {
    "cases extract": ["--out", "{tmp}/cases"],
    "compact": [],
    "export": ["--out", "{tmp}/spans.parquet", "spans"],
    "gate": [],
    "ingest": ["{tmp}/spans.json"],
    "report": ["--out", "{tmp}/report.json"],
    "sql": ["select 1"],
    "ui": [],
}


def test_a_command_without_its_lake_says_which_option_is_missing(tmp_path: Path, monkeypatch: Any) -> None:
    """Every command that requires --lake (and has no TRACEVALS_LAKE) stops with click's usage error, exit 2.
    An explicit `default=None` made click 8.3+ take the option as given: the command ran with no lake and
    ended in a TypeError traceback."""
    monkeypatch.delenv("TRACEVALS_LAKE", raising=False)
    (tmp_path / "spans.json").write_text('{"resourceSpans": []}', encoding="utf-8")
    needing = sorted(name for name, command in _commands() for p in command.params if p.name == "lake" and p.required)
    assert needing == sorted(_ALL_BUT_THE_LAKE)  # a new command that needs a lake is added above
    for name in needing:
        rest = [a.format(tmp=tmp_path) for a in _ALL_BUT_THE_LAKE[name]]
        result = CliRunner().invoke(main, [*name.split(), *rest])
        assert result.exit_code == 2 and "Missing option '--lake'" in result.output, (name, result.output)
        assert isinstance(result.exception, SystemExit), (name, result.exception)


def test_a_missing_sql_file_is_a_clear_error(filled_lake: Path) -> None:
    result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "nope/question.sql"])
    assert result.exit_code == 1 and "no such .sql file" in result.output


@pytest.fixture(scope="module")
def every_kind_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Spans of every dialect fixture, and a score row: every view has rows of every column type."""
    from fixtures.otlp_lakes import DIALECTS, ingest_fixture

    from tracevals.scoring import score_lake

    lake = tmp_path_factory.mktemp("every")
    for dialect in DIALECTS:
        ingest_fixture(lake, dialect)
    score_lake(lake)
    return lake


@functools.cache
def every_view(lake: Path) -> dict[str, Any]:
    """`select *` of every view, read once (as `tracevals sql` reads it: a read-only connection)."""
    from tracevals.queries import VIEW_NAMES, open_lake

    con = open_lake(lake, read_only=True)
    return {view: con.sql(f"select * from {view}").to_arrow_table() for view in VIEW_NAMES}


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "parquet"])
def test_select_star_from_every_view_prints_in_every_format(
    every_kind_lake: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    # the first query a newcomer types, on every view: nanosecond timestamps (at any depth), lists, structs,
    # maps. One connection renders every view the way `tracevals sql` does; the command itself runs once.
    from tracevals.cli.sql import render

    for view, table in every_view(every_kind_lake).items():
        render(table, fmt, tmp_path / f"{view}.out")
        if fmt == "json":
            rows = json.loads((tmp_path / f"{view}.out").read_text())
            assert isinstance(rows, list), view
            if view == "spans":
                assert rows and rows[0]["start_time"].count(":") >= 2  # the full text, nanoseconds kept
    out = ["--out", str(tmp_path / "spans.parquet")] if fmt == "parquet" else []
    result = CliRunner().invoke(main, ["sql", "--lake", str(every_kind_lake), "--format", fmt, *out,
                                       "select * from spans limit 1"])  # fmt: skip
    assert result.exit_code == 0, (result.output, result.exception)


def test_an_unreadable_file_is_skipped_with_one_warning_or_fails_with_strict(filled_lake: Path) -> None:
    import tracevals.lake.unreadable as sources  # the once-per-process warning of unreadable files

    sources._warned.clear()  # the warning is once per process and file; this test is a new "process"
    (hour,) = sorted(filled_lake.glob("spans/date=*/hour=*"))
    whole = next(hour.glob("*.parquet"))
    (hour / "zz-garbage.parquet").write_bytes(b"not parquet at all")
    (hour / "zz-cut.parquet").write_bytes(whole.read_bytes()[:300])  # a copy cut short
    query = ["sql", "--lake", str(filled_lake), "--format", "json", "select count(*) as n from tool_calls"]
    result = CliRunner().invoke(main, query)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"n": 2}]  # the rest of the lake still answers
    (warning,) = result.stderr.splitlines()
    assert warning.startswith("tracevals: warning: skipped 2 unreadable lake files: ")
    assert f"{hour / 'zz-cut.parquet'} (not Parquet: no PAR1 magic)" in warning
    assert f"{hour / 'zz-garbage.parquet'} (not Parquet: no PAR1 magic)" in warning
    assert "(--strict fails instead)" in warning
    for command in (query, ["score", "--lake", str(filled_lake), "--no-write"]):
        strict = CliRunner().invoke(main, [*command, "--strict"])
        assert strict.exit_code == 1
        assert "Error: 2 unreadable lake files: " in strict.output and "Traceback" not in strict.output


def test_every_command_has_one_format_option() -> None:
    from tracevals.cli.shared.output import FORMATS

    for name, command in _commands():
        (fmt,) = [p for p in command.params if p.name == "fmt"] or [None]
        assert fmt is not None, f"tracevals {name} has no --format"
        assert fmt.opts == ["--format"] and fmt.envvar == "TRACEVALS_FORMAT", name
        choices = list(fmt.type.choices)  # type: ignore[attr-defined]
        assert choices[: len(FORMATS)] == list(FORMATS) and fmt.default == "table", (name, choices)


def test_the_cli_folder_holds_commands_and_the_shared_helpers_only() -> None:
    """One module per command (the `COMMANDS` table) or per other surface a user loads (`SURFACES`: the
    pytest plugin, loaded by its entry point); what several commands share lives in `cli/shared/`, so a
    module beside the commands is either one of those or a mistake."""
    from importlib.metadata import entry_points
    from pathlib import Path

    import tracevals.cli
    from tracevals.cli import COMMANDS, SURFACES

    folder = Path(tracevals.cli.__file__).parent
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "__main__"}
    commands = {target.split(":")[0].rsplit(".", 1)[1] for target in COMMANDS.values()}
    assert modules == commands | set(SURFACES) and not commands & set(SURFACES)
    for name, group in SURFACES.items():  # each is loaded by the entry point it names
        assert f"tracevals.cli.{name}" in {p.value for p in entry_points(group=group)}, (name, group)
    assert (folder / "shared" / "__init__.py").is_file()


@pytest.mark.parametrize(
    "args",
    [
        ["sql", "select count(*) from trajectories"],
        ["score", "--no-write", "--workers", "1", "--format", "json"],
        ["report", "--since", "7d", "--out", "{tmp}/report.json"],
        ["gate", "--since", "7d", "--min-pass-rate", "0"],
        ["ingest", "{tmp}/one.json"],
    ],
    ids=["sql", "score", "report", "gate", "ingest"],
)
def test_a_command_on_a_small_lake_imports_no_pandas(filled_lake: Path, args: list[str], tmp_path: Path) -> None:
    """pandas is no dependency of tracevals (the Ray extra brings it); importing it costs ~0.2-0.4 s of
    every small-lake command. pyarrow imports it for an empty schema's table (`lake.schema.empty_table`
    does not), for any Python value it converts (`lake.arrow` builds arrays through Polars; the writers'
    own scalars are made from bytes), and for combining no chunk."""
    import subprocess
    import sys

    span = {"traceId": "0" * 31 + "1", "spanId": "0" * 15 + "1", "name": "chat m", "kind": 3,
            "startTimeUnixNano": "1764547200000000000", "endTimeUnixNano": "1764547201000000000",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}  # fmt: skip
    body = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "x"}, "spans": [span]}]}]}
    (tmp_path / "one.json").write_text(json.dumps(body), encoding="utf-8")
    args = [a.format(tmp=tmp_path) for a in args]
    probe = (
        "import sys\n"
        "from tracevals.cli import main\n"
        "try:\n"
        f"    main([{args[0]!r}, '--lake', {str(filled_lake)!r}, *{args[1:]!r}])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (None, 0, 1), exc.code\n"  # a gate may fail: that is its answer, not an error
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr


def _imported(lake: Path, args: list[str]) -> tuple[str, set[str]]:
    """`tracevals sql --lake LAKE ARGS` in a process of its own: its output, and which of pyarrow, polars,
    numpy and pandas it imported."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from tracevals.cli import main\n"
        "try:\n"
        f"    main(['sql', '--lake', {str(lake)!r}, *{args!r}])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (None, 0), exc.code\n"
        "heavy = {'pyarrow', 'polars', 'numpy', 'pandas'}\n"
        "print('\\nIMPORTED', *sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    out, _, imported = done.stdout.rpartition("\nIMPORTED")
    return out, set(imported.split())


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_a_query_of_plain_columns_imports_no_pyarrow(filled_lake: Path, fmt: str) -> None:
    """pyarrow's import alone is a third of `tracevals sql "select 1"` on a small lake: a local lake is
    listed, its footers read and its result printed without it, when every column is of a type DuckDB
    returns as Arrow would (numbers, text, dates, booleans). Other types still print through Arrow."""
    out, imported = _imported(filled_lake, ["--format", fmt, "select count(*) as n from trajectories"])
    assert imported == set() and "1" in out
    out, imported = _imported(filled_lake, ["--format", fmt, "select 1 as one"])
    assert imported == set() and "1" in out
    out, imported = _imported(filled_lake, ["--format", fmt, "select start_time from spans limit 1"])
    assert "pyarrow" in imported and ":" in out  # a timestamp: its full text, through Arrow


HOSTILE = (
    "select 'a[b] [bold]x[/bold]' as s, NULL as n, 1.5::DOUBLE as d, -12345678901234::BIGINT as b, "
    "1.25::DECIMAL(10,2) as dec, DATE '2026-12-04' as dt, true as t, 'é💥\n\"x\",y' as u, 3::UTINYINT as small, "
    "0.1::FLOAT as f, 18446744073709551615::UBIGINT as big, "
    "'<script>alert(1)</script>' as html from range(2)"
)


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_plain_columns_print_as_arrow_would_print_them(filled_lake: Path, tmp_path: Path, fmt: str) -> None:
    """The result printed without pyarrow is the one printed through Arrow (`render`), value for value."""
    import duckdb

    from tracevals.cli.sql import _PLAIN_TYPES, render

    con = duckdb.connect()
    types = con.sql(HOSTILE).types
    assert all(str(t) in _PLAIN_TYPES or str(t).startswith("DECIMAL") for t in types), types
    render(con.sql(HOSTILE).to_arrow_table(), fmt, tmp_path / "arrow.out")
    result = CliRunner().invoke(
        main, ["sql", "--lake", str(filled_lake), "--format", fmt, "--out", str(tmp_path / "plain.out"), HOSTILE]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "plain.out").read_text() == (tmp_path / "arrow.out").read_text()


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "parquet"])
@pytest.mark.parametrize("arrow", [False, True], ids=["plain", "arrow"])
def test_a_result_printed_chunk_by_chunk_is_the_result_printed_whole(
    filled_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, arrow: bool
) -> None:
    """`sql` fetches and prints a result a chunk at a time (2,000,000 rows of two columns took 625 MB as CSV and
    1.1 GB as JSON when every row was fetched first; a lake's spans, gigabytes): one CSV header, one JSON array,
    a table of the first rows that counts them all, one Parquet file, the same text as the result printed
    whole, over chunks of 7 rows and on both roads (plain columns without pyarrow, others through Arrow)."""
    import duckdb
    import pyarrow.parquet as pq

    from tracevals.cli import sql as sql_command

    query = HOSTILE.replace("range(2)", "range(600)")
    if arrow:
        query = query.replace(" as html ", " as html, [range] as l, now()::TIMESTAMP_NS as t_ns ")
    whole = duckdb.connect().sql(query).to_arrow_table()
    sql_command.render(whole, fmt, tmp_path / f"whole.{fmt}")
    monkeypatch.setattr(sql_command, "CHUNK_ROWS", 7)
    out = tmp_path / f"chunked.{fmt}"
    result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "--format", fmt, "--out", str(out), query])
    assert result.exit_code == 0, result.output
    assert "600 rows ->" in result.output or fmt == "table"
    if fmt == "parquet":
        assert (
            pq.read_table(out)
            .drop_columns(["t_ns"] if arrow else [])
            .equals(whole.drop_columns(["t_ns"] if arrow else []))
        )
        return
    got, expected = out.read_text(), (tmp_path / f"whole.{fmt}").read_text()
    if arrow:  # now() differs between the two runs: compare everything else
        got, expected = (re.sub(r"20\d\d-\d\d-\d\d[ T][\d:.+]+", "T", text) for text in (got, expected))
    assert got == expected
    if fmt == "table":
        assert "500 of 600 rows shown" in got


# A session id and an agent name a hostile agent (or a prompt injection) could make: colour, clear-screen and
# window-title sequences, rich markup, a carriage return, an 8-bit CSI, a right-to-left override.
HOSTILE_ID = "s-\x1b[1mBOLD\x1b[0m\x1b]0;pwned\x07\x1b[2J[bold]x[/bold]\rback\x9b31m\u202eevil"


@pytest.fixture
def hostile_lake(lake: Path, telemetry: tracevals.Telemetry) -> Path:
    with tracevals.session(HOSTILE_ID), tracevals.agent("agent\x1b[5m"):
        get_orders(customer_id="cus_001")
    telemetry.force_flush()
    return lake


def _acted_on(text: str) -> list[str]:
    """The characters of `text` a terminal would act on rather than show (newline and tab aside)."""
    return sorted({c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F or c == "\u202e"})


def test_a_table_shows_a_hostile_value_escaped_and_piped_data_keeps_it_exact(hostile_lake: Path) -> None:
    """A table (`sql`, `score`) is for reading: every control character of a value is shown as its escape,
    so a span cannot clear the screen, set the title or reorder the line. CSV and JSON into a pipe keep the
    value exact: `click.echo` stripped what looked like a colour code from a value (`\\x1b[1m`) there."""
    import subprocess
    import sys

    query = "select session_id, agent_name from spans where session_id is not null order by 2 nulls last limit 1"
    for args in (["sql", "--lake", str(hostile_lake), query], ["score", "--lake", str(hostile_lake), "--no-write"]):
        table = CliRunner().invoke(main, args)
        assert table.exit_code == 0, table.output
        assert _acted_on(table.stdout) == [], (args[0], table.stdout)
        assert "s-\\u001b[1mBOLD\\u001b[0m\\u001b]0;pwned\\u0007" in table.stdout.replace("\n", ""), table.stdout
    for fmt in ("csv", "json"):
        piped = subprocess.run(
            [sys.executable, "-m", "tracevals", "sql", "--lake", str(hostile_lake), "--format", fmt, query],
            capture_output=True, check=True, timeout=120,
        )  # fmt: skip
        text = piped.stdout.decode()  # bytes: universal newlines would turn the value's CR into a newline
        if fmt == "json":
            assert json.loads(text)[0]["session_id"] == HOSTILE_ID
        else:
            assert list(csv.reader(io.StringIO(text, newline="")))[1][0] == HOSTILE_ID, text


def test_a_report_names_what_a_reader_would_not_see_by_its_code(hostile_lake: Path, tmp_path: Path) -> None:
    """A report (HTML, Markdown) is read by a person, in a browser or with `cat`: a value's escape sequences
    and bidi overrides are written as their code points (`U+001B`), as the UI's pages show them; both reports
    held them raw (a `cat report.md` cleared the screen, the override reversed the session id in a browser)."""
    from tracevals.model.display import HIDDEN_ON_A_PAGE

    for suffix in ("html", "md"):
        out = tmp_path / f"report.{suffix}"
        result = CliRunner().invoke(main, ["report", "--lake", str(hostile_lake), "--out", str(out)])
        assert result.exit_code == 0, result.output
        text = out.read_text(encoding="utf-8")
        assert HIDDEN_ON_A_PAGE.search(text) is None, (suffix, HIDDEN_ON_A_PAGE.findall(text))
        assert "s-U+001B[1mBOLD" in text and "U+202Eevil" in text, suffix


def test_an_error_line_shows_what_it_quotes_escaped(hostile_lake: Path, tmp_path: Path) -> None:
    """An error line quotes what it was given or found (a run id, a span's name, a query): it is shown as a
    table's values are, whatever raised it. A run id with the carriage return a shell pipeline leaves on a
    CSV line (`... --format csv | tail -1`) went back to the line's start and the rest overwrote it."""
    for run_id in (HOSTILE_ID, "run-049\r"):
        result = CliRunner().invoke(
            main, ["report", "--lake", str(hostile_lake), "--run", run_id, "--out", str(tmp_path / "r.json")]
        )
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith("Error: ") and _acted_on(result.stderr) == [], result.stderr
    assert "run-049\\u000d" in result.stderr


def test_data_on_a_terminal_is_shown_escaped_and_json_stays_json(hostile_lake: Path) -> None:
    """CSV and JSON written to a terminal (a pty here) pass through the same escaping: nothing of a value
    acts on the terminal, and the JSON still reads back to the exact value."""
    from fixtures.terminal import on_a_terminal

    query = "select session_id from spans where session_id is not null limit 1"
    for fmt in ("csv", "json"):
        code, shown, err = on_a_terminal(["sql", "--lake", str(hostile_lake), "--format", fmt, query])
        assert code == 0, err
        # the terminal writes each newline as CRLF (CSV's own CRLF becomes CR CR LF): line ends back to "\n"
        text = re.sub("\r+\n", "\n", shown.decode())
        assert _acted_on(text) == [], (fmt, text)
        if fmt == "json":
            assert json.loads(text)[0]["session_id"] == HOSTILE_ID
        else:
            assert "\\u001b]0;pwned\\u0007" in text, text
            assert "\\u000d\n" not in text and text.count("\n") == 2, text  # CSV's CRLF stays a line end


ODD_VALUES = (
    "SELECT 'nan'::DOUBLE AS n, '-inf'::DOUBLE AS minus, 9223372036854775807::HUGEINT * 10 AS huge, "
    "1.25::DECIMAL(10, 2) AS d, '\\x1b[31m'::BLOB AS b, INTERVAL '-1 year -2 months 3 days -4.25 seconds' AS i, "
    "{'é': ['x', NULL], 'f': 'inf'::DOUBLE} AS s"
)


@pytest.mark.parametrize("trip", ["arrow", "plain"])
def test_every_format_says_the_same_of_a_value_and_json_is_strict(filled_lake: Path, trip: str) -> None:
    """`--format json` printed NaN and Infinity (no JSON reader but Python's takes them: `jq`, JavaScript,
    Spark), a HUGEINT as a float that lost its last digits, an interval as three numbers; CSV printed bytes
    and intervals as Python's reprs. One rendering now (`output._plain`): a float that is no number is its
    name, a whole number stays whole, bytes are hex, an interval is DuckDB's own text, in all three formats.
    `plain`: columns DuckDB returns without Arrow (the same text)."""
    plain = "SELECT 'nan'::DOUBLE AS n, '-inf'::DOUBLE AS minus, 1.25::DECIMAL(10, 2) AS d"
    query = ODD_VALUES if trip == "arrow" else plain
    out = {}
    for fmt in ("json", "csv", "table"):
        result = CliRunner().invoke(main, ["sql", "--lake", str(filled_lake), "--format", fmt, query])
        assert result.exit_code == 0, result.output
        out[fmt] = result.output
    [row] = json.loads(out["json"], parse_constant=pytest.fail)  # strict: no NaN, no Infinity
    expected = {"n": "NaN", "minus": "-Infinity", "d": 1.25}
    if trip == "arrow":
        expected |= {
            "huge": 92233720368547758070,
            "b": "1b5b33316d",
            "i": "-1 year -2 months 3 days -00:00:04.25",
            "s": {"é": ["x", None], "f": "Infinity"},
        }
    assert row == expected
    header, line = out["csv"].splitlines()
    cells = next(csv.reader([line]))
    assert dict(zip(header.split(","), cells, strict=True)) == {
        k: json.dumps(v, ensure_ascii=False) if isinstance(v, dict) else str(v) for k, v in expected.items()
    }
    for cell in cells:  # the table shows each cell's text
        assert cell in out["table"] or cell.startswith("{")


def test_what_a_command_prints_as_json_is_strict_json() -> None:
    """A figure that is no number (a rate of no attempts) is null in every `--format json` document
    (`model.json_text`, as the JSON report has it), and no command prints JSON of its own making."""
    from tracevals.model.json_text import json_text

    doc = {"rate": float("nan"), "ci": (0.1, float("inf")), "nested": [{"x": -float("inf")}], "when": Path("p")}
    assert json.loads(json_text(doc), parse_constant=pytest.fail) == {
        "rate": None, "ci": [0.1, None], "nested": [{"x": None}], "when": "p",
    }  # fmt: skip
    root = Path(__file__).resolve().parents[1] / "tracevals"
    own = [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        if path.relative_to(root).parts[0] in ("cli", "ui", "report") and path.name != "json_text.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "echo(json.dumps(" in line.replace(" ", "") or "allow_nan" in line
    ]
    assert own == []
