"""The builders every command shares: from what a user gave (files, names, a selection) to a `ScoringJob`.

`score`, `report`, `gate`, `run` and `score --follow` read cases, a scoring config and evaluator names the
same way, so the same attempt is scored against the same case, prices and options whichever command
asks. Every problem is a `UserError` of one line (a bad task file, config, evaluator name, run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracevals.lake.lake import Lake
from tracevals.model.case import Case
from tracevals.queries.selection import Selection
from tracevals.scoring.config import ScoringConfig, load_config
from tracevals.scoring.job import ScoringJob


def evaluator_names(text: str | None, config: ScoringConfig) -> tuple[str, ...] | None:
    """`--evaluators a,b` as names; none given: the config's (None: the defaults)."""
    names = tuple(n.strip() for n in text.split(",") if n.strip()) if text else ()
    return names or config.evaluators


def load_tasks(lake: Lake, tasks_file: str | None, runs: Sequence[str] | None = None) -> tuple[Case, ...] | None:
    """The cases of `--tasks FILE`; without it, those the lake's harness runs kept (`runs`: of these runs
    only), or None (production traffic: no case)."""
    from tracevals.model.tasks import load_cases
    from tracevals.scoring.runs import kept_cases

    if tasks_file:
        return tuple(load_cases(tasks_file))
    kept = kept_cases(lake, list(runs) if runs else None).cases
    return tuple(kept) or None


def scoring_config(config_file: str | None) -> ScoringConfig:
    """`--config FILE` (YAML or JSON), or the defaults."""
    return load_config(config_file) if config_file else ScoringConfig()


def build_job(
    lake: Lake,
    *,
    tasks_file: str | None = None,
    config_file: str | None = None,
    evaluators: str | None = None,
    selection: Selection | None = None,
    **fields: Any,
) -> ScoringJob:
    """A `ScoringJob` from a command's options: cases (`load_tasks`), config (`scoring_config`), evaluators
    (`evaluator_names`, resolved now so that an unknown name fails before any work), and the job's other
    fields (`write`, `keep_scores`, `sinks`, `workers` ...)."""
    from tracevals.evaluators.registry import instances

    config = scoring_config(config_file)
    chosen = tuple(instances(evaluator_names(evaluators, config)))
    runs = selection.runs if selection is not None else None
    tasks = load_tasks(lake, tasks_file, runs)
    return ScoringJob(lake, selection=selection, tasks=tasks, config=config, evaluators=chosen, **fields)
