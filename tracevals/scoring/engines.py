"""Where a scoring job runs: the one table of engines, chosen by name.

Every engine takes a `ScoringJob` and returns the `ScoringRun` the local engine would (the same rows;
`tests/test_engine_seam.py`, `test_engine_ray.py`, `test_engine_spark.py` hold them to it). An engine's
module is imported only when it is chosen, so the distributed ones cost nothing unless used, and one whose
package is missing says how to install it in one line (`EngineMissing`).

To add an engine: a module with `score_job(job: ScoringJob) -> ScoringRun` and one row here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tracevals.model.errors import UserError

if TYPE_CHECKING:  # the table is read by `--help`: it imports nothing heavy
    from tracevals.scoring.job import ScoringJob
    from tracevals.scoring.results import ScoringRun

#: name -> "module:function". `local`: this machine's processes; `ray`: Ray Data (a local Ray, or the
#: cluster at RAY_ADDRESS); `spark`: PySpark (`applyInArrow`). docs/scale.md says what each costs.
ENGINES: dict[str, str] = {
    "local": "tracevals.scoring.offline:score_job",
    "ray": "tracevals.scoring.engine_ray:score_job",
    "spark": "tracevals.scoring.engine_spark:score_job",
}
DEFAULT_ENGINE = "local"  # the one that runs on this process's machine (and alone follows a lake live)


class UnknownEngine(UserError, LookupError):
    """An engine name not in `ENGINES`; the message lists the valid ones."""


def score(job: ScoringJob, engine: str = DEFAULT_ENGINE) -> ScoringRun:
    """Run `job` on the engine called `engine`."""
    target = ENGINES.get(engine)
    if target is None:
        raise UnknownEngine(f"unknown engine {engine!r}: choose from {', '.join(ENGINES)}")
    module_name, function = target.split(":")
    run: ScoringRun = getattr(importlib.import_module(module_name), function)(job)
    return run
