"""A lake under any folder name reads as it would under a plain one. DuckDB's file globs, Polars' and Python's
`glob` read `*`, `?` and `[` in every part of a path, and SQL text ends at a quote: a lake under `runs [old]/`
matched nothing (every command ended in DuckDB's traceback) or, beside a folder `runs o/`, read that folder's
lake instead; a quote was refused. Every command here runs through the CLI, as a user types it."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures.otlp_lakes import DIALECTS, fixture_doc, moved

from tracevals.cli import main
from tracevals.model.quoting import command_line, sql_string
from tracevals.scoring.production_data import DAYS_QUERY


def _cli(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result


def _json(*args: str) -> Any:
    return json.loads(_cli(*args, "--format", "json").stdout)


def _ingest(folder: Path, dialects: tuple[str, ...] = DIALECTS) -> Path:
    """Every dialect's conversation over three past hours, as OTLP/JSON files ingested into `folder/lake`."""
    files = folder / "otlp"
    files.mkdir(parents=True)
    n = 0
    for dialect in dialects:
        for hours in range(3):
            n += 1
            path = files / f"{dialect}-{hours}.json"
            path.write_text(json.dumps(moved(fixture_doc(dialect), n, hours)))
    lake = folder / "lake"
    _cli("ingest", "--lake", str(lake), *sorted(map(str, files.iterdir())))
    return lake


def _scores(lake: Path, *extra: str) -> list[tuple[Any, ...]]:
    rows = _json("score", "--lake", str(lake), *extra)
    return sorted(tuple(sorted((k, json.dumps(v)) for k, v in r.items() if k != "scored_at")) for r in rows)


def _what_every_command_reads(lake: Path, out: Path) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    query = "select count(*) as spans, count(distinct trace_id) as traces from spans"
    seen["sql"] = _json("sql", "--lake", str(lake), query)
    seen["sql since"] = _json("sql", "--lake", str(lake), "--since", "2000-01-01", query)
    sessions = "select session_id, tool_call_count, terminal_state from sessions order by 1"
    seen["sessions"] = _json("sql", "--lake", str(lake), sessions)
    seen["score"] = _scores(lake)  # written: the stored scores are read back below
    seen["stored"] = _json("sql", "--lake", str(lake), "select count(*) as n from scores")
    _cli("compact", "--lake", str(lake), "--min-age", "0", "--retention", "0")
    seen["compacted"] = [f.parent.name for f in sorted((lake / "spans").rglob("*.parquet"))]
    seen["score after compact"] = _scores(lake, "--no-write")  # through the derived frames
    seen["two workers"] = _scores(lake, "--no-write", "--workers", "2")
    exported = _json("export", "trajectories", "--lake", str(lake), "--out", str(out / "export"))
    seen["export"] = len(exported)
    _cli("report", "--lake", str(lake), "--since", "2000-01-01", "--out", str(out / "report.json"))
    report = json.loads((out / "report.json").read_text())
    report["meta"]["data_quality"].pop("horizon")  # when the report was made
    seen["report"] = json.dumps(report, sort_keys=True).replace(str(lake), "LAKE")
    return seen


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("plain")
    return _what_every_command_reads(_ingest(folder), folder)


@pytest.mark.parametrize(
    ("name", "decoy"),
    [
        ("o'brien [old] *?", None),  # every character a glob or SQL text reads
        ("runs [old]", "runs o"),  # the glob `runs [old]` matches the folder `runs o`: it held another lake
    ],
)
def test_a_lake_under_any_folder_name_reads_as_under_a_plain_one(
    name: str, decoy: str | None, plain: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACEVALS_COMPACT_RETENTION", "0")
    if decoy is not None:
        _ingest(tmp_path / decoy, DIALECTS[:1])
    folder = tmp_path / name
    seen = _what_every_command_reads(_ingest(folder), folder)
    assert seen.keys() == plain.keys()
    for what in plain:
        assert seen[what] == plain[what], what


def test_a_message_shows_a_path_as_it_is(tmp_path: Path) -> None:
    """What a command says on stderr is never read as rich's markup: `score` said its scores were "written
    to .../runs /lake/scores/...", the "[old]" of the folder gone."""
    lake = _ingest(tmp_path / "runs [old]", DIALECTS[:1])
    said = _cli("score", "--lake", str(lake)).stderr
    assert f"written to {lake}/scores/part-" in said


def test_a_command_line_reads_back_as_its_words() -> None:
    """What a message suggests is pasted into a shell: each word reads back as itself, and a plain one stays
    as a person would write it."""
    words = ["tracevals", "sql", "--lake", 'o\'brien [old] *? $HOME `x` \\ "q" !', "select * from runs", "", "a\nb"]
    assert shlex.split(command_line(*words)) == words
    assert command_line("tracevals", "sql", "--lake", "lake", "select 1") == 'tracevals sql --lake lake "select 1"'
    assert sql_string("it's") == "'it''s'"


def test_a_suggested_command_runs_as_printed(tmp_path: Path) -> None:
    """An error that suggests a command (here: no session in the report's default week, and the query that
    lists the days there are) names a lake whose path a shell would split, glob or expand: pasted into bash,
    it runs. Before, the path went in bare (`--lake /…/o'brien [old] *?/lake`: an unterminated quote)."""
    lake = _ingest(tmp_path / "o'brien [old] *? $HOME `x`", DIALECTS[:1])
    result = CliRunner().invoke(main, ["report", "--lake", str(lake), "--out", str(tmp_path / "r.json")])
    assert result.exit_code == 1, result.output
    hint = result.stderr.split("(see the days with: ", 1)[1].rsplit(")", 1)[0]
    assert hint.startswith("tracevals sql --lake "), hint
    here = f"{shlex.quote(sys.executable)} -m tracevals"
    pasted = subprocess.run(
        ["bash", "-c", hint.replace("tracevals", here, 1) + " --format json"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert pasted.returncode == 0, pasted.stderr
    assert json.loads(pasted.stdout) == _json("sql", "--lake", str(lake), DAYS_QUERY) != []


def test_a_progress_bar_shows_a_name_as_it_is() -> None:
    """A progress bar's task is named by the user's text (a run's variant): never read as rich's markup, which
    made "gpt-4o [new]" show as "gpt-4o "."""
    import io

    from rich.console import Console

    from tracevals.cli.shared.output import progress_bar

    progress = progress_bar(Console(file=io.StringIO()))
    progress.add_task("gpt-4o [new] [bold]x[/bold]", total=1)
    assert progress.columns[0].render(progress.tasks[0]).plain == "gpt-4o [new] [bold]x[/bold]"


def test_the_sandbox_allows_the_escaped_root_only_when_no_folder_has_that_name(tmp_path: Path) -> None:
    """`sql`'s sandbox allows the lake's root and, for a root holding a glob's characters, the pattern of it the
    lake's files are named through. DuckDB reads a pattern that matches nothing as a literal path: a folder
    literally named like that pattern would become readable, so then only the root is allowed."""
    from tracevals.lake.lake import Lake
    from tracevals.lake.paths import pattern
    from tracevals.queries.connection import _allowed

    lake = _ingest(tmp_path / "runs [old]", DIALECTS[:1])
    root = Lake.open(lake).sandbox_root()
    assert _allowed(Lake.open(lake)) == [root, pattern(root)]
    Path(pattern(root)).mkdir(parents=True)  # `runs [[]old]/lake/`, a sibling of the lake's folder
    assert _allowed(Lake.open(lake)) == [root]
    assert _allowed(Lake.open(_ingest(tmp_path / "plain", DIALECTS[:1]))) == [
        Lake.open(tmp_path / "plain" / "lake").sandbox_root()
    ]
