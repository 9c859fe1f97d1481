"""What a report is computed from: the attempts of a lake selection, their scores, and where they came from.

`load_lake_data` reads the lake's views (trajectories, runs, the stored `scores`), narrows them to a
selection (runs, variants, a date range, a session-consistent sample), and scores with the evaluators
any attempt that has no stored score yet. It never writes to the lake: a report is a read, and the
lake may be read-only (object storage, a colleague's copy).

Dates and samples follow `tracevals.queries.selection`, the rule `tracevals score` uses: a session is
in a date range when its first span starts in it, and the sample keeps a session by a hash of the
seed and its id. Without `--sample`, a sample recorded in the stored scores (`details.sample`, as
`tracevals score --sample` writes it) is applied, so a nightly sample is reported as a sample.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from tracevals.lake.lake import Lake
from tracevals.lake.sampling import session_sampled
from tracevals.model.case import Case
from tracevals.model.prices import default_prices
from tracevals.model.progress import Told, quiet
from tracevals.model.quoting import command_line, sql_string
from tracevals.model.score import Score, details_of
from tracevals.model.trajectory import Trajectory
from tracevals.queries import open_lake
from tracevals.queries.frames_or_views import FramesOrViews
from tracevals.queries.selection import Restriction, Selection, SelectionError, select_sessions
from tracevals.queries.trajectories import trajectories_of
from tracevals.scoring.config import ScoringConfig
from tracevals.scoring.offline import score_loaded
from tracevals.scoring.runs import kept_cases

# What a report reads (`open_lake(views=...)`) besides its attempts: the runs, the stored scores, the attempts'
# identities and environments. Defining every view would bind and snapshot views no report reads (`sessions`,
# `turns` ...); the loader's (`LOADER_VIEWS`: message parts, steps, trajectories) are defined by
# `queries.frames_or_views.FramesOrViews` when some attempt is rebuilt through them (none, on derived hours).
REPORT_VIEWS = ("attempts", "runs", "scores", "environments")


def open_report_lake(lake: Lake) -> duckdb.DuckDBPyConnection:
    """A connection as `load_lake_data` reads a report from: the report's views, not snapshotted at open (a
    small lake's every view, computed for all its runs); `load_lake_data` narrows them to the selected sessions
    first, and the loader computes what it reads for them alone."""
    return open_lake(lake, views=REPORT_VIEWS, materialize=False)


__all__ = [
    "LakeData",
    "Selection",
    "SelectionError",
    "load_lake_data",
    "open_report_lake",
]


@dataclass
class LakeData:
    """The selected attempts with their scores, models and provenance (commit, lock hash, dates, sample)."""

    trajectories: list[Trajectory]
    scores: list[Score]
    provenance: dict[str, Any] = field(default_factory=dict)
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)  # the lake's over the defaults
    cases: Mapping[str, Case] = field(default_factory=dict)  # what the attempts were scored against
    environments: dict[str, dict[str, str | None]] = field(default_factory=dict)  # trace id -> `environments` row


def load_lake_data(
    lake: Lake,
    selection: Selection,
    cases: Mapping[str, Case] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    tasks_sha256: str | None = None,
    config: ScoringConfig | None = None,
    told: Told = quiet,
) -> LakeData:
    """Read the selection from the lake; raises ``LakeError`` (unreadable lake) or ``SelectionError``.
    `told`: the phase under way (reading, scoring what has no stored score).

    `config`: the scoring config `tracevals score --config` takes: attempts scored now are scored with
    its policy, and its prices (over the lake's, over the defaults) price every attempt, as in `score`.

    `cases` None: the cases each selected run kept in the lake (`tracevals run` keeps them), and no case
    for a run that kept none (said in `notes`). Given cases (a `--tasks` file whose bytes hash to
    `tasks_sha256`) that differ from what a run kept make every attempt scored again against them, not
    read from the scores stored for the cases the run had."""
    told("reading the attempts", 0, None)
    con = con or open_report_lake(lake)
    runs = selection.runs or _default_runs(con, selection)
    # the sessions of the runs' attempts (and of the date range): every view is computed per trace or per
    # session, so their rows are those the whole lake gives, for the selection's cost
    restriction = select_sessions(con, Selection(since=selection.since, until=selection.until, runs=tuple(runs)))
    # the attempts of closed hours (and their provenance) from their derived frames (`queries.derived`), the
    # others through the views
    with FramesOrViews(con, lake, restriction) as split:
        return _read_selection(con, lake, selection, runs, restriction, split, cases, tasks_sha256, config, told)


def _read_selection(
    con: duckdb.DuckDBPyConnection,
    lake: Lake,
    selection: Selection,
    runs: Sequence[str],
    restriction: Restriction,
    split: FramesOrViews,
    cases: Mapping[str, Case] | None,
    tasks_sha256: str | None,
    config: ScoringConfig | None,
    told: Told,
) -> LakeData:
    """`load_lake_data` once the sessions are selected and split between the frames and the views."""
    batch = split.batch(_where(selection, runs))
    trajectories = trajectories_of(batch)
    if not trajectories:
        raise SelectionError(
            f"no attempts match {_describe(selection, runs)}; list the runs with: "
            + command_line(
                "tracevals", "sql", "--lake", str(lake), "select run_id, variant, count(*) from runs group by all"
            )
        )
    _check_variants(trajectories, selection.variants)
    _check_runs(con, trajectories, selection.runs, restriction)
    run_ids = sorted({t.run_id for t in trajectories if t.run_id})
    ran = kept_cases(lake, run_ids)
    notes = [
        f"run {r} kept no cases (a pytest run, or one from before tracevals kept them): its attempts are "
        "scored without a case; pass --tasks FILE to score them against one"
        for r in ran.without
    ]
    reuse = True
    if cases is None:
        cases = {c.case_id: c for c in ran.cases}
        source = f"the cases the runs kept ({', '.join(sorted({v[:12] for v in ran.sha256.values()})) or 'none'})"
    else:
        source = f"--tasks (sha256 {tasks_sha256[:12]})" if tasks_sha256 else "the cases given"
        differ = sorted(r for r, sha in ran.sha256.items() if sha != tasks_sha256)
        if differ:
            reuse = False
            notes.append(f"runs {', '.join(differ)} ran other cases than --tasks: every attempt is scored again")
    con.register("_report_traces", _id_table([t.trace_id for t in trajectories]))
    told(f"reading the stored scores of {len(trajectories):,} attempts", 0, None)
    stored = current_scores(con)
    fraction, seed, sample_source = _sample(selection, stored)
    stored = stored if reuse else []
    eligible = {_session(t) for t in trajectories}
    trajectories = [t for t in trajectories if session_sampled(_session(t), fraction, seed)]
    if not trajectories:
        raise SelectionError(f"the {fraction:g} sample of {len(eligible)} sessions is empty; raise --sample")
    kept = {t.trace_id for t in trajectories}
    stored = [s for s in stored if s.trace_id in kept]
    con.register("_report_traces", _id_table(sorted(kept)))
    scored = {s.trace_id for s in stored}
    own_prices = lake.prices()
    config = (config or ScoringConfig()).with_prices_beneath(own_prices)
    unscored = [t.trace_id for t in trajectories if t.trace_id not in scored]
    if unscored:
        told(f"scoring {len(unscored):,} attempts with no stored score", 0, None)
    computed = score_loaded(batch.select(unscored), cases, config)
    told("reading the attempts' runs and environments", 0, None)
    attempts, environments = _read_attempts(split)
    provenance = _provenance(attempts, runs, selection)
    provenance.update(
        sample_fraction=fraction,
        sample_seed=seed,
        sample_source=sample_source,
        sessions_eligible=len(eligible),
        sessions_selected=len({_session(t) for t in trajectories}),
        scores_stored=len(stored),
        scores_computed=len(computed),
        cases_from=source,
        cases=len(cases),
        notes=notes,
    )
    prices = {**default_prices(), **config.default_case().prices}  # the lake's own beneath the config's
    judged = {key: config.apply(case) for key, case in cases.items()}  # what the scores judged them by
    return LakeData(trajectories, stored + computed, provenance, prices, judged, environments)


# What `_read_attempts` reads of each selected attempt for its provenance (`attempt_provenance`): its
# `attempts` row's variant, run and times, and its root's commit and lock hash (as `runs` reads them: from
# `span_facts`); then its `environments` row, the identity columns aside.
_ATTEMPT_COLUMNS = (
    "attempt_variant",
    "attempt_run_id",
    "attempt_start_time",
    "attempt_end_time",
    "commit_hash",
    "lock_hash",
)


def _read_attempts(split: FramesOrViews) -> tuple[list[tuple[Any, ...]], dict[str, dict[str, str | None]]]:
    """The selected attempts (`_report_traces`): the `_ATTEMPT_COLUMNS` of each, and the `environments` row
    of each harness attempt, by trace id; from the derived frames where their hour has them, through the
    views elsewhere (`FramesOrViews.provenance`)."""
    names, rows = split.provenance("_report_traces")
    at = {name: i for i, name in enumerate(names)}
    picked = [at[name] for name in _ATTEMPT_COLUMNS]
    first = at["trace_id"]  # the environments row's: NULL for an attempt of no harness run
    attempts: list[tuple[Any, ...]] = []
    environments: dict[str, dict[str, str | None]] = {}
    for row in rows:
        attempts.append(tuple(row[i] for i in picked))
        if row[first] is not None:
            environments[row[first]] = {
                n: None if v is None else str(v) for n, v in zip(names[first + 1 :], row[first + 1 :], strict=True)
            }
    return attempts, environments


def _session(t: Trajectory) -> str:
    return t.session_id or t.trace_id  # a trace without a session id is its own session


def _sample(selection: Selection, stored: Sequence[Score]) -> tuple[float, int, str]:
    """(fraction, seed, where it came from): the option, else the one the stored scores record."""
    if selection.fraction is not None:
        return selection.fraction, selection.seed, "--sample"
    recorded = {
        (float(d["fraction"]), int(d.get("seed", 0)))
        for s in stored
        if isinstance(d := s.details.get("sample"), dict) and "fraction" in d
    }
    if len(recorded) == 1:
        fraction, seed = recorded.pop()
        return fraction, seed, "the stored scores"
    return 1.0, 0, "none"


def _default_runs(con: duckdb.DuckDBPyConnection, selection: Selection) -> tuple[str, ...]:
    if selection.since is not None or selection.until is not None:
        return ()  # a date range covers every run in it
    variants = _in_list("variant", selection.variants)
    row = con.execute(
        f"SELECT run_id FROM runs WHERE run_id IS NOT NULL {'AND ' + variants if variants else ''} "
        "GROUP BY run_id ORDER BY max(start_time) DESC, run_id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        raise SelectionError(
            "the lake holds no harness runs (no root span with tracevals.run.id); pass --since/--until"
        )
    return (str(row[0]),)


def _where(selection: Selection, runs: Sequence[str]) -> str:
    parts = ["task_id IS NOT NULL", "variant IS NOT NULL"]
    # Dates are not repeated here: `select_sessions` already kept whole sessions by their start.
    parts += [p for p in (_in_list("run_id", runs), _in_list("variant", selection.variants)) if p]
    return " AND ".join(parts)


def _in_list(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join(sql_string(v) for v in values)})" if values else ""


def _describe(selection: Selection, runs: Sequence[str]) -> str:
    parts = [f"run {', '.join(runs)}" if runs else "all runs"]
    if selection.variants:
        parts.append(f"variants {', '.join(selection.variants)}")
    if selection.since or selection.until:
        since = selection.since.isoformat() if selection.since else "the start"
        until = selection.until.isoformat() if selection.until else "now"
        parts.append(f"from {since} until {until}")
    return ", ".join(parts)


def _check_runs(
    con: duckdb.DuckDBPyConnection, trajectories: Sequence[Trajectory], wanted: Sequence[str], narrowed: Restriction
) -> None:
    """Every run asked for is in the selection: a misspelt --run is an error, never silently dropped."""
    found = {t.run_id for t in trajectories}
    absent = [r for r in wanted if r not in found]
    if absent:
        narrowed.undo()  # the runs of the whole lake
        have = [str(r[0]) for r in con.execute("SELECT DISTINCT run_id FROM runs WHERE run_id IS NOT NULL ORDER BY 1")
                .fetchall()]  # fmt: skip
        listed = ", ".join(have[:8]) + (f" +{len(have) - 8} more" if len(have) > 8 else "")
        raise SelectionError(
            f"run {', '.join(absent)} has no attempts in the selection (runs in the lake: {listed or 'none'})"
        )


def _check_variants(trajectories: Sequence[Trajectory], wanted: Sequence[str]) -> None:
    found = {t.variant for t in trajectories}
    absent = [v for v in wanted if v not in found]
    if absent:
        have = ", ".join(sorted(v for v in found if v)) or "none"
        raise SelectionError(f"variant {', '.join(absent)} not in the selection (variants there: {have})")


def current_scores(con: duckdb.DuckDBPyConnection) -> list[Score]:
    """The stored scores of the traces in `_report_traces` that a report may use: a trace's, unless one of them is
    of an older version of a built-in evaluator (another rule's verdict and details): such a trace is scored
    again, whole. Which are stale is decided on the rows before a score is built (its details parsed): after an
    upgrade that changed an evaluator, every stored score of the lake may be (the 10^6-span lake's report spent 16 s
    on 325,765 stored scores it then dropped; 2 s now)."""
    from tracevals.evaluators.registry import default_evaluators

    # in `Score`'s order, the defaults of absent values given by the query (a score is built from its row)
    rows = con.execute(
        "SELECT s.evaluator, coalesce(s.evaluator_version, 0), coalesce(s.passed, false), coalesce(s.score, 0.0), "
        "coalesce(s.reason, ''), s.details, s.trace_id, s.session_id, s.run_id, s.task_id, s.attempt, s.variant "
        "FROM scores AS s JOIN _report_traces AS t ON t.trace_id = s.trace_id ORDER BY s.trace_id, s.evaluator"
    ).fetchall()
    versions = {e.name: e.version for e in default_evaluators()}
    stale = {r[6] for r in rows if versions.get(r[0], r[1]) != r[1]}
    kept = [r for r in rows if r[6] not in stale] if stale else rows
    return [
        Score(r[0], r[1], r[2], r[3], r[4], details, r[6], r[7], r[8], r[9], r[10], r[11])
        for r, details in zip(kept, details_of([r[5] for r in kept]), strict=True)
    ]


def _id_table(ids: Sequence[str]) -> Any:
    """The ids as an Arrow table for DuckDB, built by Polars: its string type as Polars gives it (DuckDB
    reads any), since a cast to another (`lake.arrow.arrow_array`'s) imports pyarrow.compute, ~40 ms."""
    import polars as pl

    return pl.DataFrame({"trace_id": list(ids)}, schema={"trace_id": pl.Utf8}).to_arrow()


def _provenance(attempts: Sequence[tuple[Any, ...]], runs: Sequence[str], selection: Selection) -> dict[str, Any]:
    """Where the selected attempts came from, per variant: their runs, commits, lock hashes and dates.
    `attempts`: rows of `_ATTEMPT_COLUMNS` (`_read_attempts`)."""
    by_variant: dict[Any, list[tuple[Any, ...]]] = {}
    for row in attempts:
        by_variant.setdefault(row[0], []).append(row)
    variants: dict[str, Any] = {}
    for variant in sorted(by_variant, key=lambda v: (v is None, v)):  # as SQL orders them: NULL last
        rows = by_variant[variant]
        starts = [r[2] for r in rows if r[2] is not None]
        ends = [r[3] for r in rows if r[3] is not None]
        variants[variant] = {
            "runs": sorted({r[1] for r in rows if r[1]}),
            "commits": sorted({r[4] for r in rows if r[4]}) or ["unknown"],
            "lock_hashes": sorted({r[5] for r in rows if r[5]}) or ["unknown"],
            "date_from": _iso(min(starts, default=None)),
            "date_to": _iso(max(ends, default=None)),
        }

    def union(key: str) -> list[str]:
        return sorted({x for v in variants.values() for x in v[key]})

    return {
        "runs": union("runs"),
        "selected_by": "latest run" if runs and not selection.runs else _describe(selection, runs),
        "commits": union("commits"),
        "lock_hashes": union("lock_hashes"),
        "date_from": min((v["date_from"] for v in variants.values() if v["date_from"]), default=None),
        "date_to": max((v["date_to"] for v in variants.values() if v["date_to"]), default=None),
        "variants": variants,
    }


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).isoformat(timespec="seconds")
    return str(value)
