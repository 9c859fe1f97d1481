"""Scoring: the one path from the lake to stored (and emitted) scores, used by every command.

- `score_lake` (offline, a time range, a session-consistent sample, some runs): `tracevals score`,
  `run`, `demo`; `score_connection` is the same over an open connection.
- `Follower` (live: a session scored once it is finished, again when late spans come): `score --follow`.
- `score_run` / `completed_attempts` (a harness run), `load_lake_data` (what a report is computed from:
  stored scores, and the batch path for the attempts that have none).
- `ScoringConfig` / `load_config` (the policy production traffic is scored against).
- `score_sessions` (whole sessions' span rows in, score rows out, no I/O): the seam a distributed engine
  scores a partition through (`scoring.engine`: the partitioning rule; `engine_ray`, `engine_spark`).

Each loads frames through `tracevals.queries`, attaches cases (`scoring.cases`), scores with
`tracevals.evaluators.score_batch`, writes `scores/` (`scoring.store`) and hands rows to sinks such as
`EvaluationEmitter` (`scoring.emit`).
"""

from tracevals.scoring.config import ConfigError, ScoringConfig, config_from_dict, load_config
from tracevals.scoring.engine import score_sessions, session_bucket, session_keys
from tracevals.scoring.offline import ScoringRun, score_connection, score_lake, score_trajectories

__all__ = [
    "ConfigError",
    "ScoringConfig",
    "ScoringRun",
    "config_from_dict",
    "load_config",
    "score_connection",
    "score_lake",
    "score_sessions",
    "score_trajectories",
    "session_bucket",
    "session_keys",
]
