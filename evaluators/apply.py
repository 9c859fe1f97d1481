"""Applying evaluators: to trajectories one at a time (`evaluate_all`, the reference), or to a whole
batch at once (`score_batch`, the same verdicts set-at-a-time), and the per-attempt verdict.

`score_batch(scope, evaluators) -> score rows` (a Polars frame) takes, per evaluator, the cheapest exact
strategy it offers:

1. `screen(scope)`: set-at-a-time; clean traces are settled by the screen, the rest by `evaluate`;
2. `verdict_key(scope)`: `evaluate` once per distinct key, the verdict copied to every trace with it
   (with a screen too, for the traces the screen leaves);
3. otherwise (plugins): `evaluate` on every trace.

`evaluate` is the reference everywhere, so a batch scores exactly as `evaluate_all` would. Pure: no
I/O, no state kept between calls; the same function runs per partition under a distributed engine.

Example::

    cases = {c.case_id: c for c in load_cases("tasks.jsonl")}
    scores = evaluate_all(trajectories, cases)
    ok = attempt_passed([s for s in scores if s.trace_id == trajectory.trace_id])
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

import polars as pl

from tracevals.evaluators.evaluator import Evaluator, make_score
from tracevals.evaluators.registry import default_evaluators
from tracevals.evaluators.scope import NO_CASE, Scope
from tracevals.model.case import Case
from tracevals.model.findings import EVALUATOR_ERROR
from tracevals.model.gc_pause import gc_paused
from tracevals.model.score import SCORE_FRAME_SCHEMA, Score, score_details, score_rows_frame
from tracevals.model.trajectory import Trajectory

logger = logging.getLogger(__name__)


def evaluate_all(
    trajectories: Iterable[Trajectory],
    cases_by_id: Mapping[str, Case],
    evaluators: Sequence[Evaluator] | None = None,
) -> list[Score]:
    """Run each evaluator (default: the built-ins) on each trajectory, with the case named by its
    `task_id` (None when it has none or the id is unknown); not-applicable results are left out.

    An evaluator that raises does not stop the run: it yields a failed score whose reason names the error.
    """
    chosen = default_evaluators() if evaluators is None else list(evaluators)
    scores: list[Score] = []
    for trajectory in trajectories:
        case = cases_by_id.get(trajectory.task_id) if trajectory.task_id is not None else None
        for evaluator in chosen:
            score = evaluate_safely(evaluator, trajectory, case)
            if score is not None:
                scores.append(score)
    return scores


def attempt_passed(scores: Iterable[Score]) -> bool:
    """Whether an attempt passed: every applicable score of it passed (no scores: nothing failed)."""
    return all(score.passed for score in scores)


def evaluate_safely(evaluator: Evaluator, trajectory: Trajectory, case: Case | None) -> Score | None:
    try:
        return evaluator.evaluate(trajectory, case)
    except Exception as exc:  # a bug in one evaluator must not lose the other scores of the run
        logger.warning("tracevals: evaluator %s raised on trace %s: %r", evaluator.name, trajectory.trace_id, exc)
        reason = f"evaluator raised {type(exc).__name__}: {exc}"
        return make_score(
            evaluator, trajectory, passed=False, score=0.0, reason=reason, details={"error": reason},
            findings=[EVALUATOR_ERROR(reason, evidence={"error": type(exc).__name__})],
        )  # fmt: skip


# ---------------------------------------------------------------- a whole batch at once

_IDS = ["trace_id", "session_id", "run_id", "task_id", "attempt", "variant"]


def score_batch(scope: Scope, evaluators: Sequence[Evaluator]) -> pl.DataFrame:
    """Score rows for every (trace, applicable evaluator) of `scope.batch`, in evaluator order."""
    traces = scope.batch.traces
    plans: list[tuple[Evaluator, str, pl.DataFrame]] = []
    needed: set[str] = set()
    for evaluator in evaluators:
        screen = getattr(evaluator, "screen", None)
        verdict_key = getattr(evaluator, "verdict_key", None)
        if screen is not None:
            result = screen(scope)
            plans.append((evaluator, "screen", result.filter(pl.col("status") == "clean")))
            check = result.filter(pl.col("status") == "check").select("trace_id")
            if verdict_key is not None and check.height:
                keyed = _representatives(verdict_key(scope).join(check, on="trace_id"))
                plans.append((evaluator, "key", keyed))
                needed.update(keyed.get_column("rep").unique().to_list())
            elif check.height:
                plans.append((evaluator, "all", check))
                needed.update(check.get_column("trace_id").to_list())
        elif verdict_key is not None:
            keyed = _representatives(verdict_key(scope))
            plans.append((evaluator, "key", keyed))
            needed.update(keyed.get_column("rep").unique().to_list())
        else:
            plans.append((evaluator, "all", traces.select("trace_id")))
            needed.update(traces.get_column("trace_id").to_list())
    wanted = traces.filter(pl.col("trace_id").is_in(pl.Series(sorted(needed), dtype=pl.Utf8).implode()))
    cases = dict(wanted.select("trace_id", "case_key").iter_rows())  # only the traces `evaluate` will see
    evaluated = _evaluated(plans, sorted(needed), cases, scope)
    ids = traces.select(_IDS)
    frames = [_plan_rows(e, kind, plan, done, ids) for (e, kind, plan), done in zip(plans, evaluated, strict=True)]
    frames = [f for f in frames if f.height]
    if not frames:
        return pl.DataFrame(schema=SCORE_FRAME_SCHEMA)
    return pl.concat(frames, how="vertical")


# Trajectories built at once for `evaluate`. The Python objects of a batch's flagged traces are what its memory
# follows (a chunk of 15,000 sessions whose traces all had a finding held ~400 MiB of them), so they are built,
# evaluated by every plan that needs them, turned into rows and dropped this many at a time (their `Score`s were
# kept to the end of the batch: 37 MiB of them in a chunk of the 10^7-span bench lake).
EVALUATE_SLICE = 2_000

# The rows `_evaluated` gives a "key" plan: a representative's verdict, as every trace with its key gets it.
_VERDICT_SCHEMA = {"rep": pl.Utf8, "passed": pl.Boolean, "score": pl.Float64, "reason": pl.Utf8, "details": pl.Utf8}


def _evaluated(
    plans: list[tuple[Evaluator, str, pl.DataFrame]], needed: list[str], cases: dict[str, str], scope: Scope
) -> list[pl.DataFrame]:
    """Each plan's `evaluate` results as rows, in the plan's order: a "key" plan's verdict of each of its
    representatives (`_VERDICT_SCHEMA`), an "all" plan's score rows of its traces, nothing for a "screen" plan;
    a result that does not apply gives no row. The trajectories of `needed` are built, evaluated and turned
    into rows `EVALUATE_SLICE` at a time."""
    positions: list[dict[str, int]] = []
    for _, kind, plan in plans:
        if kind == "key":
            order = plan.get_column("rep").unique(maintain_order=True).to_list()
        else:
            order = plan.get_column("trace_id").to_list() if kind == "all" else []
        positions.append({trace_id: i for i, trace_id in enumerate(order)})
    parts: list[list[pl.DataFrame]] = [[] for _ in plans]
    for first in range(0, len(needed), EVALUATE_SLICE):
        found: list[list[tuple[int, str, Score]]] = [[] for _ in plans]
        # the cyclic collector paused: a slice's objects are freed as they are dropped, and its collections of
        # the older generations, each walking the whole heap, were about a tenth of the nightly job's CPU (the 10^6-span
        # bench lake on one worker: 0.91 of the CPU time without them, scores identical)
        with gc_paused():
            for trajectory in scope.batch.select(needed[first : first + EVALUATE_SLICE]).trajectories():
                trace_id = trajectory.trace_id
                case = scope.case(cases[trace_id] or NO_CASE)
                for (evaluator, _, _), position, results in zip(plans, positions, found, strict=True):
                    if trace_id in position:
                        score = evaluate_safely(evaluator, trajectory, case)
                        if score is not None:
                            results.append((position[trace_id], trace_id, score))
            for (_, kind, _), results, into in zip(plans, found, parts, strict=True):
                if results:
                    into.append(_slice_rows(kind, results))
    out = []
    for (_, kind, _), frames in zip(plans, parts, strict=True):
        schema = _VERDICT_SCHEMA if kind == "key" else SCORE_FRAME_SCHEMA
        rows = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema={**schema, "_pos": pl.Int64})
        out.append(rows.sort("_pos").drop("_pos"))
    return out


def _slice_rows(kind: str, results: list[tuple[int, str, Score]]) -> pl.DataFrame:
    """A slice's (position in the plan, trace id evaluated, score) as rows with their `_pos`: the verdicts of
    representatives ("key": the representative is the trace evaluated) or score rows."""
    at = pl.Series("_pos", [p for p, _, _ in results], dtype=pl.Int64)
    if kind == "key":
        rows = pl.DataFrame(
            [(rep, s.passed, s.score, s.reason, score_details(s)) for _, rep, s in results],
            schema=_VERDICT_SCHEMA,
            orient="row",
        )
    else:
        rows = score_rows_frame([s for _, _, s in results])
    return rows.with_columns(at)


def _plan_rows(
    evaluator: Evaluator, kind: str, plan: pl.DataFrame, evaluated: pl.DataFrame, ids: pl.DataFrame
) -> pl.DataFrame:
    """One plan's score rows: its screen's clean traces, the verdict of each key for every trace with that key,
    or each trace's own (`evaluated`: `_evaluated`'s rows of the plan)."""
    if kind == "screen":
        clean = plan.select(
            "trace_id",
            pl.lit(evaluator.name).alias("evaluator"),
            pl.lit(evaluator.version, dtype=pl.Int32).alias("evaluator_version"),
            pl.lit(True).alias("passed"),
            pl.lit(1.0).alias("score"),
            "reason",
            "details",
        )
        clean = ids.join(clean, on="trace_id", how="inner")
        return clean.select(list(SCORE_FRAME_SCHEMA)).cast(SCORE_FRAME_SCHEMA)
    if kind == "key":
        if not evaluated.height:
            return pl.DataFrame(schema=SCORE_FRAME_SCHEMA)
        rows = (
            ids.join(plan.select("trace_id", "rep"), on="trace_id")
            .join(evaluated, on="rep")
            .with_columns(
                pl.lit(evaluator.name).alias("evaluator"),
                pl.lit(evaluator.version, dtype=pl.Int32).alias("evaluator_version"),
            )
        )
        return rows.select(list(SCORE_FRAME_SCHEMA)).cast(SCORE_FRAME_SCHEMA)
    return evaluated


def _representatives(keys: pl.DataFrame) -> pl.DataFrame:
    """(trace_id, key, rep): for each applicable trace, the first trace with its key."""
    keys = keys.filter(pl.col("key").is_not_null())
    firsts = keys.group_by("key", maintain_order=True).agg(pl.col("trace_id").first().alias("rep"))
    return keys.join(firsts, on="key")
