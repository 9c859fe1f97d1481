"""`trajectory_match`: the calls against the expected steps (evaluator.py), with optimal matching (matching.py)."""

from tracevals.evaluators.trajectory_match.evaluator import MATCH_MODES, TrajectoryMatch

__all__ = ["MATCH_MODES", "TrajectoryMatch"]
