"""Scoring: the one path from the lake to stored (and emitted) scores, used by every command.

- `ScoringJob` (`scoring.job`): one run's lake, selection, cases, config, evaluators and what to do with
  the rows, built by the builders every command shares (`scoring.options.build_job`).
- `score(job, engine)` (`scoring.engines`): the one table of engines, `local` (`scoring.offline`, a big
  lake a group of sessions at a time: `scoring.groups`), `ray`, `spark`; `score_lake` is the local engine
  for a lake named by path or URL, `score_connection` the same over an open connection.
- `Follower` (`scoring.live`: a session scored once it is finished, again when late spans come): `score
  --follow`.
- `score_run` / `completed_attempts` (a harness run), `load_lake_data` (what a report is computed from:
  stored scores, and the batch path for the attempts that have none).
- `ScoringConfig` / `load_config` (the policy production traffic is scored against).
- `score_sessions` (whole sessions' span rows in, score rows out, no I/O): the seam a distributed engine
  scores a partition through (`scoring.engine`: the partitioning rule; `engine_ray`, `engine_spark`).

Each loads frames through `tracevals.queries`, attaches cases (`scoring.cases`), scores with
`tracevals.evaluators.score_batch`, writes `scores/` (`scoring.store`) and hands rows to sinks such as
`EvaluationEmitter` (`scoring.emit`). Every name below is imported on first use (PEP 562): the CLI's
engine list costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracevals.model.lazy import lazy_names

_HOME = {
    "ConfigError": "tracevals.scoring.config",
    "ScoringConfig": "tracevals.scoring.config",
    "config_from_dict": "tracevals.scoring.config",
    "load_config": "tracevals.scoring.config",
    "ScoringJob": "tracevals.scoring.job",
    "ScoringRun": "tracevals.scoring.results",
    "score": "tracevals.scoring.engines",
    "score_connection": "tracevals.scoring.offline",
    "score_lake": "tracevals.scoring.offline",
    "score_trajectories": "tracevals.scoring.offline",
    "score_sessions": "tracevals.scoring.engine",
    "session_bucket": "tracevals.scoring.engine",
    "session_keys": "tracevals.scoring.engine",
}
__all__ = [
    "ConfigError",
    "ScoringConfig",
    "ScoringJob",
    "ScoringRun",
    "config_from_dict",
    "load_config",
    "score",
    "score_connection",
    "score_lake",
    "score_sessions",
    "score_trajectories",
    "session_bucket",
    "session_keys",
]


__getattr__, __dir__ = lazy_names(globals(), __all__, _HOME)


if TYPE_CHECKING:
    from tracevals.scoring.config import ConfigError, ScoringConfig, config_from_dict, load_config
    from tracevals.scoring.engine import score_sessions, session_bucket, session_keys
    from tracevals.scoring.engines import score
    from tracevals.scoring.job import ScoringJob
    from tracevals.scoring.offline import score_connection, score_lake, score_trajectories
    from tracevals.scoring.results import ScoringRun
